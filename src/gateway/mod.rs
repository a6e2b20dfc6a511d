//! The daemon's HTTP API (`gateway:` in the config): an OpenAI-compatible chat endpoint whose
//! models are the agents, served on the daemon's runtime beside the schedule engine. Every
//! request passes the browser guard and a bearer token with the route's scope
//! ([`auth::guard`]), and is audited with the token's name. The route table [`ROUTES`] is the
//! one list of endpoints: the guard reads each one's scope from it and `/openapi.json` is
//! built from it.

mod approvals;
mod audit;
mod audit_api;
mod auth;
mod channels_api;
mod console;
mod errors;
mod events;
mod mcp_api;
mod openai;
mod openapi;
mod query;
mod schedules_api;
mod security_api;
mod sessions;
mod sse;
mod turns;

use crate::cli::Global;
use crate::exit::usage;
use anyhow::Result;
use axum::extract::DefaultBodyLimit;
use axum::http::Method;
use axum::routing::{delete, get, post};
use std::sync::Arc;
use std::time::Duration;
use tackle_mcp::LocalOnly;
use tackle_protocol::config::{Config, GatewayConfig, GatewayScope};
use tackle_store::Store;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use openapi::{schema, Route, EVENTS, JSON};

/// Every endpoint, with its scope and its types (for the guard and `/openapi.json`).
pub const ROUTES: &[Route] = &[
    Route {
        method: "GET",
        path: "/v1/models",
        scope: Some(GatewayScope::Read),
        summary: "The agents, each as a model named `tackle:NAME`",
        request: None,
        response: schema::<openai::ModelList>,
        events: None,
        media: JSON,
        query: &[],
    },
    Route {
        method: "POST",
        path: "/v1/chat/completions",
        scope: Some(GatewayScope::Chat),
        summary: "Run the last user message as a turn of the agent `model` names (header X-Tackle-Session continues a session)",
        request: Some(schema::<openai::ChatCompletionRequest>),
        response: schema::<openai::ChatCompletion>,
        events: Some(schema::<sse::ChatCompletionChunk>),
        media: JSON,
        query: &[],
    },
    Route {
        method: "GET",
        path: "/v1/approvals",
        scope: Some(GatewayScope::Approve),
        summary: "The calls waiting in the approval queue (API turns, schedules' fires), each with what it will do",
        request: None,
        response: schema::<approvals::ApprovalList>,
        events: None,
        media: JSON,
        query: &[],
    },
    Route {
        method: "POST",
        path: "/v1/approvals/{id}",
        scope: Some(GatewayScope::Approve),
        summary: "Answer a queued approval: allow, allow_for_session or deny; the first answer wins (409 after)",
        request: Some(schema::<approvals::AnswerRequest>),
        response: schema::<approvals::ApprovalView>,
        events: None,
        media: JSON,
        query: &[],
    },
    Route {
        method: "GET",
        path: "/v1/sessions",
        scope: Some(GatewayScope::Read),
        summary: "The sessions, most recently active first (`?limit=N`)",
        request: None,
        response: schema::<sessions::SessionList>,
        events: None,
        media: JSON,
        query: &[query::LIMIT],
    },
    Route {
        method: "POST",
        path: "/v1/sessions",
        scope: Some(GatewayScope::Chat),
        summary: "Create an empty session of an agent, to post messages to and watch; answers with it",
        request: Some(schema::<sessions::NewSession>),
        response: schema::<sessions::SessionView>,
        events: None,
        media: JSON,
        query: &[],
    },
    Route {
        method: "GET",
        path: "/v1/sessions/{id}",
        scope: Some(GatewayScope::Read),
        summary: "One session with every entry it holds, in order",
        request: None,
        response: schema::<sessions::SessionDetail>,
        events: None,
        media: JSON,
        query: &[],
    },
    Route {
        method: "DELETE",
        path: "/v1/sessions/{id}",
        scope: Some(GatewayScope::Admin),
        summary: "Delete a session and its entries (the audit log keeps its records)",
        request: None,
        response: schema::<sessions::Deleted>,
        events: None,
        media: JSON,
        query: &[],
    },
    Route {
        method: "POST",
        path: "/v1/sessions/{id}/messages",
        scope: Some(GatewayScope::Chat),
        summary: "Run `content` as a turn in the session (its agent unless `agent` names another) and answer with the text, outcome and tool calls",
        request: Some(schema::<sessions::PostMessage>),
        response: schema::<sessions::MessageReply>,
        events: None,
        media: JSON,
        query: &[],
    },
    Route {
        method: "GET",
        path: "/v1/sessions/{id}/events",
        scope: Some(GatewayScope::Read),
        summary: "The session's live events as server-sent events (`event: KIND`, JSON data): turn_started, text_delta, tool_call_started, tool_call_finished, approval_queued, approval_settled, done",
        request: None,
        response: schema::<events::LiveEvent>,
        events: Some(schema::<events::LiveEvent>),
        media: EVENTS,
        query: &[],
    },
    Route {
        method: "GET",
        path: "/v1/events",
        scope: Some(GatewayScope::Read),
        summary: "Every API turn's live events as server-sent events, as `/v1/sessions/{id}/events` gives one session's (`?session=ID` filters)",
        request: None,
        response: schema::<events::LiveEvent>,
        events: Some(schema::<events::LiveEvent>),
        media: EVENTS,
        query: events::QUERY,
    },
    Route {
        method: "GET",
        path: "/v1/audit",
        scope: Some(GatewayScope::Read),
        summary: "The audit log, oldest first, filtered as `tackle audit` filters it (`?session=`, `?tool=`, `?since=30m` or a time, `?limit=N`)",
        request: None,
        response: schema::<audit_api::AuditList>,
        events: None,
        media: JSON,
        query: audit_api::QUERY,
    },
    Route {
        method: "GET",
        path: "/v1/schedules",
        scope: Some(GatewayScope::Read),
        summary: "Every schedule (`?agent=NAME`: one agent's), times in RFC 3339",
        request: None,
        response: schema::<schedules_api::ScheduleList>,
        events: None,
        media: JSON,
        query: schedules_api::QUERY,
    },
    Route {
        method: "POST",
        path: "/v1/schedules",
        scope: Some(GatewayScope::Admin),
        summary: "Add a schedule of an agent: recurring (`cron`) or one-shot (`at`); a running daemon fires it without a restart",
        request: Some(schema::<schedules_api::NewScheduleRequest>),
        response: schema::<schedules_api::ScheduleView>,
        events: None,
        media: JSON,
        query: &[],
    },
    Route {
        method: "GET",
        path: "/v1/schedules/{id}/fires",
        scope: Some(GatewayScope::Read),
        summary: "A schedule's newest fires (`?limit=N`, default 50), each with when and how it ended",
        request: None,
        response: schema::<schedules_api::FireList>,
        events: None,
        media: JSON,
        query: schedules_api::FIRES_QUERY,
    },
    Route {
        method: "POST",
        path: "/v1/schedules/{id}/enable",
        scope: Some(GatewayScope::Admin),
        summary: "Enable a schedule (`?agent=NAME` when two agents use the id)",
        request: None,
        response: schema::<schedules_api::ScheduleView>,
        events: None,
        media: JSON,
        query: schedules_api::QUERY,
    },
    Route {
        method: "POST",
        path: "/v1/schedules/{id}/disable",
        scope: Some(GatewayScope::Admin),
        summary: "Disable a schedule; it stays listed (`?agent=NAME` when two agents use the id)",
        request: None,
        response: schema::<schedules_api::ScheduleView>,
        events: None,
        media: JSON,
        query: schedules_api::QUERY,
    },
    Route {
        method: "DELETE",
        path: "/v1/schedules/{id}",
        scope: Some(GatewayScope::Admin),
        summary: "Remove a schedule (its fire records stay) and answer with it as it was",
        request: None,
        response: schema::<schedules_api::ScheduleView>,
        events: None,
        media: JSON,
        query: schedules_api::QUERY,
    },
    Route {
        method: "GET",
        path: "/v1/channels",
        scope: Some(GatewayScope::Read),
        summary: "The chat channels the daemon reads, each with when it last read, its last failure and the messages it has not answered yet",
        request: None,
        response: schema::<channels_api::ChannelList>,
        events: None,
        media: JSON,
        query: &[],
    },
    Route {
        method: "GET",
        path: "/v1/security",
        scope: Some(GatewayScope::Read),
        summary: "What the security features have caught: whether decoy credentials are planted, the calls refused for carrying one (the last by tool, decoy name and session; never its value) and the sessions frozen for it",
        request: None,
        response: schema::<security_api::SecurityView>,
        events: None,
        media: JSON,
        query: &[],
    },
    Route {
        method: "GET",
        path: "/v1/mcp/tools",
        scope: Some(GatewayScope::Read),
        summary: "Every configured MCP server's tools against their pins: the quarantined ones (changed or renamed since pinned), each with its pinned and offered definitions and their diff, then the others; the servers are asked afresh",
        request: None,
        response: schema::<mcp_api::McpToolList>,
        events: None,
        media: JSON,
        query: &[],
    },
    Route {
        method: "POST",
        path: "/v1/mcp/tools/{server}/{tool}/accept",
        scope: Some(GatewayScope::Admin),
        summary: "Accept a tool's offered definition, named by the digest GET /v1/mcp/tools showed (409 and nothing pinned when the server offers another by now); running agents offer it from their next turn",
        request: Some(schema::<mcp_api::AcceptRequest>),
        response: schema::<mcp_api::Accepted>,
        events: None,
        media: JSON,
        query: &[],
    },
    Route {
        method: "GET",
        path: "/",
        scope: None,
        summary: "The web console (it asks for a token and shows what the token's scopes allow)",
        request: None,
        response: schema::<String>,
        events: None,
        media: console::PAGE_MEDIA,
        query: &[],
    },
    Route {
        method: "GET",
        path: "/console/{file}",
        scope: None,
        summary: "The console's script and style sheet, embedded in the binary",
        request: None,
        response: schema::<String>,
        events: None,
        media: console::ASSET_MEDIA,
        query: &[],
    },
    Route {
        method: "GET",
        path: "/openapi.json",
        scope: None,
        summary: "This document",
        request: None,
        response: schema::<serde_json::Value>,
        events: None,
        media: JSON,
        query: &[],
    },
];

