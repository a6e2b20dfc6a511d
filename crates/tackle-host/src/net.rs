//! The SSRF-guarded HTTP client: every hop checked by the URL guard, every resolved address
//! checked by the IP guard, the connection pinned to a checked address, bodies capped while
//! streaming, one deadline for the whole exchange.
//!
//! reqwest's own redirect following is off; [`Http::fetch`] follows redirects itself so each
//! hop passes `check_url` against the same grant. Name resolution happens once, in
//! [`PinnedResolver`], which hands reqwest only addresses that passed `check_ip`; reqwest
//! connects to exactly those, so a second (rebinding) lookup never happens.

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{HeaderName, HeaderValue, LOCATION};
use reqwest::{Client, Method, StatusCode};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tackle_policy::net::{check_ip, check_url};
use tackle_protocol::{Decision, HostError, HttpRequest, HttpResponse, NetworkGrant};
use tokio_util::sync::CancellationToken;
use url::Url;

/// Redirect hops followed before giving up.
pub const MAX_REDIRECTS: usize = 10;

/// Which addresses a client's resolver lets through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Public addresses only (the default grant).
    Public,
    /// Also loopback and private ranges (`allow_private: true`).
    Private,
    /// An operator-written destination: resolved and pinned, not filtered.
    Operator,
}

/// A resolved address that the IP guard refused; found again in reqwest's error chain.
#[derive(Debug, thiserror::Error)]
#[error("{host} resolves to {ip}: {}", decision.why)]
pub(crate) struct BlockedAddress {
    host: String,
    ip: IpAddr,
    decision: Decision,
}

#[derive(Debug, thiserror::Error)]
#[error("{host} did not resolve to any address")]
struct NoAddress {
    host: String,
}

/// Resolve once with the system resolver (or the operator's overrides) and let through only
/// addresses the guard allows.
#[derive(Debug, Clone)]
pub(crate) struct PinnedResolver {
    reach: Reach,
    overrides: Arc<[(String, IpAddr)]>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl PinnedResolver {
    pub(crate) fn new(reach: Reach, overrides: &[(String, IpAddr)]) -> Self {
        Self {
            reach,
            overrides: overrides.to_vec().into(),
        }
    }

    pub(crate) async fn lookup(&self, host: String) -> Result<Vec<SocketAddr>, BoxError> {
        let fixed: Vec<SocketAddr> = self
            .overrides
            .iter()
            .filter(|(name, _)| name.eq_ignore_ascii_case(&host))
            .map(|(_, ip)| SocketAddr::new(*ip, 0))
            .collect();
        let addrs: Vec<SocketAddr> = if fixed.is_empty() {
            tokio::net::lookup_host((host.as_str(), 0)).await?.collect()
        } else {
            fixed
        };
        if addrs.is_empty() {
            return Err(Box::new(NoAddress { host }));
        }
        if self.reach != Reach::Operator {
            // Every address is checked, and one bad address fails the name: a name that
            // points at both public and private space is not one to trust.
            for a in &addrs {
                let decision = check_ip(a.ip(), self.reach == Reach::Private);
                if !decision.is_allowed() {
                    return Err(Box::new(BlockedAddress {
                        host,
                        ip: a.ip(),
                        decision,
                    }));
                }
            }
        }
        Ok(addrs)
    }
}

impl Resolve for PinnedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let this = self.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs = this.lookup(host).await?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// One lazily built client per [`Reach`], shared by every scoped host so connections pool.
#[derive(Default)]
pub(crate) struct Clients {
    public: OnceLock<Result<Client, NetError>>,
    private: OnceLock<Result<Client, NetError>>,
    operator: OnceLock<Result<Client, NetError>>,
}

/// Why a client could not be made (kept once per reach, as the client would be).
#[derive(Debug, thiserror::Error)]
pub(crate) enum NetError {
    #[error("could not build the HTTP client: {0}")]
    ClientBuild(#[source] reqwest::Error),
}

impl Clients {
    fn get(&self, reach: Reach, cfg: &ClientConfig<'_>) -> Result<Client, HostError> {
        let cell = match reach {
            Reach::Public => &self.public,
            Reach::Private => &self.private,
            Reach::Operator => &self.operator,
        };
        // The protocol's error carries text: the cached error stays here for the next call.
        match cell.get_or_init(|| build_client(reach, cfg)) {
            Ok(client) => Ok(client.clone()),
            Err(e) => Err(HostError::Network(e.to_string())),
        }
    }
}

/// What a client is built from (the first request of each reach builds it).
pub(crate) struct ClientConfig<'a> {
    pub user_agent: &'a str,
    pub dns_overrides: &'a [(String, IpAddr)],
}

fn build_client(reach: Reach, cfg: &ClientConfig<'_>) -> Result<Client, NetError> {
    install_tls_provider();
    let resolver = PinnedResolver {
        reach,
        overrides: cfg.dns_overrides.into(),
    };
    Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(resolver)
        .connect_timeout(Duration::from_secs(15))
        .user_agent(cfg.user_agent)
        .build()
        .map_err(NetError::ClientBuild)
}

/// Everything a fetch needs from the scoped host.
pub(crate) struct Http<'a> {
    pub clients: &'a Arc<Clients>,
    pub grant: &'a NetworkGrant,
    pub operator_hosts: &'a [String],
    pub client: ClientConfig<'a>,
    pub body_ceiling: u64,
    pub cancel: &'a CancellationToken,
}

