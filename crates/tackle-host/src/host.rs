//! [`NativeHost`] (one call's capability boundary) and [`NativeHostProvider`] (makes them).

use crate::config::HostConfig;
use crate::exec::{self, ExecScope};
use crate::net::{self, ClientConfig, Clients, Http};
use crate::paths::{canonical_roots, canonicalize_lenient, PathGuard};
use crate::{fs, walk};
use async_trait::async_trait;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use tackle_policy::path::{roots, Access};
use tackle_protocol::{
    CallScope, Capability, Decision, DirEntry, ExecCommand, ExecOutput, ExecRequest, FileContent,
    Grants, HostError, HostProvider, HttpRequest, HttpResponse, ListRequest, NetworkGrant,
    ReadRequest, SearchHit, SearchRequest, ShellGrant, ToolHost, WriteReport, WriteRequest,
};
use tokio_util::sync::CancellationToken;

/// What every scoped host shares: the configuration and the pooled HTTP clients.
struct Shared {
    config: HostConfig,
    clients: Arc<Clients>,
    /// Every session a host was scoped for, whose `TMPDIR` goes at the end.
    sessions: std::sync::Mutex<std::collections::HashSet<String>>,
}

/// Makes a [`NativeHost`] for each call. Build one at start-up and keep it.
#[derive(Clone)]
pub struct NativeHostProvider {
    shared: Arc<Shared>,
}

impl NativeHostProvider {
    /// A provider for every call of this process. HTTP clients and per-session state (such as
    /// each session's TMPDIR) are shared by the hosts it scopes; nothing is probed or opened
    /// until a call needs it.
    pub fn new(config: HostConfig) -> Self {
        Self {
            shared: Arc::new(Shared {
                config,
                clients: Arc::default(),
                sessions: Default::default(),
            }),
        }
    }

    /// The concrete host for `scope` (what [`HostProvider::scoped`] wraps in an `Arc`).
    pub fn host(&self, scope: &CallScope) -> NativeHost {
        NativeHost::new(self.shared.clone(), scope)
    }

    /// The configuration the provider was made with.
    pub fn config(&self) -> &HostConfig {
        &self.shared.config
    }

    /// Remove the session's `TMPDIR` (call when a session ends). Missing is not an error.
    pub fn end_session(&self, session_id: &str) -> std::io::Result<()> {
        let dir = session_tmpdir(&self.shared.config, session_id);
        match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

fn session_tmpdir(config: &HostConfig, session_id: &str) -> PathBuf {
    config
        .state_dir
        .join("tmp")
        .join(session_dir_name(session_id))
}

impl HostProvider for NativeHostProvider {
    fn scoped(&self, scope: &CallScope) -> Arc<dyn ToolHost> {
        Arc::new(self.host(scope))
    }

    fn end_all_sessions(&self) {
        let sessions: Vec<String> = match self.shared.sessions.lock() {
            Ok(mut set) => set.drain().collect(),
            Err(_) => return,
        };
        for id in sessions {
            if let Err(e) = self.end_session(&id) {
                tracing::warn!("could not remove the TMPDIR of session {id}: {e}");
            }
        }
    }
}

/// The capability boundary for one call: canonical workspace, resolved grants, cancel token.
pub struct NativeHost {
    shared: Arc<Shared>,
    grants: Grants,
    /// The workspace as the call names it, resolved into `guard` at the first use.
    workspace: PathBuf,
    /// The canonical workspace and filesystem roots. Resolving them walks every component of
    /// every root (one `statx` each), which is most of a call's cost for tools that never touch
    /// a path (`calculate`, memory, agents), so it waits until a path is asked about.
    guard: OnceLock<Arc<PathGuard>>,
    shell: ShellGrant,
    network: NetworkGrant,
    session_id: String,
    /// The session's `TMPDIR`, named at the first use (most calls run no command).
    tmpdir: OnceLock<PathBuf>,
    cancel: CancellationToken,
    approved: bool,
}

impl NativeHost {
    fn new(shared: Arc<Shared>, scope: &CallScope) -> Self {
        Self {
            grants: scope.grants.clone(),
            workspace: scope.workspace.clone(),
            guard: OnceLock::new(),
            shell: scope.grants.shell.clone().unwrap_or_default(),
            network: scope.grants.network.clone().unwrap_or_default(),
            session_id: scope.session_id.clone(),
            tmpdir: OnceLock::new(),
            cancel: scope.cancel.clone(),
            approved: scope.approved,
            shared,
        }
    }

    /// The canonical workspace and roots, resolved on first use and then fixed for the call.
    fn guard(&self) -> &Arc<PathGuard> {
        self.guard.get_or_init(|| {
            let home = self.shared.config.home.clone();
            let workspace = canonicalize_lenient(&self.workspace)
                .map(|c| c.path)
                .unwrap_or_else(|_| self.workspace.clone());
            let roots =
                canonical_roots(roots(self.grants.fs.as_ref(), &workspace, home.as_deref()));
            Arc::new(PathGuard {
                workspace,
                home,
                roots,
            })
        })
    }

    /// The per-session `TMPDIR` children get (created at the first `exec`).
    /// The session is remembered then, so that [`HostProvider::end_all_sessions`] removes the
    /// directory.
    pub fn tmpdir(&self) -> &Path {
        self.tmpdir.get_or_init(|| {
            if let Ok(mut set) = self.shared.sessions.lock() {
                if !set.contains(&self.session_id) {
                    set.insert(self.session_id.clone());
                }
            }
            session_tmpdir(&self.shared.config, &self.session_id)
        })
    }

    fn http_ctx(&self) -> Http<'_> {
        let c = &self.shared.config;
        Http {
            clients: &self.shared.clients,
            grant: &self.network,
            operator_hosts: &c.operator_hosts,
            client: ClientConfig {
                user_agent: &c.user_agent,
                dns_overrides: &c.dns_overrides,
            },
            body_ceiling: c.max_http_bytes,
            cancel: &self.cancel,
        }
    }
}

/// A directory name that cannot climb out of `state_dir/tmp`.
fn session_dir_name(session: &str) -> String {
    let clean: String = session
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if clean.is_empty() {
        "session".to_string()
    } else {
        format!("session-{clean}")
    }
}

/// Run blocking fs work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, HostError> + Send + 'static,
) -> Result<T, HostError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(HostError::Io(format!(
            "the file operation did not finish: {e}"
        )))
    })
}

