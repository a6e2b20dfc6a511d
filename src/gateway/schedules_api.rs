//! Schedules over HTTP: list them (scope `read`), enable, disable or remove one (scope
//! `admin`), through the same checks `tackle schedule` goes through
//! (`tackle_tools::schedule`), so a running daemon sees each change at once. A schedule is
//! named by its id, unique per agent; `?agent=` says whose when two agents use one id.

use super::errors::ApiError;
use super::query;
use super::Gateway;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::Json;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tackle_protocol::ids::IdKind;
use tackle_protocol::{ErrorKind, ToolError};
use tackle_store::{Schedule, Target};
use tackle_tools::schedule::{self as sched, AddRequest, ModifyRequest};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// A schedule as the API shows it; every time is RFC 3339.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScheduleView {
    /// Unique per agent.
    pub id: String,
    pub agent: String,
    /// `cron`, `interval` or `once`.
    pub kind: String,
    /// The cron expression, interval or time, as planted.
    pub spec: String,
    /// What the agent is told at each fire.
    pub task: String,
    pub enabled: bool,
    pub next_fire: Option<String>,
    pub last_fired: Option<String>,
    pub fire_count: u32,
    pub max_fires: Option<u32>,
    pub expires_at: Option<String>,
    /// `fresh` (a new session per fire) or `pinned` (the planting session).
    pub target: String,
    pub created_at: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ScheduleList {
    pub schedules: Vec<ScheduleView>,
}

/// A schedule to add: recurring (`cron`) or one-shot (`at`), exactly one of them.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewScheduleRequest {
    /// Unique per agent: letters, digits, `-` and `_`.
    pub id: String,
    /// What the agent is told at each fire.
    pub task: String,
    /// The agent it fires as (`NAME` or `tackle:NAME`); the default agent when absent.
    #[serde(default)]
    pub agent: Option<String>,
    /// A cron expression (five fields, or `@hourly`-style), for a recurring schedule.
    #[serde(default)]
    pub cron: Option<String>,
    /// An RFC 3339 time, for a one-shot.
    #[serde(default)]
    pub at: Option<String>,
    /// A recurring schedule stops after this many fires.
    #[serde(default)]
    pub max_fires: Option<u32>,
    /// A recurring schedule stops at this RFC 3339 time.
    #[serde(default)]
    pub expires_at: Option<String>,
}

/// One fire of a schedule; times in RFC 3339.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FireView {
    pub due: Option<String>,
    pub started: Option<String>,
    pub finished: Option<String>,
    /// `running`, `ok`, `failed`, `skipped`, `missed`, …
    pub status: String,
    /// Why it failed, was skipped or missed; empty for a plain `ok`.
    pub detail: String,
    /// The daemon that claimed it.
    pub owner: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FireList {
    pub schedule: ScheduleView,
    /// Newest first.
    pub fires: Vec<FireView>,
}

/// The fire history's query: whose schedule, and how many fires.
pub const FIRES_QUERY: &[query::Param] = &[
    query::Param {
        name: "agent",
        about: "The agent whose schedule it is (needed when two agents use one id)",
        kind: query::ParamKind::Id(IdKind::Agent),
    },
    query::LIMIT,
];

/// Fires shown when `?limit=` is not given.
const FIRES_SHOWN: usize = 50;

fn rfc3339(t: Option<OffsetDateTime>) -> Option<String> {
    t.and_then(|t| t.format(&Rfc3339).ok())
}

impl From<Schedule> for ScheduleView {
    fn from(s: Schedule) -> Self {
        Self {
            id: s.name,
            agent: s.agent,
            kind: s.kind.as_str().to_string(),
            spec: s.spec,
            task: s.message,
            enabled: s.enabled,
            next_fire: rfc3339(s.next_fire),
            last_fired: rfc3339(s.last_fired),
            fire_count: s.fire_count,
            max_fires: s.max_fires,
            expires_at: rfc3339(s.expires_at),
            target: s.target.as_str().to_string(),
            created_at: s.created_at,
        }
    }
}

fn store_failed(e: tackle_store::StoreError) -> ApiError {
    ApiError::failed(format!("cannot read the schedules: {e}"))
}

/// The schedule tools' refusal as an API error: a bad argument 400, unknown 404.
fn tool_error(e: ToolError) -> ApiError {
    match e.kind {
        ErrorKind::InvalidArguments => ApiError::bad_request(e.message),
        ErrorKind::NotFound => ApiError::not_found(e.message),
        _ => ApiError::failed(e.message),
    }
}

pub const QUERY: &[query::Param] = &[query::Param {
    name: "agent",
    about: "Only this agent's schedules (needed when two agents use one id)",
    kind: query::ParamKind::Id(IdKind::Agent),
}];

/// `?agent=`, checked, when given.
fn agent_filter(uri: &Uri) -> Result<Option<String>, ApiError> {
    let mut pairs = query::pairs(uri, FIRES_QUERY)?;
    let agent = pairs.remove("agent");
    if let Some(name) = &agent {
        query::checked_id(IdKind::Agent, name)?;
    }
    Ok(agent)
}

