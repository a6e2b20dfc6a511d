//! Shared set-up for the host tests: a workspace, an outside directory, a state dir, a host.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use tackle_host::{HostConfig, NativeHostProvider};
use tackle_protocol::{CallScope, ExecCommand, ExecRequest, Grants, HostProvider, ToolHost};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

pub struct Fixture {
    pub ws: TempDir,
    pub outside: TempDir,
    pub state: TempDir,
    pub cancel: CancellationToken,
}

impl Fixture {
    pub fn new() -> Self {
        Self {
            ws: tempfile::tempdir().unwrap(),
            outside: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
            cancel: CancellationToken::new(),
        }
    }

    /// Canonical workspace path (the tempdir may sit under a symlinked /tmp).
    pub fn ws(&self) -> PathBuf {
        std::fs::canonicalize(self.ws.path()).unwrap()
    }

    pub fn outside(&self) -> PathBuf {
        std::fs::canonicalize(self.outside.path()).unwrap()
    }

    pub fn config(&self) -> HostConfig {
        HostConfig::new(self.state.path())
    }

    pub fn host(&self, grants: Grants) -> Arc<dyn ToolHost> {
        self.host_with(self.config(), grants)
    }

    pub fn host_with(&self, config: HostConfig, grants: Grants) -> Arc<dyn ToolHost> {
        let scope = CallScope {
            tool: "test".into(),
            session_id: "sess-1".into(),
            agent: "default".into(),
            workspace: self.ws.path().to_path_buf(),
            grants,
            cancel: self.cancel.clone(),
            approved: false,
        };
        NativeHostProvider::new(config).scoped(&scope)
    }

    pub fn write(&self, rel: &str, data: &str) -> PathBuf {
        let p = self.ws().join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, data).unwrap();
        p
    }
}

pub fn is_denied<T: std::fmt::Debug>(r: &Result<T, tackle_protocol::HostError>) -> bool {
    matches!(r, Err(tackle_protocol::HostError::Denied(_)))
}

pub fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

/// A shell line to run in the workspace, with a generous timeout.
pub fn sh(line: &str) -> ExecRequest {
    ExecRequest {
        command: ExecCommand::Shell(line.into()),
        cwd: None,
        timeout: std::time::Duration::from_secs(20),
        env: Vec::new(),
        stdin: None,
        max_output_bytes: 64 * 1024,
        output_lines: None,
        program_sha256: None,
        data_values: Vec::new(),
    }
}
