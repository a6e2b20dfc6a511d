//! The `schedule` extension: `schedule_add`, `schedule_modify`, `schedule_remove`,
//! `schedule_list`, `schedule_once` and the `cron` and `reminder` faces, all over one table in the state
//! store that the routine engine (`tackle daemon`) fires.
//!
//! Planting or widening recurring work is `unless_auto_approved`, so an injected prompt cannot
//! set up work that runs later without someone saying yes; listing, removing and disabling
//! ask nothing. `schedules.min_interval_secs` bounds how often anything may fire.

pub mod cron;
mod cron_face;
mod manage;
mod once;
mod plan;
mod reminder;
mod render;

pub use cron::{CronError, CronExpr, Zone};
pub use cron_face::CronTool;
pub use manage::{
    add_recurring, list_lines, modify, remove, AddRequest, ModifyRequest, ScheduleAdd,
    ScheduleList, ScheduleModify, ScheduleRemove,
};
pub use once::{once_marker, ScheduleOnce, ONCE_PREFIX};
pub use plan::{check_recurring, next_fire, parse_time};
pub use reminder::ReminderTool;
pub use render::{fire_line, schedule_line};

use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::{Extension, Tool, ToolError};
use tackle_store::{Store, StoreError};

pub const NAME: &str = "schedule";

/// Default of `schedules.min_interval_secs`.
pub const DEFAULT_MIN_INTERVAL_SECS: u64 = 60;

/// What the schedule tools need.
#[derive(Clone)]
pub struct ScheduleSettings {
    pub store: Store,
    pub zone: Zone,
    /// The shortest interval between two fires of one schedule.
    pub min_interval: Duration,
    /// The configured agents, for `agent` arguments naming another (empty: only the caller).
    pub agents: Vec<String>,
}

struct ScheduleExtension {
    settings: Arc<ScheduleSettings>,
}

impl Extension for ScheduleExtension {
    fn name(&self) -> &str {
        NAME
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let s = &self.settings;
        vec![
            Arc::new(ScheduleAdd(Arc::clone(s))),
            Arc::new(ScheduleModify(Arc::clone(s))),
            Arc::new(ScheduleRemove(Arc::clone(s))),
            Arc::new(ScheduleList(Arc::clone(s))),
            Arc::new(ScheduleOnce(Arc::clone(s))),
            Arc::new(CronTool(Arc::clone(s))),
            Arc::new(ReminderTool(Arc::clone(s))),
        ]
    }
}

pub fn extension(settings: ScheduleSettings) -> Arc<dyn Extension> {
    Arc::new(ScheduleExtension {
        settings: Arc::new(settings),
    })
}

impl ScheduleSettings {
    /// The owner of a schedule: the caller, or another configured agent.
    pub(crate) fn owner(&self, asked: Option<&str>, caller: &str) -> Result<String, ToolError> {
        match asked.map(str::trim).filter(|a| !a.is_empty()) {
            None => Ok(caller.to_string()),
            Some(a) if a == caller || self.agents.iter().any(|k| k == a) => Ok(a.to_string()),
            Some(a) => Err(ToolError::not_found(format!(
                "no agent `{a}`; the configured agents are: {}",
                self.agents.join(", ")
            ))),
        }
    }
}

pub(crate) fn parse_args<T: DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args)
        .map_err(|e| ToolError::invalid_arguments(format!("invalid arguments: {e}")))
}

pub(crate) fn store_error(e: StoreError) -> ToolError {
    match e {
        StoreError::DuplicateSchedule { .. } => ToolError::invalid_arguments(e.to_string()),
        StoreError::BadTime { .. } => ToolError::invalid_arguments(e.to_string()),
        other => ToolError::failed(other.to_string()),
    }
}

pub(crate) fn now() -> time::OffsetDateTime {
    time::OffsetDateTime::now_utc()
}
