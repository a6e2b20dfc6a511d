//! Where a remote URL leads, decided the way git's transport code decides it: `NAME::ADDR`
//! runs the remote helper `git-remote-NAME`, `SCHEME://` picks a transport by scheme, and a
//! word without a colon before its first slash is a path on this machine.

/// What a URL (or a word given where git takes a repository) means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Url {
    /// A repository or bundle on this machine, at this path (relative to the workspace when
    /// relative); git reads it (fetch) or writes it (push) itself.
    Local(String),
    /// Another machine over https, http or ssh; the host's network policy applies.
    Network,
}

/// Why git must not be given a URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Refused {
    #[error("it is empty")]
    Empty,
    #[error("it is not valid UTF-8")]
    NotUtf8,
    #[error("it starts with `-`")]
    Option,
    #[error("`{0}::` runs the remote-helper program git-remote-{0}")]
    RemoteHelper(String),
    #[error("its path is not valid UTF-8 once decoded")]
    DecodedNotUtf8,
    #[error("a file:// URL must be file:///absolute/path (or give a path)")]
    FileNotAbsolute,
    #[error("the git:// protocol is not allowed (it can run a proxy program); use https or ssh")]
    GitProtocol,
    #[error(
        "`{0}://` needs a remote-helper program, which is not allowed; use https, ssh or a path"
    )]
    OtherScheme(String),
    #[error("git expands `~` and `~user` itself; give the path relative to the workspace")]
    Tilde,
}

fn scheme_char(first: bool, c: char) -> bool {
    c.is_ascii_alphabetic() || (!first && (c.is_ascii_digit() || "+-.".contains(c)))
}

/// The leading `SCHEME` of `SCHEME<sep>…`, when `url` has that shape.
fn leading_scheme<'a>(url: &'a str, sep: &str) -> Option<&'a str> {
    let end = url
        .char_indices()
        .find(|&(i, c)| !scheme_char(i == 0, c))
        .map_or(url.len(), |(i, _)| i);
    (end > 0 && url[end..].starts_with(sep)).then(|| &url[..end])
}

/// `%XX` escapes decoded, as git decodes the path of a `file://` URL.
fn percent_decode(s: &str) -> Result<String, Refused> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = |j: usize| bytes.get(j).and_then(|c| (*c as char).to_digit(16));
        match (b, hex(i + 1), hex(i + 2)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| Refused::DecodedNotUtf8)
}

/// Classify `url`; `Err` says why git must not be given it.
pub(super) fn classify(url: &str) -> Result<Url, Refused> {
    if url.is_empty() {
        return Err(Refused::Empty);
    }
    if url.contains('\u{FFFD}') {
        return Err(Refused::NotUtf8);
    }
    if url.starts_with('-') {
        return Err(Refused::Option);
    }
    if let Some(helper) = leading_scheme(url, "::") {
        return Err(Refused::RemoteHelper(helper.to_string()));
    }
    if let Some(scheme) = leading_scheme(url, "://") {
        let rest = &url[scheme.len() + 3..];
        return match scheme.to_ascii_lowercase().as_str() {
            "file" if rest.starts_with('/') => Ok(Url::Local(percent_decode(rest)?)),
            "file" => Err(Refused::FileNotAbsolute),
            "https" | "http" | "ssh" | "git+ssh" | "ssh+git" => Ok(Url::Network),
            "git" => Err(Refused::GitProtocol),
            other => Err(Refused::OtherScheme(other.to_string())),
        };
    }
    let colon = url.find(':');
    let slash = url.find('/');
    let local = match (colon, slash) {
        (None, _) => true,
        (Some(c), Some(s)) => s < c,
        (Some(_), None) => false,
    };
    if !local {
        // `[user@]host:path`, git's scp-like ssh syntax.
        return Ok(Url::Network);
    }
    if url.starts_with('~') {
        return Err(Refused::Tilde);
    }
    Ok(Url::Local(url.to_string()))
}

/// The paths git may open for a local repository `path`: it tries `PATH/.git`, `PATH`,
/// `PATH.git/.git` and `PATH.git`, after dropping trailing slashes.
pub(super) fn local_candidates(path: &str) -> Vec<String> {
    let trimmed = path.trim_end_matches('/');
    let base = if trimmed.is_empty() { "/" } else { trimmed };
    vec![base.to_string(), format!("{base}.git")]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_read_the_way_git_reads_them() {
        let local = |s: &str| Ok(Url::Local(s.to_string()));
        assert_eq!(classify("../other"), local("../other"));
        assert_eq!(classify("other"), local("other"));
        assert_eq!(classify("/srv/repo.git"), local("/srv/repo.git"));
        assert_eq!(classify("./a:b"), local("./a:b"));
        assert_eq!(classify("file:///srv/re%70o"), local("/srv/repo"));
        assert_eq!(classify("FILE:///srv/repo"), local("/srv/repo"));
        assert_eq!(classify("https://github.com/a/b"), Ok(Url::Network));
        assert_eq!(classify("ssh://git@host/x"), Ok(Url::Network));
        assert_eq!(classify("git@github.com:a/b.git"), Ok(Url::Network));
        for bad in [
            "ext::sh -c touch% x",
            "fd::3",
            "hg::https://x",
            "foo+bar::x",
            "git://host/x",
            "ftp://host/x",
            "weird://x",
            "file://host/x",
            "file://~/x",
            "~/repo",
            "~root/repo",
            "--upload-pack=evil",
            "",
        ] {
            assert!(classify(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_local_repository_may_also_be_found_with_dot_git_appended() {
        assert_eq!(local_candidates("../x/"), ["../x", "../x.git"]);
        assert_eq!(local_candidates("/"), ["/", "/.git"]);
    }
}