/// The URL guard plus a check of a literal IP host, which reqwest never sends to the
/// resolver. `Ok` is the URL as the guard parsed it: the one that is then fetched.
fn checked(method: &str, url: &str, grant: &NetworkGrant) -> Result<Url, Decision> {
    let c = check_url(method, url, grant)?;
    if let Some(ip) = literal_ip(&c.url) {
        let d = check_ip(ip, grant.allow_private);
        if !d.is_allowed() {
            return Err(d);
        }
    }
    Ok(c.url)
}

/// The network decision for `--explain` (no DNS).
pub(crate) fn decide(method: &str, url: &str, grant: &NetworkGrant) -> Decision {
    match checked(method, url, grant) {
        Err(d) => d,
        Ok(url) => Decision::allow(
            "grants.network",
            format!("{method} {url} is allowed by the network grant"),
        ),
    }
}

fn literal_ip(url: &Url) -> Option<IpAddr> {
    match url.host()? {
        url::Host::Ipv4(ip) => Some(IpAddr::V4(ip)),
        url::Host::Ipv6(ip) => Some(IpAddr::V6(ip)),
        url::Host::Domain(_) => None,
    }
}

/// Does `url` point at a destination the operator wrote into the config?
pub(crate) fn is_operator_url(url: &Url, operator_hosts: &[String]) -> bool {
    operator_hosts.iter().any(|entry| {
        if entry.contains("://") {
            return Url::parse(entry).is_ok_and(|e| e.origin() == url.origin());
        }
        let Ok(e) = Url::parse(&format!("http://{entry}")) else {
            return false;
        };
        let same_host = matches!((e.host_str(), url.host_str()), (Some(a), Some(b)) if a.eq_ignore_ascii_case(b));
        same_host && (e.port().is_none() || e.port() == url.port_or_known_default())
    })
}

/// A hop's request, mutated as redirects change method and body.
struct Hop {
    url: Url,
    method: Method,
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
}

