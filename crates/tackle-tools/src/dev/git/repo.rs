//! Where a repository really is, before git runs in it: its git directory and common
//! directory (a `.git` file or a `commondir` file can point anywhere), its alternate object
//! stores, its config listing, and the repositories nested in its work tree as gitlinks,
//! which git runs itself in (`git status` asks each populated submodule for its status).

use super::args::Access;
use super::config::{self, Entry};
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tackle_protocol::{
    Capability, Decision, ExecCommand, ExecOutput, ExecRequest, HostError, ReadRequest,
    ToolContext, ToolError,
};

/// The command that finds a repository's git and common directories.
pub(super) const PROBE: &[&str] = &[
    "rev-parse",
    "--path-format=absolute",
    "--git-dir",
    "--git-common-dir",
];

/// The command that lists a repository's config without following `include.path`.
pub(super) const LISTING: &[&str] = &[
    "config",
    "--list",
    "--null",
    "--show-scope",
    "--no-includes",
];

const PROBE_TIMEOUT: Duration = Duration::from_secs(60);
const PROBE_OUTPUT: usize = 1024 * 1024;
/// Alternates of alternates are followed this deep, as git does.
const ALTERNATE_DEPTH: usize = 5;
/// An index larger than this is not read.
const MAX_INDEX_BYTES: u64 = 512 * 1024 * 1024;

/// A repository's git directory and the common directory it shares with its worktrees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Dirs {
    pub git_dir: PathBuf,
    pub common_dir: PathBuf,
}

/// Refuse unless the grants allow `access` to `path`; the refusal says what git would use it for.
pub(super) async fn require(
    cx: &ToolContext,
    path: &Path,
    access: Access,
    what: &str,
) -> Result<(), ToolError> {
    let cap = match access {
        Access::Read => Capability::FileRead {
            path: path.to_path_buf(),
        },
        Access::Write => Capability::FileWrite {
            path: path.to_path_buf(),
        },
    };
    let decision = cx.host().check(&cap).await;
    if decision.is_denied() {
        return Err(ToolError::denied(Decision {
            why: format!("git is not run: {what}: {}", decision.why),
            ..decision
        }));
    }
    Ok(())
}

/// Run one of the tool's own git commands. `None` when `cwd` does not exist.
async fn run(
    cx: &ToolContext,
    cwd: &Path,
    args: &[&str],
    env: &[(String, String)],
) -> Result<Option<ExecOutput>, ToolError> {
    let req = ExecRequest {
        command: ExecCommand::Argv {
            program: "git".into(),
            args: args.iter().map(|a| a.to_string()).collect(),
        },
        cwd: Some(cwd.to_path_buf()),
        timeout: PROBE_TIMEOUT,
        env: env.to_vec(),
        stdin: None,
        max_output_bytes: PROBE_OUTPUT,
        output_lines: None,
        program_sha256: None,
        data_values: Vec::new(),
    };
    match cx.host().exec(req).await {
        Ok(out) => Ok(Some(out)),
        Err(HostError::NotFound { .. }) => Ok(None),
        Err(HostError::Denied(d)) => Err(ToolError::denied(Decision {
            why: format!(
                "git is not run: the tool first runs `git {}` to check the repository: {}",
                args.join(" "),
                d.why
            ),
            ..d
        })),
        Err(e) => Err(ToolError::failed(format!(
            "could not check the repository with `git {}`: {e}",
            args.join(" ")
        ))),
    }
}

