//! OAuth 2.1 for Streamable HTTP servers (re-exported as `tackle_mcp::auth`), per the MCP
//! authorization spec: protected resource
//! metadata (from `WWW-Authenticate` or the well-known URLs), authorization server metadata,
//! dynamic client registration or a pre-registered client, PKCE, scopes from the challenge or
//! `scopes_supported`, refresh tokens. The protocol work is rmcp's `auth` module; this file
//! keeps the tokens (one file per server, `0600`, in a `0700` directory) and runs the login:
//! the authorization URL is shown, the redirect is received on `127.0.0.1`, the code
//! exchanged. Tokens are never logged or printed.

use rmcp::transport::auth::{
    AuthorizationManager, AuthorizationRequest, CredentialStore, OAuthState, StoredCredentials,
    WWWAuthenticateParams,
};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tackle_protocol::config::McpOAuthConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// How long `login` waits for the browser to come back.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);
/// Bytes of a redirect request read before it is refused.
const MAX_REDIRECT_REQUEST: usize = 16 * 1024;
/// Redirects followed in the unattended mode before giving up.
const MAX_HOPS: usize = 8;

/// Why a login (or a logout) did not work.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// The server (named) is configured with a command, not a `url`.
    #[error("`{0}` is not a Streamable HTTP server (`url`): only those log in with OAuth")]
    NotHttp(String),
    /// A step of the OAuth flow failed (discovery, registration, the token exchange, a
    /// redirect); holds what went wrong.
    #[error("the authorization failed: {0}")]
    Flow(String),
    /// The authorization server refused (its `error` in the redirect).
    #[error("the authorization server sent the browser back with an error: {0}")]
    Denied(String),
    /// Nobody completed the login in the browser in time.
    #[error("no redirect came back within {}s", LOGIN_TIMEOUT.as_secs())]
    Timeout,
    /// The token file could not be written or removed.
    #[error("cannot keep the token: {0}")]
    Store(String),
    /// The local port for the browser's redirect could not be opened.
    #[error("cannot listen for the redirect on 127.0.0.1: {0}")]
    Listen(String),
}

fn flow(e: impl std::fmt::Display) -> OAuthError {
    OAuthError::Flow(e.to_string())
}

/// The token file of `server` under `state_dir` (the name escaped, so no two names share one).
pub fn token_path(state_dir: &Path, server: &str) -> PathBuf {
    let mut file = String::new();
    for b in server.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            file.push(char::from(b));
        } else {
            file.push_str(&format!("%{b:02x}"));
        }
    }
    state_dir.join("mcp-oauth").join(format!("{file}.json"))
}

/// Is there a stored token for this server?
pub fn has_token(path: &Path) -> bool {
    path.is_file()
}

/// Delete the stored token (and a pending step-up); `Ok(false)` when there was no token.
pub fn logout(path: &Path) -> Result<bool, OAuthError> {
    let _ = std::fs::remove_file(step_up_path(path));
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(OAuthError::Store(e.to_string())),
    }
}

/// Where the challenge of a call refused for `insufficient_scope` waits for the next login,
/// beside the token file.
fn step_up_path(token_file: &Path) -> PathBuf {
    token_file.with_extension("step-up")
}

/// Keep `challenge` (a 403 `insufficient_scope` answer's `WWW-Authenticate`) for the next
/// `login`, which then asks for what it names on top of what was granted before. Returns the
/// scope the server asked for, when it named one.
pub(crate) fn record_step_up(token_file: &Path, challenge: &str) -> Option<String> {
    let store = FileStore {
        path: step_up_path(token_file),
    };
    if let Err(e) = store.write(challenge.as_bytes()) {
        tracing::warn!("cannot keep the scope the MCP server asked for: {e}");
    }
    challenge_scope(challenge)
}

/// The scope a `WWW-Authenticate` challenge names, if any.
fn challenge_scope(challenge: &str) -> Option<String> {
    let base = url::Url::parse("http://127.0.0.1/").ok()?;
    WWWAuthenticateParams::parse(challenge, &base)
        .scope
        .filter(|s| !s.trim().is_empty())
}