impl Http<'_> {
    pub(crate) async fn fetch(&self, req: HttpRequest) -> Result<HttpResponse, HostError> {
        let timeout = req.timeout;
        tokio::select! {
            r = tokio::time::timeout(timeout, self.follow(req)) => r.unwrap_or(Err(HostError::Timeout(timeout))),
            _ = self.cancel.cancelled() => Err(HostError::Cancelled),
        }
    }

    async fn follow(&self, req: HttpRequest) -> Result<HttpResponse, HostError> {
        let method = Method::from_bytes(req.method.to_ascii_uppercase().as_bytes())
            .map_err(|_| HostError::Invalid(format!("{:?} is not an HTTP method", req.method)))?;
        let first = Url::parse(&req.url)
            .map_err(|e| HostError::Invalid(format!("{:?} is not a valid URL: {e}", req.url)))?;
        let trusted_first = req.operator_configured && is_operator_url(&first, self.operator_hosts);
        if req.operator_configured && !trusted_first {
            tracing::warn!(url = %first, "operator_configured request to a URL not in the operator's config; checking it like a model URL");
        }
        if !trusted_first {
            // The text as the model wrote it: parsing drops tabs and turns `\` into `/`,
            // which would hide an ambiguous URL from the raw-text checks.
            checked(method.as_str(), &req.url, self.grant).map_err(HostError::Denied)?;
        }
        let mut hop = Hop {
            url: first,
            method,
            headers: req.headers,
            body: req.body,
        };
        let mut redirects = Vec::new();
        for n in 0..=MAX_REDIRECTS {
            let reach = self.admit(&mut hop, n, n == 0 && trusted_first)?;
            let resp = self.send(&hop, reach).await?;
            let next = match redirect_target(&resp, &hop.url) {
                Some(next) if req.follow_redirects => next?,
                _ => return read_body(resp, req.max_bytes.min(self.body_ceiling), redirects).await,
            };
            redirect(&mut hop, resp.status(), next);
            redirects.push(hop.url.to_string());
        }
        Err(HostError::Network(format!(
            "more than {MAX_REDIRECTS} redirects; the last was to {}",
            hop.url
        )))
    }

    /// Check one hop; the answer is which resolver may carry it.
    fn admit(&self, hop: &mut Hop, n: usize, trusted: bool) -> Result<Reach, HostError> {
        if !matches!(hop.url.scheme(), "http" | "https") {
            return Err(HostError::Invalid(format!(
                "{}: only http and https URLs are fetched",
                hop.url
            )));
        }
        if trusted {
            return Ok(Reach::Operator);
        }
        match checked(hop.method.as_str(), hop.url.as_str(), self.grant) {
            Ok(url) => hop.url = url,
            Err(d) => return Err(HostError::Denied(at_hop(d, n, &hop.url))),
        }
        Ok(if self.grant.allow_private {
            Reach::Private
        } else {
            Reach::Public
        })
    }

    async fn send(&self, hop: &Hop, reach: Reach) -> Result<reqwest::Response, HostError> {
        let client = self.clients.get(reach, &self.client)?;
        let mut rb = client.request(hop.method.clone(), hop.url.clone());
        for (k, v) in &hop.headers {
            let (name, value) = header_pair(k, v)?;
            rb = rb.header(name, value);
        }
        if let Some(body) = &hop.body {
            rb = rb.body(body.clone());
        }
        rb.send().await.map_err(|e| send_error(e, &hop.url))
    }
}

/// Headers the host sets itself. `Host` would let a request reach another virtual host on a
/// checked address; the framing headers could smuggle a second request.
const HOST_MANAGED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "proxy-connection",
];

/// Headers some servers and frameworks obey *instead of* the request line: they would send
/// a `GET /v1/x` that the grant allowed to `/admin`, or as a `DELETE`.
const OVERRIDE_HEADERS: &[&str] = &[
    "x-http-method-override",
    "x-http-method",
    "x-method-override",
    "x-original-url",
    "x-rewrite-url",
    "x-original-uri",
    "x-forwarded-prefix",
    "x-forwarded-path",
];

fn header_pair(k: &str, v: &str) -> Result<(HeaderName, HeaderValue), HostError> {
    let name = HeaderName::from_bytes(k.as_bytes())
        .map_err(|_| HostError::Invalid(format!("{k:?} is not a valid header name")))?;
    if HOST_MANAGED_HEADERS.contains(&name.as_str()) {
        return Err(HostError::Invalid(format!(
            "header {k} is set by the host, not by tools"
        )));
    }
    if OVERRIDE_HEADERS.contains(&name.as_str()) {
        return Err(HostError::Invalid(format!(
            "header {k} would override the method or path the network grant checked; send the request to that method and path instead"
        )));
    }
    let value = HeaderValue::from_str(v)
        .map_err(|_| HostError::Invalid(format!("the value of header {k} is not valid")))?;
    Ok((name, value))
}

/// A denial at a redirect names the hop, so the model and the audit log see where it went.
fn at_hop(d: Decision, n: usize, url: &Url) -> Decision {
    if n == 0 {
        return d;
    }
    Decision {
        why: format!("redirect hop {n} to {url} refused: {}", d.why),
        ..d
    }
}

