//! A `ToolHost` for unit tests that records every capability asked for.
//!
//! Files live in an in-memory map keyed by absolute path (relative paths are joined to the
//! workspace, `/ws` by default). `exec` and `http` answer from scripted queues, in order;
//! an empty queue is an `Unsupported` error so a test notices a call it did not expect.
//! `deny_matching("rm")` makes every capability whose summary contains `rm` come back denied,
//! which is enough to test how a tool reports a denial. `search` matches by plain substring
//! (case-folded when asked); regex behaviour is covered by the conformance suite on the real host.

use async_trait::async_trait;
use std::collections::{BTreeMap, VecDeque};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tackle_protocol::{
    Capability, Decision, DirEntry, ExecOutput, ExecRequest, FileContent, Grants, HostError,
    HttpRequest, HttpResponse, ListRequest, ReadRequest, SearchHit, SearchRequest, ToolContext,
    ToolHost, WriteReport, WriteRequest,
};

#[derive(Default)]
struct State {
    files: BTreeMap<PathBuf, Vec<u8>>,
    exec_replies: VecDeque<Result<ExecOutput, HostError>>,
    http_replies: VecDeque<Result<HttpResponse, HostError>>,
    capabilities: Vec<Capability>,
    exec_requests: Vec<ExecRequest>,
    http_requests: Vec<HttpRequest>,
    deny: Vec<String>,
}

pub(crate) struct MockHost {
    workspace: PathBuf,
    grants: Grants,
    state: Mutex<State>,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    // A test that panicked while holding the lock already failed; keep the data usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `a/./b/../c` → `a/c`, without touching a disk.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[allow(dead_code)] // each test module uses a different subset
impl MockHost {
    pub(crate) fn new() -> Self {
        Self {
            workspace: PathBuf::from("/ws"),
            grants: Grants::default(),
            state: Mutex::new(State::default()),
        }
    }

    /// A `ToolContext` whose host is this mock, rooted at the mock's workspace.
    pub(crate) fn context(self: &Arc<Self>) -> ToolContext {
        let scope = tackle_protocol::CallScope {
            tool: "test".into(),
            session_id: "s1".into(),
            agent: "default".into(),
            workspace: self.workspace.clone(),
            grants: Grants::default(),
            cancel: Default::default(),
            approved: false,
        };
        ToolContext::new(&scope, "test", self.clone())
    }

    pub(crate) fn abs(&self, path: impl AsRef<Path>) -> PathBuf {
        normalize(&self.workspace.join(path))
    }

    pub(crate) fn with_file(self, path: &str, data: impl Into<Vec<u8>>) -> Self {
        let p = self.abs(path);
        lock(&self.state).files.insert(p, data.into());
        self
    }

    pub(crate) fn reply_exec(&self, reply: Result<ExecOutput, HostError>) {
        lock(&self.state).exec_replies.push_back(reply);
    }

    pub(crate) fn reply_http(&self, reply: Result<HttpResponse, HostError>) {
        lock(&self.state).http_replies.push_back(reply);
    }

    /// Deny every capability whose [`Capability::summary`] contains `needle`.
    pub(crate) fn deny_matching(&self, needle: &str) {
        lock(&self.state).deny.push(needle.to_string());
    }

    pub(crate) fn file(&self, path: &str) -> Option<Vec<u8>> {
        lock(&self.state).files.get(&self.abs(path)).cloned()
    }

    pub(crate) fn capabilities(&self) -> Vec<Capability> {
        lock(&self.state).capabilities.clone()
    }

    pub(crate) fn exec_requests(&self) -> Vec<ExecRequest> {
        lock(&self.state).exec_requests.clone()
    }

    pub(crate) fn http_requests(&self) -> Vec<HttpRequest> {
        lock(&self.state).http_requests.clone()
    }