/// The scopes of a step-up login: those granted before, then those the server asked for,
/// then the configured ones, each once.
fn step_up_scopes(granted: &[String], challenge: &str, configured: &[String]) -> Vec<String> {
    let asked = challenge_scope(challenge).unwrap_or_default();
    let mut out: Vec<String> = Vec::new();
    for scope in granted
        .iter()
        .map(String::as_str)
        .chain(asked.split_whitespace())
        .chain(configured.iter().map(String::as_str))
    {
        if !scope.is_empty() && !out.iter().any(|s| s == scope) {
            out.push(scope.to_string());
        }
    }
    out
}

/// Credentials kept in one file, written whole (a temporary file renamed over it) at `0600`.
pub(crate) struct FileStore {
    pub path: PathBuf,
}

fn store_error(e: impl std::fmt::Display) -> rmcp::transport::auth::AuthError {
    rmcp::transport::auth::AuthError::CredentialStoreError(e.to_string())
}

impl FileStore {
    fn write(&self, text: &[u8]) -> std::io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        let tmp = self.path.with_extension("json.tmp");
        let _ = std::fs::remove_file(&tmp);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(text)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, &self.path)
    }
}

#[async_trait::async_trait]
impl CredentialStore for FileStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, rmcp::transport::auth::AuthError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                store_error(format!("{} is not a token file: {e}", self.path.display()))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(store_error(e)),
        }
    }

    async fn save(
        &self,
        credentials: StoredCredentials,
    ) -> Result<(), rmcp::transport::auth::AuthError> {
        let text = serde_json::to_vec(&credentials).map_err(store_error)?;
        self.write(&text).map_err(store_error)
    }

    async fn clear(&self) -> Result<(), rmcp::transport::auth::AuthError> {
        logout(&self.path).map(|_| ()).map_err(store_error)
    }
}

/// An authorization manager for `url` whose tokens live in `token_file`.
pub(crate) async fn manager(
    url: &str,
    token_file: &Path,
) -> Result<AuthorizationManager, rmcp::transport::auth::AuthError> {
    crate::wire::install_tls_provider();
    let mut manager = AuthorizationManager::new(url).await?;
    manager.set_credential_store(FileStore {
        path: token_file.to_path_buf(),
    });
    Ok(manager)
}

/// What a login needs.
pub struct Login<'a> {
    /// The server's name under `mcp_servers` (shown, and the client name registered).
    pub server: &'a str,
    /// The server's Streamable HTTP endpoint.
    pub url: &'a str,
    /// A pre-registered client and scopes from the config; `None`: Tackle registers itself
    /// and asks for the server's default scopes.
    pub oauth: Option<&'a McpOAuthConfig>,
    /// Where the tokens are written (see [`token_path`]); created or replaced on success.
    pub token_file: &'a Path,
    /// Follow the authorization URL's redirects here instead of waiting for a browser (for an
    /// authorization server that approves without a person, such as a test suite's).
    pub unattended: bool,
}