fn redirect_target(resp: &reqwest::Response, base: &Url) -> Option<Result<Url, HostError>> {
    let s = resp.status();
    let is_redirect = matches!(s.as_u16(), 301 | 302 | 303 | 307 | 308);
    let loc = resp.headers().get(LOCATION).filter(|_| is_redirect)?;
    let loc = match loc.to_str() {
        Ok(l) => l,
        Err(_) => {
            return Some(Err(HostError::Network(format!(
                "{base} redirected to an unreadable Location"
            ))))
        }
    };
    Some(base.join(loc).map_err(|e| {
        HostError::Network(format!("{base} redirected to an invalid URL {loc:?}: {e}"))
    }))
}

/// Apply the redirect semantics browsers use; credentials never cross to another origin.
fn redirect(hop: &mut Hop, status: StatusCode, next: Url) {
    let to_get = match status.as_u16() {
        303 => hop.method != Method::HEAD,
        301 | 302 => hop.method == Method::POST,
        _ => false,
    };
    if to_get {
        hop.method = Method::GET;
        hop.body = None;
    }
    if next.origin() != hop.url.origin() {
        hop.headers.retain(|(k, _)| !is_credential_header(k));
    }
    hop.url = next;
}

/// Headers that carry credentials: `Authorization` and `Cookie`, and the API-key headers
/// services invent (`X-Api-Key`, `X-Auth-Token`, `api-key`, `X-Goog-Api-Key`).
fn is_credential_header(name: &str) -> bool {
    const MARKS: &[&str] = &[
        "auth",
        "cookie",
        "key",
        "token",
        "secret",
        "session",
        "password",
        "credential",
        "signature",
    ];
    let name = name.to_ascii_lowercase();
    MARKS.iter().any(|m| name.contains(m))
}

/// Map reqwest's error, surfacing a resolver denial as a policy denial.
fn send_error(e: reqwest::Error, url: &Url) -> HostError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(err) = source {
        if let Some(blocked) = err.downcast_ref::<BlockedAddress>() {
            let why = format!("{url}: {blocked}");
            return HostError::Denied(Decision {
                why,
                ..blocked.decision.clone()
            });
        }
        source = err.source();
    }
    let mut msg = format!("{url}: {e}");
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        msg.push_str(&format!(": {s}"));
        source = s.source();
    }
    HostError::Network(msg)
}

/// Read at most `max` bytes of the body, stopping (not draining) once over.
async fn read_body(
    mut resp: reqwest::Response,
    max: u64,
    redirects: Vec<String>,
) -> Result<HttpResponse, HostError> {
    let status = resp.status().as_u16();
    let url = resp.url().clone();
    let headers = resp
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    let mut body = Vec::new();
    let mut truncated = false;
    while let Some(chunk) = resp.chunk().await.map_err(|e| send_error(e, &url))? {
        let room = max.saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(chunk.get(..room).unwrap_or_default());
            truncated = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    Ok(HttpResponse {
        status,
        headers,
        body,
        final_url: url.to_string(),
        redirects,
        truncated,
    })
}

/// Make ring the process's TLS provider, which every `reqwest` client needs: reqwest is built
/// without one (one TLS backend in the binary). Cheap and idempotent; a provider already
/// installed stays.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn resolver_refuses_a_name_that_resolves_to_loopback() {
        let r = PinnedResolver {
            reach: Reach::Public,
            overrides: Arc::new([]),
        };
        let err = r.lookup("localhost".to_string()).await.unwrap_err();
        assert!(err.downcast_ref::<BlockedAddress>().is_some(), "{err}");
    }

    #[tokio::test]
    async fn operator_resolver_pins_without_filtering() {
        let r = PinnedResolver {
            reach: Reach::Operator,
            overrides: Arc::new([]),
        };
        let addrs = r.lookup("localhost".to_string()).await.unwrap();
        assert!(addrs.iter().all(|a| a.ip().is_loopback()));
    }

    #[test]
    fn operator_urls_match_by_origin_or_bare_host() {
        let hosts = vec![
            "http://127.0.0.1:8888/search".to_string(),
            "searx.lan".to_string(),
        ];
        let u = |s: &str| Url::parse(s).unwrap();
        assert!(is_operator_url(&u("http://127.0.0.1:8888/other"), &hosts));
        assert!(!is_operator_url(&u("http://127.0.0.1:8889/"), &hosts));
        assert!(!is_operator_url(&u("https://127.0.0.1:8888/"), &hosts));
        assert!(is_operator_url(&u("https://searx.lan:9000/"), &hosts));
        assert!(!is_operator_url(&u("http://evil.example/"), &hosts));
    }
}
