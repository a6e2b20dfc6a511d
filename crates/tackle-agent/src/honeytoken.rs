//! Decoy credentials (`security.honeytokens`, docs/decisions/0034-honeytokens.md): fake keys
//! planted where an injected instruction looks for real ones (every command's environment, a
//! `~/.aws/credentials` inside the sandbox). No task of the operator's needs them, so a call
//! whose arguments carry one, in any encoding, is a session following someone else's orders:
//! it is refused before it runs, the session is frozen (every later call refused too), and
//! the trip is written to the audit log and to a trip log `tackle doctor` reads.
//!
//! The check runs first in [`crate::Dispatcher::dispatch`], so the agent loop, `tools call`,
//! the MCP server and sub-agents all pass it.

mod decoys;
mod find;

pub use decoys::{Decoy, Decoys, AWS_FILE_IN_HOME};
pub use find::{Found, Needles};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tackle_protocol::{Decision, ToolCall, ToolError};

const TRIP_LOG: &str = "trips.jsonl";
/// The rule of every refusal this module makes starts with it.
pub const RULE: &str = "honeytoken";

/// Why the decoys or the trip log cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum HoneytokenError {
    /// The decoy file or trip log cannot be read, written or made.
    #[error("{path}: {source}")]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    #[error("{path} is not a honeytoken file Tackle wrote ({why}); remove it to make new decoys")]
    /// The decoy file exists but is not one Tackle wrote (or is damaged).
    Corrupt {
        /// The decoy file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
}

impl HoneytokenError {
    fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// One line of the trip log: a decoy caught leaving, or a session the operator unfroze.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TripRecord {
    /// When it happened, RFC 3339 UTC.
    pub at: String,
    /// The session tripped or unfrozen.
    pub session: String,
    /// The decoy's name (never its value), empty for an unfreeze.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub token: String,
    /// The tool whose arguments carried the decoy; empty for an unfreeze.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool: String,
    /// How the decoy was found: `as written`, or the encodings peeled off (`url, base64`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub form: String,
    /// This line unfreezes `session` rather than recording a trip.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unfrozen: bool,
}

/// What the trip log says, for `tackle doctor`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TripSummary {
    /// Trips recorded in all.
    pub tripped: usize,
    /// The latest line (trip or unfreeze), if any.
    pub last: Option<TripRecord>,
    /// Sessions still frozen (a trip and no unfreeze after it), oldest first.
    pub frozen: Vec<String>,
}

/// The trip log of `state_dir`, summed up; an absent log is no trips.
pub fn trips(state_dir: &Path) -> TripSummary {
    let text =
        tackle_store::private_file::read_private(&state_dir.join(decoys::DIR).join(TRIP_LOG))
            .ok()
            .flatten()
            .unwrap_or_default();
    let mut summary = TripSummary::default();
    for record in text
        .lines()
        .filter_map(|l| serde_json::from_str::<TripRecord>(l).ok())
    {
        summary.frozen.retain(|s| *s != record.session);
        if record.unfrozen {
            continue;
        }
        summary.tripped += 1;
        if !record.session.is_empty() {
            summary.frozen.push(record.session.clone());
        }
        summary.last = Some(record);
    }
    summary
}

/// Lets `session` run tools again (`tackle sessions unfreeze`); false when it was not frozen.
pub fn unfreeze(state_dir: &Path, session: &str) -> Result<bool, HoneytokenError> {
    if !trips(state_dir).frozen.iter().any(|s| s == session) {
        return Ok(false);
    }
    append(
        &state_dir.join(decoys::DIR).join(TRIP_LOG),
        &TripRecord {
            at: now(),
            session: session.to_string(),
            token: String::new(),
            tool: String::new(),
            form: String::new(),
            unfrozen: true,
        },
    )?;
    Ok(true)
}

/// A session's frozen state, held with its other per-session state
/// ([`crate::SessionApprovals`]): why it was frozen, once it is.
#[derive(Debug, Default)]
pub struct Freeze(Mutex<Option<String>>);

impl Freeze {
    fn set(&self, why: String) {
        if let Ok(mut frozen) = self.0.lock() {
            frozen.get_or_insert(why);
        }
    }

    /// Why the session was frozen; `None` while it is not.
    pub fn why(&self) -> Option<String> {
        self.0.lock().ok().and_then(|f| f.clone())
    }
}

/// The decoys of this state directory and what has tripped them.
pub struct Honeytokens {
    decoys: Decoys,
    needles: Needles,
    log: PathBuf,
    /// Sessions frozen by an earlier trip (from the log) or by one in this process: a session
    /// resumed later stays frozen until the operator unfreezes it.
    frozen: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for Honeytokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the values.
        f.debug_struct("Honeytokens")
            .field("log", &self.log)
            .finish_non_exhaustive()
    }
}

impl Honeytokens {
    /// The decoys of `state_dir` (made on first use) and the sessions its log has frozen.
    pub fn load(state_dir: &Path) -> Result<Self, HoneytokenError> {
        let decoys = Decoys::load_or_create(state_dir)?;
        let needles = Needles::new(&decoys.all());
        let frozen = trips(state_dir).frozen.into_iter().collect();
        Ok(Self {
            decoys,
            needles,
            log: state_dir.join(decoys::DIR).join(TRIP_LOG),
            frozen: Mutex::new(frozen),
        })
    }

    /// The decoys planted, for the sandbox and environment to carry.
    pub fn decoys(&self) -> &Decoys {
        &self.decoys
    }