/// Log in: discover, register (unless pre-registered), show the authorization URL through
/// `show`, receive the redirect on 127.0.0.1, exchange the code and store the tokens.
pub async fn login(login: Login<'_>, show: &(dyn Fn(&str) + Sync)) -> Result<(), OAuthError> {
    crate::wire::install_tls_provider();
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| OAuthError::Listen(e.to_string()))?;
    let port = listener
        .local_addr()
        .map_err(|e| OAuthError::Listen(e.to_string()))?
        .port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    // A call refused for want of scope left its challenge: this login asks for that scope on
    // top of what was granted (SEP-835 step-up); otherwise the server is asked afresh.
    let step_up = std::fs::read_to_string(step_up_path(login.token_file))
        .ok()
        .filter(|c| !c.trim().is_empty());
    let granted = match &step_up {
        Some(_) => FileStore {
            path: login.token_file.to_path_buf(),
        }
        .load()
        .await
        .ok()
        .flatten()
        .map(|c| c.granted_scopes)
        .unwrap_or_default(),
        None => Vec::new(),
    };
    let challenge = match &step_up {
        Some(c) => Some(c.clone()),
        None => probe(login.url).await,
    };
    let manager = manager(login.url, login.token_file).await.map_err(flow)?;
    let mut state = OAuthState::Unauthorized(manager);
    let mut request = AuthorizationRequest::new(&redirect_uri)
        .with_client_name(format!("Tackle ({})", login.server));
    if let Some(challenge) = challenge {
        request = request.with_challenge(challenge);
    }
    let configured: &[String] = login.oauth.map(|o| o.scopes.as_slice()).unwrap_or(&[]);
    if let Some(challenge) = &step_up {
        let scopes = step_up_scopes(&granted, challenge, configured);
        if !scopes.is_empty() {
            request = request.with_scopes(scopes);
        }
    }
    if let Some(oauth) = login.oauth {
        if !oauth.scopes.is_empty() && request.scopes.is_empty() {
            request = request.with_scopes(oauth.scopes.iter().map(String::as_str));
        }
        if let Some(url) = oauth
            .client_metadata_url
            .as_deref()
            .filter(|s| !s.is_empty())
        {
            request = request.with_client_metadata_url(url);
        }
        if let Some(id) = oauth.client_id.as_deref().filter(|s| !s.is_empty()) {
            request = request.with_preregistered_client(id);
            if let Some(secret) = oauth.client_secret.as_deref().filter(|s| !s.is_empty()) {
                request = request.with_client_secret(secret);
            }
        }
    }
    if request.scopes.is_empty() {
        request = request.with_initial_scope_selection();
    }
    state.start_authorization(request).await.map_err(flow)?;
    let auth_url = state.get_authorization_url().await.map_err(flow)?;
    show(&auth_url);
    let callback = if login.unattended {
        follow(&auth_url, &redirect_uri).await?
    } else {
        tokio::time::timeout(LOGIN_TIMEOUT, receive(&listener, port))
            .await
            .map_err(|_| OAuthError::Timeout)??
    };
    if let Some(why) = query_param(&callback, "error") {
        let detail = query_param(&callback, "error_description").unwrap_or_default();
        return Err(OAuthError::Denied(
            format!("{why} {detail}").trim().to_string(),
        ));
    }
    state.handle_callback_url(&callback).await.map_err(flow)?;
    if !has_token(login.token_file) {
        return Err(OAuthError::Store(
            "the token exchange succeeded but no token was stored".into(),
        ));
    }
    let _ = std::fs::remove_file(step_up_path(login.token_file));
    Ok(())
}

/// The `WWW-Authenticate` challenge of an unauthenticated `initialize`, if the server sends
/// one (401 or 403); discovery falls back to the well-known URLs without it.
async fn probe(url: &str) -> Option<String> {
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "tackle", "version": env!("CARGO_PKG_VERSION")}}
    });
    crate::wire::install_tls_provider();
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string())
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .ok()?;
    if !matches!(response.status().as_u16(), 401 | 403) {
        return None;
    }
    response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// The unattended mode: follow the authorization URL's redirects until one points at
/// `redirect_uri`, and return that URL (nothing is opened in a browser).
async fn follow(auth_url: &str, redirect_uri: &str) -> Result<String, OAuthError> {
    crate::wire::install_tls_provider();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(flow)?;
    let mut at = url::Url::parse(auth_url).map_err(flow)?;
    for _ in 0..MAX_HOPS {
        let response = client.get(at.clone()).send().await.map_err(flow)?;
        let location = response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| {
                OAuthError::Flow(format!(
                    "the authorization page answered {} without a redirect: it needs a browser (run without the unattended mode)",
                    response.status()
                ))
            })?;
        let next = at.join(location).map_err(flow)?;
        if next.as_str().starts_with(redirect_uri) {
            return Ok(next.to_string());
        }
        at = next;
    }
    Err(OAuthError::Flow(format!(
        "more than {MAX_HOPS} redirects without reaching the redirect URI"
    )))
}