    /// Record the capability and decide it; every host method goes through here first.
    fn gate(&self, cap: Capability) -> Result<(), HostError> {
        let decision = self.decide(&cap);
        lock(&self.state).capabilities.push(cap);
        match decision.is_denied() {
            true => Err(HostError::Denied(decision)),
            false => Ok(()),
        }
    }

    /// Denied when a `deny_matching` needle occurs in the capability's summary.
    fn decide(&self, cap: &Capability) -> Decision {
        let summary = cap.summary();
        let st = lock(&self.state);
        match st.deny.iter().find(|d| summary.contains(d.as_str())) {
            Some(d) => Decision::deny(
                format!("mock.deny = {d:?}"),
                format!("`{summary}` is denied by the test's rule {d:?}"),
            ),
            None => Decision::allow("mock", "allowed by the mock host"),
        }
    }
}

/// The mock's glob: only the text after the last `*` must end the path (`**/*.rs` → `.rs`).
fn suffix_glob(glob: &str, path: &Path) -> bool {
    let tail = glob.rsplit('*').next().unwrap_or(glob);
    path.to_string_lossy().ends_with(tail)
}

/// A successful `ExecOutput` for scripting replies.
#[allow(dead_code)]
pub(crate) fn exec_ok(code: i32, stdout: &str, stderr: &str) -> ExecOutput {
    ExecOutput {
        exit_code: Some(code),
        stdout: stdout.into(),
        stderr: stderr.into(),
        duration: Duration::from_millis(5),
        truncated: false,
        timed_out: false,
    }
}

/// An HTTP reply for scripting, with a JSON content type.
#[allow(dead_code)]
pub(crate) fn http_json(status: u16, body: &str) -> HttpResponse {
    HttpResponse {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.as_bytes().to_vec(),
        final_url: String::new(),
        redirects: Vec::new(),
        truncated: false,
    }
}

#[async_trait]
impl ToolHost for MockHost {
    fn workspace(&self) -> &Path {
        &self.workspace
    }

    fn grants(&self) -> &Grants {
        &self.grants
    }

    async fn check(&self, capability: &Capability) -> Decision {
        self.decide(capability)
    }

    async fn read(&self, req: ReadRequest) -> Result<FileContent, HostError> {
        let path = self.abs(&req.path);
        self.gate(Capability::FileRead { path: path.clone() })?;
        let st = lock(&self.state);
        let data = st
            .files
            .get(&path)
            .ok_or_else(|| HostError::NotFound { path: path.clone() })?;
        let start = usize::try_from(req.offset)
            .unwrap_or(usize::MAX)
            .min(data.len());
        let cap = req
            .max_bytes
            .map_or(usize::MAX, |m| usize::try_from(m).unwrap_or(usize::MAX));
        let end = start.saturating_add(cap).min(data.len());
        Ok(FileContent {
            path,
            bytes: data.get(start..end).unwrap_or_default().to_vec(),
            total_size: data.len() as u64,
            version: None,
        })
    }

    async fn write(&self, req: WriteRequest) -> Result<WriteReport, HostError> {
        let path = self.abs(&req.path);
        self.gate(Capability::FileWrite { path: path.clone() })?;
        let mut st = lock(&self.state);
        let bytes_written = req.data.len() as u64;
        let created = st.files.insert(path.clone(), req.data).is_none();
        Ok(WriteReport {
            path,
            bytes_written,
            created,
        })
    }

