//! Who may call the API: the browser guard (`Origin`/`Host`, shared with `mcp serve --http`),
//! bearer tokens from `gateway.tokens` (kept as SHA-256, compared in constant time), each
//! token's scopes and its rate limit. The one middleware here admits or refuses a request and
//! has it audited either way.

use super::errors::ApiError;
use super::Gateway;
use crate::exit::usage;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use subtle::ConstantTimeEq;
use tackle_protocol::config::{GatewayScope, GatewayToken};
use tackle_protocol::ErrorKind;

/// The token a request was admitted with, by its name (never the token itself).
#[derive(Debug, Clone)]
pub struct Caller {
    pub name: String,
}

/// The configured tokens, checked at start-up.
pub struct Tokens {
    tokens: Vec<GatewayToken>,
}

impl Tokens {
    /// Refuses a config whose hash is not 64 hex digits or whose names repeat: either would
    /// make a token silently unusable or its audit lines ambiguous.
    pub fn new(tokens: &[GatewayToken]) -> anyhow::Result<Self> {
        let mut names = std::collections::BTreeSet::new();
        let mut checked = Vec::with_capacity(tokens.len());
        for t in tokens {
            if t.sha256.len() != 64 || !t.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(usage(format!(
                    "gateway.tokens `{}`: sha256 must be the 64 hex digits of the token's SHA-256 (printf %s \"$TOKEN\" | sha256sum)",
                    t.name
                )));
            }
            if t.name.trim().is_empty() || !names.insert(t.name.clone()) {
                return Err(usage(format!(
                    "gateway.tokens: every token needs a name of its own (`{}`)",
                    t.name
                )));
            }
            let mut t = t.clone();
            t.sha256.make_ascii_lowercase();
            checked.push(t);
        }
        Ok(Self { tokens: checked })
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The token `presented` hashes to. Every configured hash is compared, each in constant
    /// time, so the answer's timing says nothing about which (or how much of one) matched.
    fn find(&self, presented: &str) -> Option<&GatewayToken> {
        let digest = Sha256::digest(presented.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        let mut found = None;
        for t in &self.tokens {
            if bool::from(t.sha256.as_bytes().ct_eq(hex.as_bytes())) && found.is_none() {
                found = Some(t);
            }
        }
        found
    }
}

/// `rate_limit_per_minute` per token: a bucket of that many requests refilled evenly over a
/// minute, so a burst up to the limit passes and a steady excess is refused.
pub struct RateLimit {
    per_minute: u32,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl RateLimit {
    pub fn new(per_minute: u32) -> Self {
        Self {
            per_minute: per_minute.max(1),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request from `name`'s bucket; `false` when it is empty.
    fn take(&self, name: &str) -> bool {
        let Ok(mut buckets) = self.buckets.lock() else {
            // Poisoned by a panic elsewhere: refuse rather than stop limiting.
            return false;
        };
        let cap = f64::from(self.per_minute);
        let now = Instant::now();
        let (left, at) = buckets.entry(name.to_string()).or_insert((cap, now));
        let refill = now.duration_since(*at).as_secs_f64() * cap / 60.0;
        *left = (*left + refill).min(cap);
        *at = now;
        if *left >= 1.0 {
            *left -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Admits the request (setting its [`Caller`]) or answers the refusal; audits it either way.
pub async fn guard(State(gw): State<Arc<Gateway>>, mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    let admitted = admit(&gw, &req);
    let (caller, response) = match admitted {
        Ok(caller) => {
            if let Some(c) = &caller {
                req.extensions_mut().insert(c.clone());
            }
            (caller, next.run(req).await)
        }
        Err((caller, e)) => (caller, e.into_response()),
    };
    let entry = super::audit::entry(
        caller.as_ref().map(|c| c.name.as_str()),
        &method,
        &path,
        &response,
        started.elapsed(),
    );
    super::audit::append(&gw.store, entry).await;
    response
}

type Refusal = (Option<Caller>, ApiError);

/// The browser guard, then the token, its rate limit and its scope for the route. A public
/// route (`/openapi.json`) needs no token.
fn admit(gw: &Gateway, req: &Request) -> Result<Option<Caller>, Refusal> {
    if let Some(why) = gw.local.refuse(req.headers()) {
        return Err((None, ApiError::forbidden(why.trim_end())));
    }
    let route = super::route_for(req.method(), req.uri().path());
    // Every endpoint reads only the query parameters its row lists; a misspelt filter is
    // refused rather than silently matching everything.
    if let Some(r) = route {
        super::query::pairs(req.uri(), r.query).map_err(|e| (None, e))?;
    }
    if route.is_some_and(|r| r.scope.is_none()) {
        return Ok(None);
    }
    let presented = req
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split_once(' '))
        // The scheme is case-insensitive (RFC 9110, 11.1).
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
        .unwrap_or_default();
    let Some(token) = (!presented.is_empty())
        .then(|| gw.tokens.find(presented))
        .flatten()
    else {
        let why = if presented.is_empty() {
            "this API needs `Authorization: Bearer TOKEN` with a token listed under gateway.tokens"
        } else {
            "the bearer token is not one listed under gateway.tokens"
        };
        return Err((None, ApiError::unauthorized(why)));
    };
    let caller = Caller {
        name: token.name.clone(),
    };
    if !gw.rate.take(&token.name) {
        let e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            ErrorKind::Denied,
            format!(
                "token `{}` made more than gateway.rate_limit_per_minute ({}) requests in the last minute",
                token.name, gw.rate.per_minute
            ),
        );
        return Err((Some(caller), e));
    }
    // Only what the route table lists is reachable, each with its scope: a path the router
    // might match but the table does not know (a spelling of a route, a handler added without
    // its row) is refused here rather than served with no scope check.
    let Some(route) = route else {
        let path = req.uri().path();
        let methods = super::methods_at(path);
        let e = if methods.is_empty() {
            ApiError::not_found(format!(
                "no endpoint {} {}; GET /openapi.json lists them",
                req.method(),
                tackle_protocol::text::preview(path, 200)
            ))
        } else {
            ApiError::method_not_allowed(req.method().as_str(), path, &methods)
        };
        return Err((Some(caller), e));
    };
    if let Some(needed) = route.scope {
        if !token.scopes.contains(&needed) && !token.scopes.contains(&GatewayScope::Admin) {
            let e = ApiError::forbidden(format!(
                "token `{}` lacks the `{}` scope this endpoint needs",
                token.name,
                scope_name(needed)
            ));
            return Err((Some(caller), e));
        }
    }
    Ok(Some(caller))
}

pub fn scope_name(scope: GatewayScope) -> &'static str {
    match scope {
        GatewayScope::Read => "read",
        GatewayScope::Chat => "chat",
        GatewayScope::Approve => "approve",
        GatewayScope::Admin => "admin",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(name: &str, secret: &str) -> GatewayToken {
        let hex: String = Sha256::digest(secret.as_bytes())
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect();
        GatewayToken {
            name: name.into(),
            sha256: hex,
            scopes: vec![GatewayScope::Read],
        }
    }

    #[test]
    fn a_token_is_found_by_its_hash_and_nothing_else_matches() {
        let tokens = Tokens::new(&[token("a", "s3cret-a"), token("b", "s3cret-b")]).unwrap();
        assert_eq!(tokens.find("s3cret-b").map(|t| t.name.as_str()), Some("b"));
        for wrong in [
            "",
            "s3cret",
            "s3cret-bb",
            "S3CRET-B",
            &tokens.tokens[0].sha256,
        ] {
            assert!(tokens.find(wrong).is_none(), "{wrong}");
        }
    }

    #[test]
    fn bad_hashes_and_repeated_names_are_refused_at_start() {
        let mut bad = token("a", "x");
        bad.sha256.pop();
        assert!(Tokens::new(&[bad]).is_err());
        assert!(Tokens::new(&[token("a", "x"), token("a", "y")]).is_err());
    }

    #[test]
    fn the_rate_limit_refuses_past_the_burst_per_token() {
        let rate = RateLimit::new(3);
        assert!((0..3).all(|_| rate.take("a")));
        assert!(!rate.take("a"));
        assert!(rate.take("b"), "another token has its own bucket");
    }
}