/// The repository git finds from `dir` (not above it), if any.
pub(super) async fn probe(
    cx: &ToolContext,
    dir: &Path,
    env: &[(String, String)],
) -> Result<Option<Dirs>, ToolError> {
    let Some(out) = run(cx, dir, PROBE, env).await? else {
        return Ok(None);
    };
    if out.exit_code != Some(0) || out.truncated {
        return Ok(None);
    }
    let mut lines = out.stdout.lines();
    match (lines.next(), lines.next()) {
        (Some(g), Some(c)) if !g.contains('\u{FFFD}') && !c.contains('\u{FFFD}') => {
            Ok(Some(Dirs {
                git_dir: PathBuf::from(g),
                common_dir: PathBuf::from(c),
            }))
        }
        _ => Err(ToolError::failed(format!(
            "could not read where the repository in {} keeps its data",
            dir.display()
        ))),
    }
}

/// The config git would read in `dir`, every scope, includes not followed.
pub(super) async fn listing(
    cx: &ToolContext,
    dir: &Path,
    env: &[(String, String)],
) -> Result<Vec<Entry>, ToolError> {
    let Some(out) = run(cx, dir, LISTING, env).await? else {
        return Ok(Vec::new());
    };
    if out.truncated {
        return Err(ToolError::failed(
            "git is not run: the repository's config is too large to check",
        ));
    }
    if out.exit_code != Some(0) {
        return Err(ToolError::failed(format!(
            "git is not run: git could not read the repository's config: {}",
            out.stderr.trim()
        )));
    }
    config::parse_listing(&out.stdout)
        .map_err(|e| ToolError::failed(format!("git is not run: {e}")))
}

/// A file's bytes through the host (and so the grants); `None` when it does not exist.
async fn read_file(
    cx: &ToolContext,
    path: &Path,
    limit: u64,
) -> Result<Option<Vec<u8>>, ToolError> {
    let mut data: Vec<u8> = Vec::new();
    loop {
        let req = ReadRequest {
            path: path.to_path_buf(),
            offset: data.len() as u64,
            max_bytes: None,
        };
        let content = match cx.host().read(req).await {
            Ok(c) => c,
            Err(HostError::NotFound { .. }) if data.is_empty() => return Ok(None),
            Err(e) => {
                return Err(ToolError::failed(format!(
                    "git is not run: could not read {} to check it: {e}",
                    path.display()
                )))
            }
        };
        if content.total_size > limit {
            return Err(ToolError::failed(format!(
                "git is not run: {} is too large to check",
                path.display()
            )));
        }
        let got = content.bytes.len();
        data.extend(content.bytes);
        if data.len() as u64 >= content.total_size || got == 0 {
            return Ok(Some(data));
        }
    }
}

/// The redirections git follows by itself from a directory: a `.git` file (`gitdir: PATH`,
/// relative to the directory) and the git directory's `commondir` file (relative to the git
/// directory). Their targets must be inside the grants. They are read from the files, so
/// that a target the sandbox hides is refused rather than only failing to open.
pub(super) async fn check_redirects(
    cx: &ToolContext,
    dir: &Path,
    access: Access,
    what: &str,
) -> Result<(), ToolError> {
    let ws = cx.host().workspace().to_path_buf();
    let dotgit = dir.join(".git");
    let git_dir = match read_redirect(cx, &dotgit, what).await? {
        Some(text) => {
            let target = text
                .strip_prefix("gitdir:")
                .map(|t| t.trim_end_matches(['\n', '\r']).trim_start())
                .filter(|t| !t.is_empty())
                .ok_or_else(|| {
                    ToolError::failed(format!(
                        "git is not run: {} is a file but not a `gitdir:` link",
                        shown(&ws, &dotgit)
                    ))
                })?;
            let path = dir.join(target);
            let why = format!(
                "{what}: {} points git at {}",
                shown(&ws, &dotgit),
                path.display()
            );
            require(cx, &path, access, &why).await?;
            path
        }
        None => dotgit,
    };
    let common = git_dir.join("commondir");
    if let Some(text) = read_redirect(cx, &common, what).await? {
        let path = git_dir.join(text.trim_end_matches(['\n', '\r']));
        let why = format!(
            "{what}: {} points git at {}",
            shown(&ws, &common),
            path.display()
        );
        require(cx, &path, access, &why).await?;
    }
    Ok(())
}

