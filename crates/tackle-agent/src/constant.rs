//! Values built from constants written in this crate, which cannot fail at run time: the
//! tests build each one (every test that runs the code reaches its `LazyLock`), so a typo
//! fails the suite, never a user's call.

use regex::Regex;

/// A regular expression written in this crate.
#[allow(clippy::expect_used)]
pub(crate) fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a constant pattern compiles")
}

/// A `data-encoding` specification written in this crate.
#[allow(clippy::expect_used)]
pub(crate) fn encoding(spec: &data_encoding::Specification) -> data_encoding::Encoding {
    spec.encoding().expect("a constant specification is valid")
}
