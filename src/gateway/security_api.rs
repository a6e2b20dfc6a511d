//! What the security features have caught (scope `read`): whether decoy credentials are
//! planted, how many calls tried to send one out and the last such call, and the sessions
//! frozen for it (docs/decisions/0034-honeytokens.md). Read from the trip log `tackle doctor`
//! reads, which names each decoy and never holds its value; the console shows it.

use super::errors::ApiError;
use super::Gateway;
use axum::extract::State;
use axum::Json;
use schemars::JsonSchema;
use serde::Serialize;
use std::sync::Arc;

#[derive(Debug, Serialize, JsonSchema)]
pub struct SecurityView {
    /// Whether `security.honeytokens` plants decoy credentials.
    pub honeytokens: bool,
    /// Calls refused for carrying a decoy, ever (unfreezing a session does not lower it).
    pub tripped: usize,
    /// The newest of them.
    pub last_trip: Option<TripView>,
    /// Sessions frozen by a trip and not unfrozen since, oldest first
    /// (`tackle sessions unfreeze ID`).
    pub frozen_sessions: Vec<String>,
}

/// A call refused for carrying a decoy.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TripView {
    /// When (RFC 3339).
    pub at: String,
    /// The tool called.
    pub tool: String,
    /// Which decoy it carried, by name (never its value).
    pub token: String,
    /// How it was wrapped: `as written`, or the encodings peeled off (`url, base64`).
    pub form: String,
    /// The session it ran in; none for a call outside one (`tackle tools call`).
    pub session: Option<String>,
}

pub async fn show(State(gw): State<Arc<Gateway>>) -> Result<Json<SecurityView>, ApiError> {
    let dir = gw.state_dir.clone();
    // A file read: off the async workers.
    let trips = tokio::task::spawn_blocking(move || tackle_agent::honeytoken::trips(&dir))
        .await
        .map_err(|e| ApiError::failed(format!("cannot read the trip log: {e}")))?;
    Ok(Json(SecurityView {
        honeytokens: gw.honeytokens,
        tripped: trips.tripped,
        last_trip: trips.last.map(|t| TripView {
            at: t.at,
            tool: t.tool,
            token: t.token,
            form: t.form,
            session: Some(t.session).filter(|s| !s.is_empty()),
        }),
        frozen_sessions: trips.frozen,
    }))
}