/// A small file git reads to find a repository; `None` when it is absent or a directory.
async fn read_redirect(
    cx: &ToolContext,
    path: &Path,
    what: &str,
) -> Result<Option<String>, ToolError> {
    let req = ReadRequest {
        path: path.to_path_buf(),
        offset: 0,
        max_bytes: Some(64 * 1024),
    };
    match cx.host().read(req).await {
        Ok(content) => String::from_utf8(content.bytes).map(Some).map_err(|_| {
            ToolError::failed(format!(
                "git is not run: {} is not valid UTF-8, so it cannot be checked",
                path.display()
            ))
        }),
        Err(HostError::NotFound { .. } | HostError::Invalid(_)) => Ok(None),
        Err(HostError::Denied(d)) => Err(ToolError::denied(Decision {
            why: format!(
                "git is not run: {what}: {} leads outside the grants: {}",
                path.display(),
                d.why
            ),
            ..d
        })),
        Err(e) => Err(ToolError::failed(format!(
            "git is not run: could not read {} to check it: {e}",
            path.display()
        ))),
    }
}

/// Refuse unless the repository's directories and its alternate object stores are inside
/// the grants: `access` for the git and common directories, reading for the rest. A
/// symbolic link among them is resolved by the check.
pub(super) async fn check_dirs(
    cx: &ToolContext,
    dirs: &Dirs,
    access: Access,
    what: &str,
) -> Result<(), ToolError> {
    let ws = cx.host().workspace().to_path_buf();
    let shown = |p: &Path| shown(&ws, p);
    require(
        cx,
        &dirs.git_dir,
        access,
        &format!("{what} keeps its data in {}", shown(&dirs.git_dir)),
    )
    .await?;
    require(
        cx,
        &dirs.common_dir,
        access,
        &format!("{what} shares data in {}", shown(&dirs.common_dir)),
    )
    .await?;
    let common = ["objects", "refs", "packed-refs", "config", "info"];
    let own = ["HEAD", "index", "config.worktree"];
    for p in common
        .iter()
        .map(|n| dirs.common_dir.join(n))
        .chain(own.iter().map(|n| dirs.git_dir.join(n)))
    {
        require(cx, &p, Access::Read, &format!("{what} uses {}", shown(&p))).await?;
    }
    check_alternates(cx, &dirs.common_dir.join("objects"), what).await
}

/// Every object store named in `objects/info/alternates`, and in theirs.
async fn check_alternates(cx: &ToolContext, objects: &Path, what: &str) -> Result<(), ToolError> {
    let ws = cx.host().workspace().to_path_buf();
    let mut queue = vec![(objects.to_path_buf(), 0usize)];
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    while let Some((dir, depth)) = queue.pop() {
        if !seen.insert(dir.clone()) {
            continue;
        }
        let file = dir.join("info").join("alternates");
        let Some(bytes) = read_file(cx, &file, 1024 * 1024).await? else {
            continue;
        };
        let text = String::from_utf8(bytes).map_err(|_| {
            ToolError::failed(format!(
                "git is not run: {} is not valid UTF-8, so it cannot be checked",
                shown(&ws, &file)
            ))
        })?;
        for line in text.lines() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let entry = unquote(line).ok_or_else(|| {
                ToolError::failed(format!(
                    "git is not run: {} has a line this tool cannot read: {line}",
                    shown(&ws, &file)
                ))
            })?;
            let path = dir.join(entry);
            let why = format!(
                "{what} borrows objects from {} (named in {})",
                path.display(),
                shown(&ws, &file)
            );
            require(cx, &path, Access::Read, &why).await?;
            if depth < ALTERNATE_DEPTH {
                queue.push((path, depth + 1));
            }
        }
    }
    Ok(())
}

