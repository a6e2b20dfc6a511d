//! The approval queue over HTTP: `GET /v1/approvals` lists what waits, `POST
//! /v1/approvals/{id}` answers one (scope `approve`). The queue is the store's
//! (docs/decisions/0030-one-approval-queue.md), so an answer here releases a call waiting in
//! any process: an API turn, a schedule's fire in the daemon. The first answer wins; a later
//! one is told who answered.

use super::auth::Caller;
use super::errors::ApiError;
use super::Gateway;
use crate::approval_queue::APPROVE_SCOPE;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tackle_protocol::ErrorKind;
use tackle_store::{Approval, ApprovalReply, StoreError};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// A queued approval as the API shows it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ApprovalView {
    pub id: String,
    pub agent: String,
    pub session: String,
    pub tool: String,
    /// What the call will do (command, diff, content) and the grants in force, as the
    /// terminal prompt shows it; secrets the config knows are blanked.
    pub preview: String,
    /// RFC 3339.
    pub created: String,
    /// RFC 3339: unanswered by then, the call ends `needs_approval`.
    pub deadline: String,
    /// `pending`, `allowed`, `allowed_for_session`, `denied`, `expired` or `cancelled`.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ApprovalList {
    pub approvals: Vec<ApprovalView>,
}

/// The answer to a queued approval.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    pub answer: Answer,
}

/// `allow` (this call), `allow_for_session` (this tool for the rest of the session) or `deny`.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Allow,
    AllowForSession,
    Deny,
}

impl From<Answer> for ApprovalReply {
    fn from(a: Answer) -> Self {
        match a {
            Answer::Allow => ApprovalReply::Allow,
            Answer::AllowForSession => ApprovalReply::AllowForSession,
            Answer::Deny => ApprovalReply::Deny,
        }
    }
}

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&Rfc3339).unwrap_or_default()
}

impl From<Approval> for ApprovalView {
    fn from(a: Approval) -> Self {
        Self {
            id: a.id,
            agent: a.agent,
            session: a.session_id,
            tool: a.tool,
            preview: a.preview,
            created: rfc3339(a.created),
            deadline: rfc3339(a.deadline),
            status: a.status.as_str().to_string(),
            answered_by: a.answered_by,
        }
    }
}

/// The line a front end shows when one of its calls is queued.
pub fn where_to_answer(id: &str, tool: &str, deadline_secs: u64) -> String {
    format!(
        "`{tool}` waits for approval {id} up to {deadline_secs} s: POST /v1/approvals/{id} {{\"answer\": \"allow\" | \"allow_for_session\" | \"deny\"}} with an `approve` token, or `tackle approvals allow {id}`"
    )
}

pub async fn list(State(gw): State<Arc<Gateway>>) -> Result<Json<ApprovalList>, ApiError> {
    crate::waiter::close_abandoned(&gw.store)
        .await
        .map_err(|e| ApiError::failed(e.to_string()))?;
    let pending = gw
        .store
        .list_pending_approvals(OffsetDateTime::now_utc())
        .await
        .map_err(|e| ApiError::failed(e.to_string()))?;
    Ok(Json(ApprovalList {
        approvals: pending
            .into_iter()
            .filter(|a| a.may_answer(&[APPROVE_SCOPE]))
            .map(ApprovalView::from)
            .collect(),
    }))
}

pub async fn answer(
    State(gw): State<Arc<Gateway>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    body: Result<Json<AnswerRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<ApprovalView>, ApiError> {
    let Json(request) = body.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let unknown =
        || ApiError::not_found(format!("no approval `{id}`; GET /v1/approvals lists them"));
    // An entry whose waiter has ended is closed first: answering it would release nothing.
    crate::waiter::close_abandoned(&gw.store)
        .await
        .map_err(|e| ApiError::failed(e.to_string()))?;
    let entry = gw
        .store
        .approval(&id)
        .await
        .map_err(|e| ApiError::failed(e.to_string()))?
        .ok_or_else(unknown)?;
    // Entries that name their answerers (a chat channel's approvers) are theirs alone.
    if !entry.may_answer(&[APPROVE_SCOPE]) {
        return Err(ApiError::forbidden(format!(
            "approval `{id}` is answered by {}, not by API tokens",
            entry.approvers.join(", ")
        )));
    }
    let by = format!("api:{}", caller.name);
    match gw
        .store
        .answer_approval(&id, request.answer.into(), &by)
        .await
    {
        Ok(settled) => Ok(Json(settled.into())),
        Err(StoreError::UnknownApproval(_)) => Err(unknown()),
        Err(e @ StoreError::AlreadyAnswered { .. }) => Err(ApiError::new(
            StatusCode::CONFLICT,
            ErrorKind::Denied,
            e.to_string(),
        )),
        Err(e) => Err(ApiError::failed(e.to_string())),
    }
}
