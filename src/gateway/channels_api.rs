//! The chat channels the daemon reads, and how each stands (scope `read`): when it last read,
//! its last failure, messages taken and not yet answered, as the channel's runner wrote them
//! to the store (docs/decisions/0035-channel-inbox.md). The console shows them.

use super::errors::ApiError;
use super::Gateway;
use axum::extract::State;
use axum::Json;
use schemars::JsonSchema;
use serde::Serialize;
use std::sync::Arc;
use tackle_protocol::config::Config;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// A channel the daemon reads, as configured.
#[derive(Debug, Clone)]
pub struct Reading {
    pub name: String,
    pub kind: &'static str,
}

/// The channels of `config` with an `inbound:` section, by name.
pub fn reading(config: &Config) -> Vec<Reading> {
    config
        .channels
        .iter()
        .filter(|(_, entry)| entry.inbound().is_some())
        .map(|(name, entry)| Reading {
            name: name.clone(),
            kind: entry.kind(),
        })
        .collect()
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ChannelView {
    /// The key under `channels:`.
    pub name: String,
    /// `telegram`, `matrix`, `slack`.
    pub kind: String,
    /// The end of its last successful receive (RFC 3339); none when it never read.
    pub last_read: Option<String>,
    /// Its last failure to receive, free of credentials.
    pub last_error: Option<String>,
    pub last_error_at: Option<String>,
    /// Whether the last failure is newer than the last successful read.
    pub failing: bool,
    /// Messages taken and not yet answered.
    pub unanswered: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ChannelList {
    pub channels: Vec<ChannelView>,
}

fn rfc3339(t: Option<OffsetDateTime>) -> Option<String> {
    t.and_then(|t| t.format(&Rfc3339).ok())
}

pub async fn list(State(gw): State<Arc<Gateway>>) -> Result<Json<ChannelList>, ApiError> {
    let mut channels = Vec::with_capacity(gw.channels.len());
    for c in &gw.channels {
        let state = gw
            .store
            .channel_state(&c.name)
            .await
            .map_err(|e| ApiError::failed(format!("cannot read channel {}: {e}", c.name)))?;
        let failing = match (state.error_at, state.polled) {
            (Some(e), Some(p)) => e > p,
            (Some(_), None) => true,
            _ => false,
        };
        channels.push(ChannelView {
            name: c.name.clone(),
            kind: c.kind.to_string(),
            last_read: rfc3339(state.polled),
            last_error: state.error,
            last_error_at: rfc3339(state.error_at),
            failing,
            unanswered: state.unanswered,
        });
    }
    Ok(Json(ChannelList { channels }))
}