/// The route `method path` is, if any; a `{name}` segment of a route matches any one
/// non-empty segment.
pub fn route_for(method: &Method, path: &str) -> Option<&'static Route> {
    ROUTES
        .iter()
        .find(|r| r.method == method.as_str() && path_matches(r.path, path))
}

/// The methods the route table serves at `path` (empty: no such path).
pub fn methods_at(path: &str) -> Vec<&'static str> {
    ROUTES
        .iter()
        .filter(|r| path_matches(r.path, path))
        .map(|r| r.method)
        .collect()
}

fn path_matches(pattern: &str, path: &str) -> bool {
    let (mut want, mut got) = (pattern.split('/'), path.split('/'));
    loop {
        match (want.next(), got.next()) {
            (None, None) => return true,
            (Some(w), Some(g)) if w.starts_with('{') && w.ends_with('}') => {
                if g.is_empty() {
                    return false;
                }
            }
            (Some(w), Some(g)) if w == g => {}
            _ => return false,
        }
    }
}

/// Who answers API turns' calls: the store's approval queue, unless the operator set
/// `gateway.approval_timeout_secs: 0` (then no one, and such calls end `needs_approval`).
fn approvals_for_api(cfg: &GatewayConfig, store: &Store) -> turns::Approvals {
    match cfg.approval_timeout_secs {
        0 => turns::Approvals::NoOne,
        secs => turns::Approvals::Queue {
            queue: crate::approval_queue::ApprovalQueue::new(store.clone()),
            timeout: Duration::from_secs(secs),
        },
    }
}