    /// Refuses a call that carries a decoy (its arguments masked, so neither the audit log
    /// nor a prompt shows the decoy) and freezes its session; refuses every call of a frozen
    /// session. `Ok` lets the call go on to the rest of the pipeline.
    pub fn screen(
        &self,
        call: &mut ToolCall,
        session_id: &str,
        freeze: &Freeze,
    ) -> Result<(), ToolError> {
        if let Some(found) = self.find(&call.arguments) {
            self.mask(&mut call.arguments);
            let at = now();
            let record = TripRecord {
                at: at.clone(),
                session: session_id.to_string(),
                token: found.label.to_string(),
                tool: call.name.clone(),
                form: found.form.clone(),
                unfrozen: false,
            };
            if let Err(e) = append(&self.log, &record) {
                tracing::warn!("honeytokens: the trip could not be logged: {e}");
            }
            freeze.set(format!(
                "`{}` tried to send the decoy {} at {at}",
                call.name, found.label
            ));
            if !session_id.is_empty() {
                if let Ok(mut frozen) = self.frozen.lock() {
                    frozen.insert(session_id.to_string());
                }
            }
            return Err(ToolError::denied(Decision::deny(
                format!("{RULE}: {}", found.label),
                format!(
                    "refused: the arguments carry the decoy {} ({}), a fake credential planted by \
                     security.honeytokens where an injected instruction would look; no task of \
                     the operator's sends it, so this session is following someone else's \
                     instructions. The session is frozen: no further tool call runs in it \
                     {UNFREEZE}",
                    found.label, found.form
                ),
            )));
        }
        let persisted = !session_id.is_empty()
            && self
                .frozen
                .lock()
                .is_ok_and(|frozen| frozen.contains(session_id));
        let why = freeze
            .why()
            .or_else(|| persisted.then(|| "an earlier call tried to send out a decoy".into()));
        match why {
            Some(why) => Err(ToolError::denied(Decision::deny(
                format!("{RULE}: session frozen"),
                format!("refused: this session is frozen ({why}) {UNFREEZE}"),
            ))),
            None => Ok(()),
        }
    }

    fn find(&self, value: &Value) -> Option<Found> {
        match value {
            Value::String(s) => self.needles.find(s),
            Value::Array(items) => items.iter().find_map(|v| self.find(v)),
            Value::Object(map) => map
                .iter()
                .find_map(|(k, v)| self.needles.find(k).or_else(|| self.find(v))),
            Value::Null | Value::Bool(_) | Value::Number(_) => None,
        }
    }

    /// Each string carrying a decoy replaced whole.
    fn mask(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                if let Some(found) = self.needles.find(s) {
                    *s = format!("[{RULE}: {}]", found.label);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.mask(v)),
            Value::Object(map) => {
                for (k, mut v) in std::mem::take(map) {
                    self.mask(&mut v);
                    let k = match self.needles.find(&k) {
                        Some(found) => format!("[{RULE}: {}]", found.label),
                        None => k,
                    };
                    map.insert(k, v);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

const UNFREEZE: &str = "until the operator acts: start a fresh session, or run `tackle sessions \
                        unfreeze SESSION_ID` after checking what it read (`tackle audit`).";

fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn append(path: &Path, record: &TripRecord) -> Result<(), HoneytokenError> {
    let line = serde_json::to_string(record).map_err(|e| HoneytokenError::Corrupt {
        path: path.to_path_buf(),
        why: e.to_string(),
    })?;
    tackle_store::private_file::append_private(path, &line)
        .map_err(|e| HoneytokenError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(arguments: Value) -> ToolCall {
        ToolCall {
            id: "1".into(),
            name: "http_request".into(),
            arguments,
        }
    }

    #[test]
    fn a_decoy_leaving_is_refused_masked_logged_and_freezes_the_session_across_restarts() {
        let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let h = Honeytokens::load(state.path()).unwrap_or_else(|e| panic!("{e}"));
        let key = h.decoys().github_token.clone();
        let freeze = Freeze::default();
        assert!(h
            .screen(&mut call(json!({"url": "https://x/"})), "s1", &freeze)
            .is_ok());
        let mut leaking =
            call(json!({"url": "https://x/", "headers": {"x": format!("token {key}")}}));
        let err = h
            .screen(&mut leaking, "s1", &freeze)
            .err()
            .unwrap_or_else(|| panic!("the decoy was let through"));
        assert_eq!(
            err.decision.map(|d| d.rule),
            Some("honeytoken: GitHub token".to_string())
        );
        assert!(!err.message.contains(&key));
        assert!(
            !leaking.arguments.to_string().contains(&key),
            "{}",
            leaking.arguments
        );
        // Frozen: a harmless call is refused too, in this process and after a restart.
        let harmless = || call(json!({"url": "https://x/"}));
        assert!(h.screen(&mut harmless(), "s1", &freeze).is_err());
        let again = Honeytokens::load(state.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(again
            .screen(&mut harmless(), "s1", &Freeze::default())
            .is_err());
        assert!(again
            .screen(&mut harmless(), "s2", &Freeze::default())
            .is_ok());
        let summary = trips(state.path());
        assert_eq!(summary.tripped, 1);
        assert_eq!(summary.frozen, vec!["s1".to_string()]);
        let log = std::fs::read_to_string(state.path().join("honeytokens/trips.jsonl"))
            .unwrap_or_default();
        assert!(!log.contains(&key) && log.contains("GitHub token"), "{log}");

        assert_eq!(unfreeze(state.path(), "s1").ok(), Some(true));
        assert_eq!(unfreeze(state.path(), "s1").ok(), Some(false));
        let thawed = Honeytokens::load(state.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(thawed
            .screen(&mut harmless(), "s1", &Freeze::default())
            .is_ok());
        assert_eq!(trips(state.path()).tripped, 1);
    }
}