    async fn list(&self, req: ListRequest) -> Result<Vec<DirEntry>, HostError> {
        let root = self.abs(&req.path);
        self.gate(Capability::FileRead { path: root.clone() })?;
        let st = lock(&self.state);
        let mut out: Vec<DirEntry> = Vec::new();
        for (path, data) in &st.files {
            let Ok(rel) = path.strip_prefix(&root) else {
                continue;
            };
            // Every ancestor directory below the root is an entry too.
            let comps: Vec<_> = rel.components().collect();
            for depth in 1..=comps.len() {
                if req.max_depth.is_some_and(|m| depth > m) {
                    break;
                }
                let sub: PathBuf = comps.iter().take(depth).collect();
                let is_dir = depth < comps.len();
                let hidden = sub.to_string_lossy().split('/').any(|c| c.starts_with('.'));
                let glob_ok = req.glob.as_deref().is_none_or(|g| suffix_glob(g, &sub));
                if (hidden && !req.include_hidden) || !glob_ok || out.iter().any(|e| e.path == sub)
                {
                    continue;
                }
                let size = if is_dir { 0 } else { data.len() as u64 };
                out.push(DirEntry {
                    path: sub,
                    is_dir,
                    size,
                });
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out.truncate(req.max_entries);
        Ok(out)
    }

    async fn search(&self, req: SearchRequest) -> Result<Vec<SearchHit>, HostError> {
        let root = self.abs(&req.root);
        self.gate(Capability::FileRead { path: root.clone() })?;
        let st = lock(&self.state);
        let fold = |s: &str| {
            if req.case_insensitive {
                s.to_lowercase()
            } else {
                s.to_string()
            }
        };
        let needle = fold(&req.pattern);
        let mut hits = Vec::new();
        for (path, data) in &st.files {
            let Ok(rel) = path.strip_prefix(&root) else {
                continue;
            };
            for (i, line) in String::from_utf8_lossy(data).lines().enumerate() {
                if fold(line).contains(&needle) && hits.len() < req.max_results {
                    hits.push(SearchHit {
                        path: rel.to_path_buf(),
                        line_number: i as u64 + 1,
                        line: line.to_string(),
                    });
                }
            }
        }
        Ok(hits)
    }

    async fn exec(&self, req: ExecRequest) -> Result<ExecOutput, HostError> {
        let cap = match &req.command {
            tackle_protocol::ExecCommand::Shell(c) => Capability::Shell { command: c.clone() },
            tackle_protocol::ExecCommand::Argv { program, args } => Capability::Exec {
                program: program.clone(),
                args: args.clone(),
            },
        };
        self.gate(cap)?;
        let mut st = lock(&self.state);
        st.exec_requests.push(req);
        st.exec_replies
            .pop_front()
            .unwrap_or(Err(HostError::Unsupported("an unscripted exec")))
    }

    async fn http(&self, req: HttpRequest) -> Result<HttpResponse, HostError> {
        self.gate(Capability::Network {
            method: req.method.clone(),
            url: req.url.clone(),
        })?;
        let mut st = lock(&self.state);
        st.http_requests.push(req);
        st.http_replies
            .pop_front()
            .unwrap_or(Err(HostError::Unsupported("an unscripted http request")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn mock_records_capabilities_and_applies_deny_rules() {
        let host = MockHost::new().with_file("a/b.txt", "hello");
        host.deny_matching("secret");
        let read = host.read(ReadRequest::whole("a/./b.txt")).await;
        assert_eq!(read.map(|c| c.bytes), Ok(b"hello".to_vec()));
        let denied = host.read(ReadRequest::whole("secret.txt")).await;
        assert!(matches!(denied, Err(HostError::Denied(_))));
        assert_eq!(
            host.capabilities(),
            vec![
                Capability::FileRead {
                    path: "/ws/a/b.txt".into()
                },
                Capability::FileRead {
                    path: "/ws/secret.txt".into()
                },
            ]
        );
    }

    #[tokio::test]
    async fn mock_lists_directories_implied_by_files() {
        let host = MockHost::new()
            .with_file("src/x.rs", "")
            .with_file(".git/HEAD", "");
        let req = ListRequest {
            path: ".".into(),
            max_depth: None,
            include_hidden: false,
            respect_gitignore: true,
            glob: None,
            max_entries: 10,
        };
        let paths: Vec<_> = host
            .list(req)
            .await
            .unwrap_or_default()
            .into_iter()
            .map(|e| e.path)
            .collect();
        assert_eq!(paths, vec![PathBuf::from("src"), PathBuf::from("src/x.rs")]);
    }
}
