//! The one rule for what a child process inherits from Tackle's environment: commands run for
//! tools and operator-configured MCP servers alike. Pure (the caller passes the variables), so
//! every spawn site applies the same list and the same refusals.

use std::ffi::OsString;

/// Inherited by every child; everything else must be named (the operator's `passthrough`, or
/// an MCP server's own `env`). API keys and tokens in Tackle's environment stay there.
pub const INHERITED: &[&str] = &["PATH", "HOME", "LANG", "TERM", "USER", "TZ"];

/// Variables bash (or sh) reads at start-up to run code or change how every line parses; a
/// child never inherits them, whatever a passthrough entry says.
pub fn is_shell_startup_variable(name: &str) -> bool {
    matches!(
        name,
        "BASH_ENV"
            | "ENV"
            | "SHELLOPTS"
            | "BASHOPTS"
            | "POSIXLY_CORRECT"
            | "PS4"
            | "IFS"
            | "CDPATH"
            | "GLOBIGNORE"
            | "BASH_XTRACEFD"
            | "PROMPT_COMMAND"
    ) || name.starts_with("BASH_FUNC_")
}

/// The variables of `vars` a child inherits: [`INHERITED`], `LC_*`, and the `passthrough`
/// entries (`NAME`, or `PREFIX*`), minus shell start-up variables and the dynamic loader's.
/// Names or values that are not UTF-8 are dropped rather than mangled.
pub fn inherited(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    passthrough: &[String],
) -> Vec<(String, String)> {
    vars.into_iter()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| {
            !is_shell_startup_variable(k) && !k.starts_with("LD_") && !k.starts_with("DYLD_")
        })
        .filter(|(k, _)| {
            INHERITED.contains(&k.as_str())
                || k.starts_with("LC_")
                || passthrough.iter().any(|p| match p.strip_suffix('*') {
                    Some(prefix) => k.starts_with(prefix),
                    None => p == k,
                })
        })
        .collect()
}

/// Whether a name says its value is a credential: `GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`,
/// `PGPASSWORD`, an `Authorization` header, `api_key`. Case does not matter.
pub fn names_a_credential(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "AUTH",
        "COOKIE",
        "CREDENTIAL",
    ];
    let upper = name.to_ascii_uppercase();
    WORDS.iter().any(|w| upper.contains(w))
}

/// The values a child inherits (see [`inherited`]) under a name that says credential: a
/// command that prints one (`printenv`, `env`) must show it redacted.
pub fn inherited_credentials(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    passthrough: &[String],
) -> Vec<String> {
    inherited(vars, passthrough)
        .into_iter()
        .filter(|(k, v)| names_a_credential(k) && !v.trim().is_empty())
        .map(|(_, v)| v)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn secrets_stay_and_the_base_goes_through() {
        let got = inherited(
            vars(&[
                ("PATH", "/bin"),
                ("OPENAI_API_KEY", "sk-x"),
                ("LC_ALL", "C"),
                ("HOME", "/h"),
            ]),
            &[],
        );
        let names: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["PATH", "LC_ALL", "HOME"]);
    }

    #[test]
    fn passthrough_names_and_prefixes_but_never_startup_or_loader_variables() {
        let got = inherited(
            vars(&[
                ("CARGO_HOME", "/c"),
                ("RUSTUP_HOME", "/r"),
                ("BASH_ENV", "/evil"),
                ("LD_PRELOAD", "/evil.so"),
                ("BASH_FUNC_ls%%", "() { :; }"),
            ]),
            &[
                "CARGO_*".into(),
                "RUSTUP_HOME".into(),
                "BASH_*".into(),
                "LD_PRELOAD".into(),
            ],
        );
        let names: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["CARGO_HOME", "RUSTUP_HOME"]);
    }

    #[test]
    fn passed_through_credentials_are_known_by_name() {
        let got = inherited_credentials(
            vars(&[
                ("PGPASSWORD", "pg-pass-1"),
                ("GITHUB_TOKEN", "gh-tok-2"),
                ("CARGO_HOME", "/c"),
                ("OPENAI_API_KEY", "sk-not-passed"),
            ]),
            &["PGPASSWORD".into(), "GITHUB_TOKEN".into(), "CARGO_*".into()],
        );
        assert_eq!(got, ["pg-pass-1", "gh-tok-2"]);
        assert!(names_a_credential("Authorization") && !names_a_credential("Accept"));
    }

    #[cfg(unix)]
    #[test]
    fn non_utf8_variables_are_dropped_not_a_panic() {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(vec![0xff, 0xfe]);
        let got = inherited(
            vec![
                (OsString::from("PATH"), bad.clone()),
                (bad, OsString::from("x")),
                (OsString::from("HOME"), OsString::from("/h")),
            ],
            &[],
        );
        assert_eq!(got, vec![("HOME".to_string(), "/h".to_string())]);
    }
}
