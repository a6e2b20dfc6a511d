//! Secret redaction.
use std::borrow::Cow;

#[derive(Debug, Clone)]
pub struct SecretRedactor {
    extra_exact: Vec<String>,
}

impl SecretRedactor {
    pub fn new(extra_exact: Vec<String>) -> Self {
        Self { extra_exact }
    }

    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let _ = &self.extra_exact;
        if text.is_empty() {
            Cow::Borrowed(text)
        } else {
            Cow::Owned(String::from("[redacted secret]"))
        }
    }
}