/// A line as git reads it: C-quoted when it starts with `"`.
fn unquote(line: &str) -> Option<String> {
    let Some(body) = line.strip_prefix('"') else {
        return Some(line.to_string());
    };
    let mut out: Vec<u8> = Vec::new();
    let mut bytes = body.bytes();
    while let Some(b) = bytes.next() {
        match b {
            b'"' => {
                return String::from_utf8(out)
                    .ok()
                    .filter(|_| bytes.next().is_none())
            }
            b'\\' => {
                let c = bytes.next()?;
                let plain = match c {
                    b'a' => 7,
                    b'b' => 8,
                    b'f' => 12,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'v' => 11,
                    b'\\' | b'"' => c,
                    b'0'..=b'3' => {
                        let d2 = bytes.next()?;
                        let d3 = bytes.next()?;
                        if !(b'0'..=b'7').contains(&d2) || !(b'0'..=b'7').contains(&d3) {
                            return None;
                        }
                        (c - b'0') * 64 + (d2 - b'0') * 8 + (d3 - b'0')
                    }
                    _ => return None,
                };
                out.push(plain);
            }
            _ => out.push(b),
        }
    }
    None
}

/// `path` as shown to the model: relative to the workspace when inside it.
pub(super) fn shown(ws: &Path, path: &Path) -> String {
    match path.strip_prefix(ws) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// The gitlinks (submodule entries) in a repository's index, as work-tree-relative paths.
/// A split index's shared part is read too.
pub(super) async fn gitlinks(
    cx: &ToolContext,
    dirs: &Dirs,
    sha256: bool,
) -> Result<Vec<PathBuf>, ToolError> {
    let oid_len = if sha256 { 32 } else { 20 };
    let index = dirs.git_dir.join("index");
    let Some(data) = read_file(cx, &index, MAX_INDEX_BYTES).await? else {
        return Ok(Vec::new());
    };
    let ws = cx.host().workspace().to_path_buf();
    let bad = |file: &Path, e: IndexError| {
        ToolError::failed(format!(
            "git is not run: could not read {} to look for submodules: {e}",
            shown(&ws, file)
        ))
    };
    let parsed = parse_index(&data, oid_len).map_err(|e| bad(&index, e))?;
    let mut links = parsed.gitlinks;
    if let Some(shared) = parsed.shared {
        let file = dirs.git_dir.join(format!("sharedindex.{shared}"));
        if let Some(data) = read_file(cx, &file, MAX_INDEX_BYTES).await? {
            let base = parse_index(&data, oid_len).map_err(|e| bad(&file, e))?;
            links.extend(base.gitlinks);
        }
    }
    links.sort();
    links.dedup();
    Ok(links
        .into_iter()
        .map(|p| PathBuf::from(OsStr::from_bytes(&p)))
        .collect())
}

/// What the index says about submodules.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct IndexLinks {
    pub gitlinks: Vec<Vec<u8>>,
    /// The shared index of a split index, as hex.
    pub shared: Option<String>,
}

/// Why a git index could not be read for its gitlinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(super) enum IndexError {
    #[error("it is not a git index")]
    NotAnIndex,
    #[error("index version {0} is not known")]
    UnknownVersion(u32),
    #[error("it ends early")]
    EndsEarly,
    #[error("a length overflows")]
    LengthOverflows,
    #[error("an extended entry in a version 2 index")]
    ExtendedInVersion2,
    #[error("a path prefix is too short")]
    PrefixTooShort,
    #[error("a path is not terminated")]
    Unterminated,
    #[error("an entry is not padded as git pads it")]
    BadPadding,
    #[error("an extension ends early")]
    ExtensionEndsEarly,
    #[error("the split-index link is short")]
    ShortLink,
}