/// What every handler shares.
pub struct Gateway {
    store: Store,
    tokens: auth::Tokens,
    rate: auth::RateLimit,
    local: LocalOnly,
    turns: turns::Turns,
    schedules: tackle_tools::schedule::ScheduleSettings,
    channels: Vec<channels_api::Reading>,
    mcp: mcp_api::McpServers,
    /// Where the trip log is, and whether decoys are planted (`/v1/security`).
    state_dir: std::path::PathBuf,
    honeytokens: bool,
}

/// Binds `gateway.bind`, refusing a non-loopback address unless `allow_remote` is set.
pub async fn bind(cfg: &GatewayConfig) -> Result<TcpListener> {
    let addr = crate::serve_addr::resolve(&cfg.bind, "gateway.bind").await?;
    if !addr.ip().is_loopback() && !cfg.allow_remote {
        return Err(usage(format!(
            "gateway.bind {}: not a loopback address; the API is served to this machine only unless gateway.allow_remote is true",
            cfg.bind
        )));
    }
    TcpListener::bind(addr).await.map_err(|e| {
        usage(format!(
            "gateway.bind {}: cannot listen there: {e}",
            cfg.bind
        ))
    })
}

/// The gateway's state for `config` (the tokens checked), ready to serve.
pub fn gateway(
    global: &Global,
    config: &Config,
    cfg: &GatewayConfig,
    addr: std::net::SocketAddr,
    store: Store,
) -> Result<Arc<Gateway>> {
    Ok(Arc::new(Gateway {
        store: store.clone(),
        tokens: auth::Tokens::new(&cfg.tokens)?,
        schedules: crate::schedules::settings(config, &store)?,
        channels: channels_api::reading(config),
        mcp: mcp_api::McpServers::new(global, config, &store),
        state_dir: crate::app::App::state_dir_for(config),
        honeytokens: config.security.honeytokens,
        rate: auth::RateLimit::new(cfg.rate_limit_per_minute),
        local: LocalOnly::for_bind(addr).with_exact_origins(&cfg.allowed_origins),
        turns: turns::Turns::new(
            global.clone(),
            config.clone(),
            approvals_for_api(cfg, &store),
        ),
    }))
}

