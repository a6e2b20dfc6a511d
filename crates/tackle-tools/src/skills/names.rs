//! When two skill names are one name (docs/decisions/0027-skill-names-unique.md): a name is
//! compared by its key, so that spellings a person or a model would read as the same skill
//! (`Deploy`, `ｄｅｐｌｏｙ`, `dеploy` with a Cyrillic `е`, `de ploy`, `./deploy`, `deploy\u{200b}`)
//! cannot stand beside it or take it over.

use unicode_normalization::UnicodeNormalization;

/// Characters that separate words or path parts; they do not make a name different.
fn separator(c: char) -> bool {
    c.is_whitespace() || matches!(c, '-' | '_' | '.' | '/' | '\\' | ':' | '~')
}

/// The key two names collide on: NFKC, case-folded, the UTS #39 confusable skeleton (which
/// also drops default-ignorable characters such as zero-width spaces), case-folded again, and
/// without separators.
pub fn name_key(name: &str) -> String {
    let folded: String = name
        .nfkc()
        .flat_map(char::to_lowercase)
        .collect::<String>()
        .nfkc()
        .collect();
    unicode_security::skeleton(&folded)
        .flat_map(char::to_lowercase)
        .filter(|c| !separator(*c))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::name_key;

    #[test]
    fn every_spelling_of_one_name_has_one_key() {
        let key = name_key("deploy");
        for spelling in [
            "Deploy",
            "DEPLOY",
            "ｄｅｐｌｏｙ",
            "d\u{0435}ploy",
            "de ploy",
            " deploy\t",
            "de-ploy",
            "de_ploy",
            "./deploy",
            "../deploy",
            "deploy/",
            "de\u{200b}ploy",
            "de\u{00ad}ploy",
            "dep1oy",
        ] {
            assert_eq!(name_key(spelling), key, "{spelling:?}");
        }
    }

    #[test]
    fn different_names_keep_different_keys() {
        assert_ne!(name_key("deploy"), name_key("deploy2"));
        assert_ne!(name_key("pdf-forms"), name_key("pdf-form"));
        assert_ne!(name_key("деплой"), name_key("deploy"));
        assert!(name_key("---").is_empty());
    }
}