/// The one schedule `id` (of `?agent=`, when given) names: 400 for a bad id, 404 for none,
/// 409 when two agents each have one by that id and the request did not say whose.
async fn find(gw: &Gateway, id: &str, uri: &Uri) -> Result<Schedule, ApiError> {
    query::checked_id(IdKind::Schedule, id)?;
    let agent = agent_filter(uri)?;
    let mut matches: Vec<Schedule> = gw
        .schedules
        .store
        .list_schedules(agent.as_deref())
        .await
        .map_err(store_failed)?
        .into_iter()
        .filter(|s| s.name == id)
        .collect();
    match (matches.pop(), matches.is_empty()) {
        (Some(one), true) => Ok(one),
        (Some(_), false) => Err(ApiError::new(
            StatusCode::CONFLICT,
            ErrorKind::InvalidArguments,
            format!("more than one agent has a schedule `{id}`; say whose with ?agent=NAME"),
        )),
        (None, _) => Err(ApiError::not_found(format!(
            "no schedule `{id}`; GET /v1/schedules lists them"
        ))),
    }
}

pub async fn list(
    State(gw): State<Arc<Gateway>>,
    uri: Uri,
) -> Result<Json<ScheduleList>, ApiError> {
    let agent = agent_filter(&uri)?;
    let all = gw
        .schedules
        .store
        .list_schedules(agent.as_deref())
        .await
        .map_err(store_failed)?;
    Ok(Json(ScheduleList {
        schedules: all.into_iter().map(ScheduleView::from).collect(),
    }))
}

/// Adds a schedule as `tackle schedule add` does (the operator's, fresh session per fire); a
/// running daemon fires it without a restart.
pub async fn add(
    State(gw): State<Arc<Gateway>>,
    body: Result<Json<NewScheduleRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<ScheduleView>, ApiError> {
    let Json(req) = body?;
    let owner = gw
        .turns
        .agent_for_model(req.agent.as_deref().unwrap_or("default"))?;
    let s = match (req.cron, req.at) {
        (Some(cron), None) => sched::add_recurring(
            &gw.schedules,
            AddRequest {
                owner,
                planted_by: None,
                id: req.id,
                cron,
                task: req.task,
                target: Target::Fresh,
                session_id: None,
                max_fires: req.max_fires,
                expires_at: req.expires_at,
            },
        )
        .await
        .map_err(tool_error)?,
        (None, Some(at)) => {
            if req.max_fires.is_some() || req.expires_at.is_some() {
                return Err(ApiError::bad_request(
                    "max_fires and expires_at are for a recurring (`cron`) schedule; a one-shot (`at`) fires once",
                ));
            }
            let at = sched::parse_time("at", &at).map_err(tool_error)?;
            sched::add_named_once(&gw.schedules, &owner, &req.id, &req.task, at)
                .await
                .map_err(tool_error)?
        }
        _ => {
            return Err(ApiError::bad_request(
                "give exactly one of `cron` (a recurring schedule) and `at` (a one-shot at an RFC 3339 time)",
            ))
        }
    };
    Ok(Json(s.into()))
}

/// The schedule's newest fires (`?limit=`, default 50), each with how it ended.
pub async fn fires(
    State(gw): State<Arc<Gateway>>,
    Path(id): Path<String>,
    uri: Uri,
) -> Result<Json<FireList>, ApiError> {
    let found = find(&gw, &id, &uri).await?;
    let limit = query::limit(&query::pairs(&uri, FIRES_QUERY)?)?.unwrap_or(FIRES_SHOWN);
    let fires = gw
        .schedules
        .store
        .fires(&found.agent, &found.name, limit)
        .await
        .map_err(store_failed)?;
    Ok(Json(FireList {
        schedule: found.into(),
        fires: fires
            .into_iter()
            .map(|f| FireView {
                due: rfc3339(Some(f.due)),
                started: rfc3339(f.started),
                finished: rfc3339(f.finished),
                status: f.status.as_str().to_string(),
                detail: f.detail,
                owner: f.owner,
            })
            .collect(),
    }))
}

async fn set_enabled(
    gw: &Gateway,
    id: &str,
    uri: &Uri,
    enabled: bool,
) -> Result<Json<ScheduleView>, ApiError> {
    let found = find(gw, id, uri).await?;
    let req = ModifyRequest {
        enabled: Some(enabled),
        ..ModifyRequest::default()
    };
    // `None`: the operator's change, as `tackle schedule enable` makes it.
    let s = sched::modify(&gw.schedules, None, &found.agent, &found.name, req)
        .await
        .map_err(tool_error)?;
    Ok(Json(s.into()))
}

pub async fn enable(
    State(gw): State<Arc<Gateway>>,
    Path(id): Path<String>,
    uri: Uri,
) -> Result<Json<ScheduleView>, ApiError> {
    set_enabled(&gw, &id, &uri, true).await
}

pub async fn disable(
    State(gw): State<Arc<Gateway>>,
    Path(id): Path<String>,
    uri: Uri,
) -> Result<Json<ScheduleView>, ApiError> {
    set_enabled(&gw, &id, &uri, false).await
}

/// Removes the schedule (its fire records stay) and answers with it as it was.
pub async fn remove(
    State(gw): State<Arc<Gateway>>,
    Path(id): Path<String>,
    uri: Uri,
) -> Result<Json<ScheduleView>, ApiError> {
    let found = find(&gw, &id, &uri).await?;
    sched::remove(&gw.schedules, None, &found.agent, &found.name)
        .await
        .map_err(tool_error)?;
    Ok(Json(found.into()))
}