/// Serves until `stop`; then takes no new requests, lets running turns finish for `grace`,
/// cancels any still going (each recorded as cancelled) and waits for their responses.
pub async fn serve(
    gw: Arc<Gateway>,
    listener: TcpListener,
    max_body_bytes: usize,
    stop: CancellationToken,
    grace: Duration,
) -> Result<()> {
    if gw.tokens.is_empty() {
        tracing::warn!("gateway.tokens is empty: every API request will be refused with 401");
    }
    let router = axum::Router::new()
        .route("/v1/models", get(openai::models))
        .route("/v1/chat/completions", post(openai::chat_completions))
        .route("/v1/approvals", get(approvals::list))
        .route("/v1/approvals/{id}", post(approvals::answer))
        .route("/v1/sessions", get(sessions::list).post(sessions::create))
        .route(
            "/v1/sessions/{id}",
            get(sessions::show).delete(sessions::delete),
        )
        .route("/v1/sessions/{id}/messages", post(sessions::post_message))
        .route("/v1/sessions/{id}/events", get(events::one))
        .route("/v1/events", get(events::all))
        .route("/v1/audit", get(audit_api::list))
        .route(
            "/v1/schedules",
            get(schedules_api::list).post(schedules_api::add),
        )
        .route("/v1/schedules/{id}/fires", get(schedules_api::fires))
        .route("/v1/schedules/{id}/enable", post(schedules_api::enable))
        .route("/v1/schedules/{id}/disable", post(schedules_api::disable))
        .route("/v1/schedules/{id}", delete(schedules_api::remove))
        .route("/v1/channels", get(channels_api::list))
        .route("/v1/security", get(security_api::show))
        .route("/v1/mcp/tools", get(mcp_api::list))
        .route(
            "/v1/mcp/tools/{server}/{tool}/accept",
            post(mcp_api::accept),
        )
        .route("/openapi.json", get(openapi::document))
        .route("/", get(console::index))
        .route("/console/{file}", get(console::asset))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&gw),
            auth::guard,
        ))
        .with_state(Arc::clone(&gw));
    let drain = {
        let (gw, stop) = (Arc::clone(&gw), stop.clone());
        tokio::spawn(async move {
            stop.cancelled().await;
            tokio::time::sleep(grace).await;
            gw.turns.cancel_all();
        })
    };
    let served = axum::serve(listener, router)
        .with_graceful_shutdown(stop.cancelled_owned())
        .await;
    drain.abort();
    gw.turns.shutdown().await;
    served.map_err(|e| anyhow::anyhow!("HTTP API: {e}"))
}

async fn not_found(method: Method, uri: axum::http::Uri) -> errors::ApiError {
    errors::ApiError::not_found(format!(
        "no endpoint {method} {}; GET /openapi.json lists them",
        tackle_protocol::text::preview(uri.path(), 200)
    ))
}
