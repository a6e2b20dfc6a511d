//! `list` and `search`: directory walks with ripgrep's crates, confined to the grant.
//!
//! The walk never follows links; an entry that *is* a link is yielded only when its target
//! is itself readable under the grant. Every yielded path is checked, so neither a `../..`
//! glob nor a link can surface anything outside.

use crate::paths::{canonicalize_lenient, PathGuard};
use crate::safe_open::open_no_links;
use globset::{GlobBuilder, GlobMatcher};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::WalkBuilder;
use std::path::{Path, PathBuf};
use tackle_policy::path::Access;
use tackle_protocol::text::truncate_at_char_boundary;
use tackle_protocol::{DirEntry, HostError, ListRequest, SearchHit, SearchRequest};

/// Longest line returned in a search hit; minified files would otherwise flood the result.
const MAX_HIT_LINE_BYTES: usize = 1_000;

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

fn walker(root: &Path, hidden: bool, gitignore: bool, max_depth: Option<usize>) -> WalkBuilder {
    let mut b = WalkBuilder::new(root);
    b.hidden(!hidden)
        .git_ignore(gitignore)
        .git_exclude(gitignore)
        .git_global(false)
        .ignore(gitignore)
        .require_git(false)
        .follow_links(false)
        .max_depth(max_depth)
        .sort_by_file_path(|a, b| a.cmp(b));
    b
}

/// Is this walked entry safe to yield? Plain entries are checked as they are (the walk
/// starts from a canonical root and does not follow links); links by their target.
fn admitted(guard: &PathGuard, entry: &ignore::DirEntry) -> bool {
    if !guard.decide(entry.path(), Access::Read).is_allowed() {
        return false;
    }
    if !entry.path_is_symlink() {
        return true;
    }
    match canonicalize_lenient(entry.path()) {
        Ok(c) => c.exists && guard.decide(&c.path, Access::Read).is_allowed(),
        Err(_) => false,
    }
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
    let walk = walker(
        &root,
        req.include_hidden,
        req.respect_gitignore,
        req.max_depth,
    )
    .build();
    for entry in walk.flatten() {
        if out.len() >= cap {
            break;
        }
        if entry.depth() == 0 || !admitted(guard, &entry) {
            continue;
        }
        let rel = entry.path().strip_prefix(&root).unwrap_or(entry.path());
        let rel_ws = entry.path().strip_prefix(&guard.workspace).ok();
        if glob.as_ref().is_some_and(|g| !g.matches(rel, rel_ws)) {
            continue;
        }
        let meta = entry.metadata().ok();
        out.push(DirEntry {
            path: rel.to_path_buf(),
            is_dir: entry.file_type().is_some_and(|t| t.is_dir()),
            size: meta.map(|m| m.len()).unwrap_or(0),
        });
    }
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
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(true)
        .build();
    let mut hits = Vec::new();
    for entry in walker(&root, req.include_hidden, true, None)
        .build()
        .flatten()
    {
        if hits.len() >= cap {
            break;
        }
        // Links are skipped outright: a file is searched only where it really lives.
        if !entry.file_type().is_some_and(|t| t.is_file()) || !admitted(guard, &entry) {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(&root)
            .unwrap_or(entry.path())
            .to_path_buf();
        let rel_ws = entry.path().strip_prefix(&guard.workspace).ok();
        if glob.as_ref().is_some_and(|g| !g.matches(&rel, rel_ws)) {
            continue;
        }
        // Opened without following links, so a file swapped for a link (or its directory
        // for a linked one) after the walk saw it is skipped rather than read.
        let Ok(fd) = open_no_links(entry.path(), libc::O_RDONLY | libc::O_NONBLOCK) else {
            continue;
        };
        let file = std::fs::File::from(fd);
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            continue;
        }
        let sink = Lossy(|line_number, line: &str| {
            let line = line.trim_end_matches(['\n', '\r']);
            hits.push(SearchHit {
                path: rel.clone(),
                line_number,
                line: truncate_at_char_boundary(line, MAX_HIT_LINE_BYTES).to_string(),
            });
            Ok(hits.len() < cap)
        });
        // An unreadable file is skipped like ripgrep does; it is not the caller's error.
        let _ = searcher.search_file(&matcher, &file, sink);
    }
    Ok(hits)
}
