//! `list` and `search`: directory walks with ripgrep's crates, confined to the grant.
//!
//! The walk goes by descriptor (see `fd_walk`) and never follows links; an entry that *is* a
//! link is yielded only when its target is itself readable under the grant. Every yielded path is checked, so neither a `../..`
//! glob nor a link can surface anything outside.

use crate::fd_walk::{walk, Entry, Flow, WalkOptions};
use crate::paths::{canonicalize_lenient, PathGuard};
use crate::safe_open::Kind;
use crate::search_pool::search_walked;
use globset::{GlobBuilder, GlobMatcher};
use grep_regex::RegexMatcherBuilder;
use std::path::{Path, PathBuf};
use tackle_policy::path::Access;
use tackle_protocol::{DirEntry, HostError, ListRequest, SearchHit, SearchRequest};

/// A glob from a request: matched against the root-relative and workspace-relative paths,
/// and against the file name when it has no `/` (ripgrep's `-g` habit).
struct PathGlob {
    matcher: GlobMatcher,
    basename_only: bool,
}

impl PathGlob {
    fn parse(glob: Option<&str>) -> Result<Option<Self>, HostError> {
        let Some(glob) = glob.filter(|g| !g.is_empty()) else {
            return Ok(None);
        };
        let matcher = GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
            .map_err(|e| HostError::Invalid(format!("invalid glob {glob:?}: {e}")))?
            .compile_matcher();
        Ok(Some(Self {
            matcher,
            basename_only: !glob.contains('/'),
        }))
    }

    fn matches(&self, rel_root: &Path, rel_workspace: Option<&Path>) -> bool {
        if self.basename_only {
            return rel_root
                .file_name()
                .is_some_and(|n| self.matcher.is_match(n));
        }
        self.matcher.is_match(rel_root) || rel_workspace.is_some_and(|p| self.matcher.is_match(p))
    }
}

/// The checked, canonical, existing directory a walk starts from.
fn walk_root(guard: &PathGuard, requested: &Path) -> Result<PathBuf, HostError> {
    let canon = guard.resolve(requested).map_err(|e| e.into_host_error())?;
    if !canon.exists {
        return Err(HostError::NotFound {
            path: requested.to_path_buf(),
        });
    }
    guard.require(&canon.path, Access::Read)?;
    Ok(canon.path)
}

fn options(hidden: bool, gitignore: bool, max_depth: Option<usize>, sizes: bool) -> WalkOptions {
    WalkOptions {
        include_hidden: hidden,
        respect_gitignore: gitignore,
        max_depth,
        sizes,
    }
}

/// The directories above `root`, outermost first: their ignore files apply below them, as
/// in ripgrep.
fn ancestors(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = root.ancestors().skip(1).map(Path::to_path_buf).collect();
    v.reverse();
    v
}

/// Is this walked entry safe to yield? Plain entries are checked as they are (the walk
/// starts from a canonical root and enters no link); links by their target.
fn admitted(guard: &PathGuard, entry: &Entry) -> bool {
    if !guard.decide(entry.path, Access::Read).is_allowed() {
        return false;
    }
    if entry.stat.kind != Kind::Link {
        return true;
    }
    match canonicalize_lenient(entry.path) {
        Ok(c) => c.exists && guard.decide(&c.path, Access::Read).is_allowed(),
        Err(_) => false,
    }
}

fn walk_error(root: &Path, e: std::io::Error) -> HostError {
    HostError::Io(format!("{}: {e}", root.display()))
}

pub(crate) fn list(
    guard: &PathGuard,
    req: &ListRequest,
    ceiling: usize,
) -> Result<Vec<DirEntry>, HostError> {
    let root = walk_root(guard, &req.path)?;
    let glob = PathGlob::parse(req.glob.as_deref())?;
    let cap = req.max_entries.min(ceiling);
    if root.is_file() {
        return Ok(single_file(&root));
    }
    let mut out = Vec::new();
    if cap == 0 {
        return Ok(out);
    }
    let opts = options(
        req.include_hidden,
        req.respect_gitignore,
        req.max_depth,
        true,
    );
    walk(&root, &ancestors(&root), opts, &mut |entry| {
        if !admitted(guard, entry) {
            return Flow::Continue;
        }
        let rel = entry.path.strip_prefix(&root).unwrap_or(entry.path);
        let rel_ws = entry.path.strip_prefix(&guard.workspace).ok();
        if glob.as_ref().is_some_and(|g| !g.matches(rel, rel_ws)) {
            return Flow::Continue;
        }
        out.push(DirEntry {
            path: rel.to_path_buf(),
            is_dir: entry.stat.kind == Kind::Dir,
            size: entry.stat.size,
        });
        if out.len() >= cap {
            Flow::Stop
        } else {
            Flow::Continue
        }
    })
    .map_err(|e| walk_error(&root, e))?;
    Ok(out)
}

/// Listing a file lists that file, by name.
fn single_file(path: &Path) -> Vec<DirEntry> {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let name = path.file_name().map(PathBuf::from).unwrap_or_default();
    vec![DirEntry {
        path: name,
        is_dir: false,
        size,
    }]
}

pub(crate) fn search(
    guard: &PathGuard,
    req: &SearchRequest,
    ceiling: usize,
) -> Result<Vec<SearchHit>, HostError> {
    if req.pattern.is_empty() {
        return Err(HostError::Invalid("the search pattern is empty".into()));
    }
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(req.case_insensitive)
        .build(&req.pattern)
        .map_err(|e| HostError::Invalid(format!("invalid regex {:?}: {e}", req.pattern)))?;
    let root = walk_root(guard, &req.root)?;
    let glob = PathGlob::parse(req.glob.as_deref())?;
    let cap = req.max_results.min(ceiling);
    if cap == 0 {
        return Ok(Vec::new());
    }
    // A search reads what it opens and needs no sizes from the walk.
    let opts = options(req.include_hidden, true, None, false);
    search_walked(&matcher, cap, |search| {
        walk(&root, &ancestors(&root), opts, &mut |entry| {
            // Links are skipped outright: a file is searched only where it really lives.
            if entry.stat.kind != Kind::File || !admitted(guard, entry) {
                return Flow::Continue;
            }
            let rel = entry.path.strip_prefix(&root).unwrap_or(entry.path);
            let rel_ws = entry.path.strip_prefix(&guard.workspace).ok();
            if glob.as_ref().is_some_and(|g| !g.matches(rel, rel_ws)) {
                return Flow::Continue;
            }
            // Opened relative to the directory that listed it, without following a link: a
            // file swapped for a link after the listing is skipped rather than read.
            match entry.dir.open_file(entry.name) {
                Ok(file) => search(rel.to_path_buf(), file),
                Err(_) => Flow::Continue,
            }
        })
    })
    .map_err(|e| walk_error(&root, e))
}