/// Wait for the browser's `GET /callback?…` and answer it; returns the full redirect URL.
async fn receive(listener: &TcpListener, port: u16) -> Result<String, OAuthError> {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            continue;
        };
        let mut buf = Vec::new();
        let mut chunk = [0u8; 2048];
        let head = loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break None,
                Ok(n) => {
                    buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
                    if buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        break Some(String::from_utf8_lossy(&buf).into_owned());
                    }
                    if buf.len() > MAX_REDIRECT_REQUEST {
                        break None;
                    }
                }
            }
        };
        let target = head.as_deref().and_then(|h| {
            let line = h.lines().next()?;
            let mut parts = line.split_whitespace();
            (parts.next()? == "GET").then_some(())?;
            parts.next().map(str::to_string)
        });
        match target {
            Some(t) if t.starts_with("/callback?") => {
                let page = "<!doctype html><title>Tackle</title><p>Tackle received the authorization; you can close this tab.</p>";
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                    page.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
                let _ = stream.shutdown().await;
                return Ok(format!("http://127.0.0.1:{port}{t}"));
            }
            _ => {
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
            }
        }
    }
}

fn query_param(url: &str, name: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_files_are_one_per_server_and_never_collide() {
        let dir = Path::new("/state");
        assert_eq!(
            token_path(dir, "remote"),
            Path::new("/state/mcp-oauth/remote.json")
        );
        assert_ne!(token_path(dir, "a.b"), token_path(dir, "a_b"));
        assert_eq!(
            token_path(dir, "../x"),
            Path::new("/state/mcp-oauth/%2e%2e%2fx.json")
        );
    }

    #[test]
    fn a_step_up_asks_for_what_was_granted_and_what_the_server_named_each_once() {
        let challenge = r#"Bearer scope="mcp:basic mcp:write", error="insufficient_scope""#;
        assert_eq!(
            step_up_scopes(
                &["mcp:basic".into(), "profile".into()],
                challenge,
                &["profile".into(), "extra".into()]
            ),
            ["mcp:basic", "profile", "mcp:write", "extra"]
        );
        assert_eq!(
            step_up_scopes(&[], "Bearer error=\"insufficient_scope\"", &[]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_recorded_step_up_is_kept_0600_and_logout_forgets_it() {
        let tmp = tempfile::tempdir().unwrap();
        let token = token_path(tmp.path(), "srv");
        let scope = record_step_up(&token, r#"Bearer scope="a b", error="insufficient_scope""#);
        assert_eq!(scope.as_deref(), Some("a b"));
        let kept = step_up_path(&token);
        let mode = std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(!logout(&token).unwrap());
        assert!(!kept.exists());
    }

    #[tokio::test]
    async fn the_store_writes_0600_in_a_0700_directory_and_logout_removes_it() {
        let tmp = tempfile::tempdir().unwrap();
        let path = token_path(tmp.path(), "srv");
        let store = FileStore { path: path.clone() };
        assert!(store.load().await.unwrap().is_none());
        store
            .save(StoredCredentials::new("client".into(), None, vec![], None))
            .await
            .unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700);
        assert_eq!(store.load().await.unwrap().unwrap().client_id, "client");
        assert!(logout(&path).unwrap());
        assert!(!logout(&path).unwrap());
    }

    #[tokio::test]
    async fn the_redirect_listener_takes_the_callback_and_refuses_other_paths() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let waiting = tokio::spawn(async move { receive(&listener, port).await });
        crate::wire::install_tls_provider();
        let client = reqwest::Client::new();
        let other = client
            .get(format!("http://127.0.0.1:{port}/favicon.ico"))
            .send()
            .await
            .unwrap();
        assert_eq!(other.status().as_u16(), 404);
        let ok = client
            .get(format!(
                "http://127.0.0.1:{port}/callback?code=abc&state=xyz"
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(ok.status().as_u16(), 200);
        let url = waiting.await.unwrap().unwrap();
        assert_eq!(query_param(&url, "code").as_deref(), Some("abc"));
        assert_eq!(query_param(&url, "state").as_deref(), Some("xyz"));
    }
}