fn be32(data: &[u8], at: usize) -> Result<u32, IndexError> {
    data.get(at..at + 4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(u32::from_be_bytes)
        .ok_or(IndexError::EndsEarly)
}

fn be16(data: &[u8], at: usize) -> Result<u16, IndexError> {
    data.get(at..at + 2)
        .and_then(|b| <[u8; 2]>::try_from(b).ok())
        .map(u16::from_be_bytes)
        .ok_or(IndexError::EndsEarly)
}

/// Git's offset varint (index version 4).
fn varint(data: &[u8], at: &mut usize) -> Result<usize, IndexError> {
    let mut byte = *data.get(*at).ok_or(IndexError::EndsEarly)?;
    *at += 1;
    let mut value = usize::from(byte & 127);
    while byte & 128 != 0 {
        value = value
            .checked_add(1)
            .and_then(|v| v.checked_mul(128))
            .ok_or(IndexError::LengthOverflows)?;
        byte = *data.get(*at).ok_or(IndexError::EndsEarly)?;
        *at += 1;
        value |= usize::from(byte & 127);
    }
    Ok(value)
}

/// Parse a git index (versions 2, 3 and 4) for its gitlink entries.
pub(super) fn parse_index(data: &[u8], oid_len: usize) -> Result<IndexLinks, IndexError> {
    if data.get(..4) != Some(b"DIRC") {
        return Err(IndexError::NotAnIndex);
    }
    let version = be32(data, 4)?;
    if !(2..=4).contains(&version) {
        return Err(IndexError::UnknownVersion(version));
    }
    let count = be32(data, 8)?;
    let mut at = 12usize;
    let mut prev: Vec<u8> = Vec::new();
    let mut out = IndexLinks::default();
    for _ in 0..count {
        let start = at;
        let mode = be32(data, at + 24)?;
        let flags_at = at + 40 + oid_len;
        let flags = be16(data, flags_at)?;
        at = flags_at + 2;
        if flags & 0x4000 != 0 {
            if version < 3 {
                return Err(IndexError::ExtendedInVersion2);
            }
            at += 2;
        }
        let name_len = usize::from(flags & 0x0fff);
        let path = if version == 4 {
            let strip = varint(data, &mut at)?;
            let keep = prev
                .len()
                .checked_sub(strip)
                .ok_or(IndexError::PrefixTooShort)?;
            let rest = data.get(at..).ok_or(IndexError::EndsEarly)?;
            let end = rest
                .iter()
                .position(|&b| b == 0)
                .ok_or(IndexError::Unterminated)?;
            let mut p = prev.get(..keep).unwrap_or_default().to_vec();
            p.extend_from_slice(&rest[..end]);
            at += end + 1;
            p
        } else {
            let rest = data.get(at..).ok_or(IndexError::EndsEarly)?;
            let len = if name_len == 0x0fff {
                rest.iter()
                    .position(|&b| b == 0)
                    .ok_or(IndexError::Unterminated)?
            } else {
                name_len
            };
            let p = rest.get(..len).ok_or(IndexError::EndsEarly)?.to_vec();
            // Entries are padded with 1 to 8 NULs to a multiple of eight bytes.
            let size = (at - start + len + 8) & !7;
            let padding = data
                .get(at + len..start + size)
                .ok_or(IndexError::EndsEarly)?;
            if padding.iter().any(|&b| b != 0) {
                return Err(IndexError::BadPadding);
            }
            at = start + size;
            p
        };
        if mode & 0o170000 == 0o160000 {
            out.gitlinks.push(path.clone());
        }
        prev = path;
    }
    // Extensions, up to the trailing checksum.
    let end = data
        .len()
        .checked_sub(oid_len)
        .ok_or(IndexError::EndsEarly)?;
    while at + 8 <= end {
        let signature = data.get(at..at + 4).ok_or(IndexError::EndsEarly)?;
        let size = be32(data, at + 4)? as usize;
        let body = data
            .get(at + 8..at + 8 + size)
            .ok_or(IndexError::ExtensionEndsEarly)?;
        if signature == b"link" {
            let oid = body.get(..oid_len).ok_or(IndexError::ShortLink)?;
            if oid.iter().any(|&b| b != 0) {
                out.shared = Some(oid.iter().map(|b| format!("{b:02x}")).collect());
            }
        }
        at += 8 + size;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) -> bool {
        Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "T")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "T")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// A repository with a file, a long path and two gitlinks, in each index format git writes.
    fn index_with_gitlinks(version: &str, split: bool) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
        let dir = tempfile::tempdir().ok()?;
        let d = dir.path();
        let long = "d/".repeat(2100) + "f";
        std::fs::create_dir_all(d.join(&long).parent()?).ok()?;
        std::fs::write(d.join(&long), "x").ok()?;
        std::fs::write(d.join("a.txt"), "a").ok()?;
        std::fs::write(d.join("new.txt"), "n").ok()?;
        let ok = git(d, &["init", "-q"])
            && git(d, &["add", "."])
            && git(d, &["commit", "-qm", "i"])
            && git(
                d,
                &[
                    "update-index",
                    "--add",
                    "--cacheinfo",
                    "160000,4b825dc642cb6eb9a060e54bf8d69288fbee4904,sub/one",
                ],
            )
            && git(
                d,
                &[
                    "update-index",
                    "--add",
                    "--cacheinfo",
                    "160000,4b825dc642cb6eb9a060e54bf8d69288fbee4904,two",
                ],
            )
            && git(d, &["rm", "-q", "--cached", "new.txt"])
            && git(d, &["add", "-N", "new.txt"])
            && git(d, &["update-index", "--index-version", version]);
        let ok = ok && (!split || git(d, &["update-index", "--split-index"]));
        if !ok {
            return None;
        }
        let index = std::fs::read(d.join(".git/index")).ok()?;
        let shared = std::fs::read_dir(d.join(".git"))
            .ok()?
            .filter_map(|e| e.ok())
            .find(|e| e.file_name().to_string_lossy().starts_with("sharedindex."))
            .and_then(|e| std::fs::read(e.path()).ok());
        Some((index, shared))
    }

    #[test]
    fn gitlinks_are_found_in_every_index_version() {
        for version in ["2", "3", "4"] {
            let Some((index, _)) = index_with_gitlinks(version, false) else {
                eprintln!("SKIP: git is not available");
                return;
            };
            let parsed = parse_index(&index, 20);
            assert_eq!(
                parsed.map(|p| p.gitlinks),
                Ok(vec![b"sub/one".to_vec(), b"two".to_vec()]),
                "version {version}"
            );
        }
    }

    #[test]
    fn a_split_index_names_its_shared_part() {
        let Some((index, Some(shared))) = index_with_gitlinks("2", true) else {
            eprintln!("SKIP: git is not available");
            return;
        };
        let main = parse_index(&index, 20).unwrap_or_default();
        assert!(main.shared.is_some());
        let base = parse_index(&shared, 20).unwrap_or_default();
        let mut all = main.gitlinks;
        all.extend(base.gitlinks);
        assert!(all.contains(&b"two".to_vec()), "{all:?}");
    }

    #[test]
    fn a_damaged_index_is_an_error_not_an_empty_list() {
        assert!(parse_index(b"DIRC", 20).is_err());
        assert!(parse_index(b"XXXX\0\0\0\x02\0\0\0\0", 20).is_err());
        let mut header = b"DIRC\0\0\0\x02\0\0\0\x01".to_vec();
        header.extend([0u8; 30]);
        assert!(parse_index(&header, 20).is_err());
    }

    #[test]
    fn alternates_lines_are_unquoted_as_git_does() {
        assert_eq!(unquote("../x/objects"), Some("../x/objects".into()));
        assert_eq!(unquote(r#""/a b\"c\\d\101""#), Some("/a b\"c\\dA".into()));
        assert_eq!(unquote(r#""unterminated"#), None);
        assert_eq!(unquote(r#""bad\q""#), None);
    }
}
