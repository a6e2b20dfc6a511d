//! A directory walk by descriptor: every directory is opened relative to its already-open
//! parent with `O_NOFOLLOW`, and every entry is examined with `fstatat` relative to the
//! directory that listed it. A directory swapped for a link to outside the workspace while
//! the walk runs is not entered (the open fails), so no name or byte from outside can come
//! back, whatever a concurrent process renames (the path-based walk could be raced with
//! `renameat2(RENAME_EXCHANGE)`).
//!
//! Ignore files are read the same way and matched with the `ignore` crate's gitignore
//! matcher: `.git/info/exclude`, `.gitignore`, then `.ignore` in each directory, the deepest
//! match deciding, as ripgrep does.

use crate::safe_open::{Dir, Kind, Stat};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Ignore files bigger than this are not read (a hostile 1 GB `.gitignore` costs nothing).
const MAX_IGNORE_FILE_BYTES: u64 = 1 << 20;

#[derive(Debug, Clone, Copy)]
pub(crate) struct WalkOptions {
    pub include_hidden: bool,
    pub respect_gitignore: bool,
    /// Entries deeper than this (root = 0, its children = 1) are neither yielded nor entered.
    pub max_depth: Option<usize>,
    /// Whether entries need their size. Without it, an entry whose kind the listing reported
    /// costs no `fstatat` (ripgrep does the same) and its `stat.size` is 0.
    pub sizes: bool,
}

/// One entry, with the directory it was found in (to open it without a path).
pub(crate) struct Entry<'a> {
    pub dir: &'a Dir,
    pub name: &'a OsStr,
    /// The root joined with the names walked: where the entry was, lexically.
    pub path: &'a Path,
    pub stat: Stat,
}

/// Whether the walk goes on after an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    Stop,
}

/// Walk below `root` (canonical, already checked) in sorted pre-order, calling `visit` for
/// each entry not hidden or ignored. `ancestors` are the directories above `root` whose
/// ignore files apply (outermost first). Unreadable directories are skipped, like ripgrep.
pub(crate) fn walk(
    root: &Path,
    ancestors: &[PathBuf],
    opts: WalkOptions,
    visit: &mut dyn FnMut(&Entry) -> Flow,
) -> std::io::Result<()> {
    let dir = Dir::open(root)?;
    let mut ignores = Vec::new();
    if opts.respect_gitignore {
        for a in ancestors {
            if let Ok(d) = Dir::open(a) {
                ignores.extend(ignore_file(&d, a));
            }
        }
        ignores.extend(ignore_file(&dir, root));
    }
    let mut path = root.to_path_buf();
    walk_dir(&dir, &mut path, 1, opts, &mut ignores, visit);
    Ok(())
}

fn walk_dir(
    dir: &Dir,
    path: &mut PathBuf,
    depth: usize,
    opts: WalkOptions,
    ignores: &mut Vec<Gitignore>,
    visit: &mut dyn FnMut(&Entry) -> Flow,
) -> Flow {
    if opts.max_depth.is_some_and(|max| depth > max) {
        return Flow::Continue;
    }
    let Ok(names) = dir.names() else {
        return Flow::Continue;
    };
    for (name, listed) in &names {
        if !opts.include_hidden && name.as_bytes().first() == Some(&b'.') {
            continue;
        }
        let stat = match (listed, opts.sizes) {
            // What the listing said is enough to route the entry: a name swapped meanwhile
            // fails the `O_NOFOLLOW` open that reads or enters it.
            (Some(kind), false) => Stat {
                kind: *kind,
                size: 0,
            },
            // Gone since the listing, or unreadable: skipped, never followed.
            _ => match dir.stat(name) {
                Ok(stat) => stat,
                Err(_) => continue,
            },
        };
        path.push(name);
        let is_dir = stat.kind == Kind::Dir;
        if is_ignored(ignores, path, is_dir) {
            path.pop();
            continue;
        }
        let entry = Entry {
            dir,
            name,
            path,
            stat,
        };
        if visit(&entry) == Flow::Stop {
            path.pop();
            return Flow::Stop;
        }
        let deeper = opts.max_depth.is_none_or(|max| depth < max);
        if is_dir && deeper {
            if let Ok(child) = dir.open_dir(name) {
                let pushed = match opts.respect_gitignore {
                    true => ignore_file(&child, path).map(|g| ignores.push(g)).is_some(),
                    false => false,
                };
                let flow = walk_dir(&child, path, depth + 1, opts, ignores, visit);
                if pushed {
                    ignores.pop();
                }
                if flow == Flow::Stop {
                    path.pop();
                    return Flow::Stop;
                }
            }
        }
        path.pop();
    }
    Flow::Continue
}

/// The deepest matcher with an opinion decides (a nested `!keep` re-includes).
fn is_ignored(ignores: &[Gitignore], path: &Path, is_dir: bool) -> bool {
    for g in ignores.iter().rev() {
        match g.matched(path, is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => {}
        }
    }
    false
}

/// This directory's ignore rules, or `None` when it has no ignore file.
fn ignore_file(dir: &Dir, path: &Path) -> Option<Gitignore> {
    let mut builder = GitignoreBuilder::new(path);
    let mut any = false;
    let exclude = dir
        .open_dir(OsStr::new(".git"))
        .and_then(|g| g.open_dir(OsStr::new("info")))
        .ok()
        .and_then(|info| read_small(&info, OsStr::new("exclude")));
    let own = [".gitignore", ".ignore"].map(|n| read_small(dir, OsStr::new(n)));
    for text in std::iter::once(exclude).chain(own).flatten() {
        for line in text.lines() {
            // A malformed line is skipped, as git does.
            let _ = builder.add_line(None, line);
            any = true;
        }
    }
    if !any {
        return None;
    }
    builder.build().ok()
}

fn read_small(dir: &Dir, name: &OsStr) -> Option<String> {
    let file = dir.open_file(name).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_IGNORE_FILE_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}