#[async_trait]
impl ToolHost for NativeHost {
    fn workspace(&self) -> &Path {
        &self.guard().workspace
    }

    fn canonical(&self, path: &Path) -> PathBuf {
        self.guard()
            .resolve(path)
            .map(|c| c.path)
            .unwrap_or_else(|_| path.to_path_buf())
    }

    fn grants(&self) -> &Grants {
        &self.grants
    }

    async fn check(&self, capability: &Capability) -> Decision {
        match capability {
            Capability::FileRead { path } => self.guard().explain(path, Access::Read),
            Capability::FileWrite { path } => self.guard().explain(path, Access::Write),
            Capability::Shell { command } => {
                exec::decide(&ExecCommand::Shell(command.clone()), &self.shell).await
            }
            Capability::Exec { program, args } => {
                let cmd = ExecCommand::Argv {
                    program: program.clone(),
                    args: args.clone(),
                };
                exec::decide(&cmd, &self.shell).await
            }
            Capability::Network { method, url } => net::decide(method, url, &self.network),
        }
    }

    async fn read(&self, req: ReadRequest) -> Result<FileContent, HostError> {
        let guard = Arc::clone(self.guard());
        let ceiling = self.shared.config.max_read_bytes;
        blocking(move || fs::read(&guard, &req, ceiling)).await
    }

    async fn write(&self, req: WriteRequest) -> Result<WriteReport, HostError> {
        let guard = Arc::clone(self.guard());
        blocking(move || fs::write(&guard, &req)).await
    }

    async fn list(&self, req: ListRequest) -> Result<Vec<DirEntry>, HostError> {
        let guard = Arc::clone(self.guard());
        let ceiling = self.shared.config.max_list_entries;
        blocking(move || walk::list(&guard, &req, ceiling)).await
    }

    async fn search(&self, req: SearchRequest) -> Result<Vec<SearchHit>, HostError> {
        let guard = Arc::clone(self.guard());
        let ceiling = self.shared.config.max_search_results;
        blocking(move || walk::search(&guard, &req, ceiling)).await
    }

    async fn exec(&self, req: ExecRequest) -> Result<ExecOutput, HostError> {
        let c = &self.shared.config;
        let scope = ExecScope {
            guard: self.guard(),
            shell: &self.shell,
            tmpdir: self.tmpdir(),
            passthrough: &c.env_passthrough,
            output_ceiling: c.max_output_bytes,
            cancel: &self.cancel,
            approved: self.approved,
            hidden: &c.hidden,
            network: self.grants.network.as_ref(),
            net_bridge: c.net_bridge.as_deref(),
            sandbox_init: c.sandbox_init.as_deref(),
            dns_overrides: &c.dns_overrides,
            sandbox_required: c.sandbox_required,
            decoy_env: &c.decoy_env,
            decoy_home_files: &c.decoy_home_files,
        };
        exec::run(&scope, req).await
    }

    async fn http(&self, req: HttpRequest) -> Result<HttpResponse, HostError> {
        self.http_ctx().fetch(req).await
    }

    fn sandbox_view(&self) -> Option<serde_json::Value> {
        let c = &self.shared.config;
        let guard = self.guard();
        let rules = crate::sandbox_view::enforced_rules(&self.shell);
        let namespaces = crate::bwrap::usable();
        let Ok(_) = namespaces else {
            let why = namespaces.err().map(|e| e.to_string()).unwrap_or_default();
            return Some(serde_json::json!({
                "namespaces": false,
                "why": why,
                "rules": rules,
                "lost": crate::report::lost_without_namespaces(),
            }));
        };
        let bridge: Vec<PathBuf> = match (&self.grants.network, &c.net_bridge) {
            (Some(_), Some(b)) => vec![b.clone()],
            _ => Vec::new(),
        };
        let tmpdir = session_tmpdir(c, &self.session_id);
        let view = crate::sandbox_view::for_command(&crate::sandbox_view::Inputs {
            shell: &self.shell,
            cwd: &guard.workspace,
            workspace: &guard.workspace,
            tmpdir: &tmpdir,
            read: &guard.roots.read,
            write: &guard.roots.write,
            home: guard.home.as_deref(),
            home_files: &c.decoy_home_files,
            hidden: &c.hidden,
            also_read: &bridge,
            proxied_network: !bridge.is_empty(),
        });
        serde_json::to_value(&view).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_cannot_escape_the_tmp_dir() {
        assert_eq!(session_dir_name("../../etc"), "session-______etc");
        assert_eq!(session_dir_name(""), "session");
    }
}
