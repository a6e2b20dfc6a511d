//! The `schedule` extension: `schedule_add`, `schedule_modify`, `schedule_remove`,
//! `schedule_list`, `schedule_once` and the `cron` and `reminder` faces, all over one table in the state
//! store that the routine engine (`tackle daemon`) fires.
//!
//! Planting or widening recurring work is `unless_auto_approved`, so an injected prompt cannot
//! set up work that runs later without someone saying yes; listing, removing and disabling
//! ask nothing. `schedules.min_interval_secs` bounds how often anything may fire.
//!
//! A schedule belongs to the agent that planted it ([`caller`], recorded as its `owner`): the
//! tools of one agent see and change only its own. Planting one that fires as another agent
//! needs that agent in the planter's `schedule_for` and always asks; the fire then runs with
//! both agents' grants intersected (docs/decisions/0028-schedules-belong-to-their-planter.md).

#[cfg(test)]
mod contract_tests;
pub mod cron;
mod cron_face;
mod manage;
mod once;
mod plan;
mod reminder;
mod render;
mod who_fires;

pub use cron::{CronError, CronExpr, Zone, ZoneError};
pub use cron_face::CronTool;
pub use manage::{
    add_recurring, list_lines, modify, remove, AddRequest, ModifyRequest, ScheduleAdd,
    ScheduleList, ScheduleModify, ScheduleRemove,
};
pub use once::{add_named_once, once_marker, ScheduleOnce, ONCE_PREFIX};
pub use plan::{check_recurring, next_fire, parse_time};
pub use reminder::ReminderTool;
pub use render::{fire_line, schedule_line};

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::{Decision, Extension, Tool, ToolContext, ToolError};
use tackle_store::{Store, StoreError};

/// The extension's name, for `agents[].extensions`.
pub const NAME: &str = "schedule";

/// Default of `schedules.min_interval_secs`.
pub const DEFAULT_MIN_INTERVAL_SECS: u64 = 60;

/// What the schedule tools need.
#[derive(Clone)]
pub struct ScheduleSettings {
    /// The state store schedules live in.
    pub store: Store,
    /// The zone cron expressions are read in.
    pub zone: Zone,
    /// The shortest interval between two fires of one schedule.
    pub min_interval: Duration,
    /// The configured agents, for `agent` arguments naming another (empty: only the caller).
    pub agents: Vec<String>,
    /// `agents[].schedule_for`: whom each agent may plant schedules for (absent: nobody else).
    pub schedule_for: HashMap<String, Vec<String>>,
}

/// Between the agents of an owner path (`default › researcher`).
pub const OWNER_SEPARATOR: &str = " › ";

/// Who is calling, as a schedule records its owner: the agent, below its ancestors when it
/// is a child in a tree (a worker runs as its parent, so a repeated name counts once).
pub fn caller(cx: &ToolContext) -> String {
    let mut chain: Vec<&str> = Vec::new();
    for name in cx
        .ancestors
        .iter()
        .map(String::as_str)
        .chain([cx.agent.as_str()])
    {
        if chain.last() != Some(&name) {
            chain.push(name);
        }
    }
    chain.join(OWNER_SEPARATOR)
}

/// The agents of an owner path, root first.
pub fn owner_agents(owner: &str) -> Vec<&str> {
    owner
        .split(OWNER_SEPARATOR)
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .collect()
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

/// The `schedule` extension: its tools share `settings`.
pub fn extension(settings: ScheduleSettings) -> Arc<dyn Extension> {
    Arc::new(ScheduleExtension {
        settings: Arc::new(settings),
    })
}

impl ScheduleSettings {
    /// The agent a new schedule fires as: the caller, or another agent the operator lets the
    /// caller plant schedules for (`schedule_for`); anyone else is denied.
    pub(crate) fn fires_as(&self, asked: Option<&str>, caller: &str) -> Result<String, ToolError> {
        let a = match asked.map(str::trim).filter(|a| !a.is_empty()) {
            None => return Ok(caller.to_string()),
            Some(a) if a == caller => return Ok(a.to_string()),
            Some(a) => a,
        };
        if !self.agents.iter().any(|k| k == a) {
            return Err(ToolError::not_found(format!(
                "no agent `{a}`; the configured agents are: {}",
                self.agents.join(", ")
            )));
        }
        let allowed = self
            .schedule_for
            .get(caller)
            .is_some_and(|list| list.iter().any(|k| k == a));
        if !allowed {
            return Err(ToolError::denied(Decision::deny(
                "agents.schedule_for",
                format!(
                    "`{caller}` may not plant schedules for `{a}`: the operator did not list `{a}` in `schedule_for` of agent `{caller}`"
                ),
            )));
        }
        Ok(a.to_string())
    }

    /// The agent whose schedules a list, change or removal looks among: the one named, else
    /// the caller. Only the caller's own schedules are ever found there.
    pub(crate) fn among(asked: Option<&str>, caller: &str) -> String {
        asked
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .unwrap_or(caller)
            .to_string()
    }
}

pub(crate) fn store_error(e: StoreError) -> ToolError {
    match e {
        StoreError::DuplicateSchedule { .. } => ToolError::invalid_arguments(e.to_string()),
        StoreError::BadTime { .. } => ToolError::invalid_arguments(e.to_string()),
        StoreError::InvalidId(_) => ToolError::invalid_arguments(e.to_string()),
        other => ToolError::failed(other.to_string()),
    }
}

pub(crate) fn now() -> time::OffsetDateTime {
    time::OffsetDateTime::now_utc()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::MockHost;
    use serde_json::json;
    use tackle_protocol::ErrorKind;

    fn settings(schedule_for: &[(&str, &[&str])]) -> ScheduleSettings {
        ScheduleSettings {
            store: Store::open_in_memory().unwrap(),
            zone: Zone::default(),
            min_interval: Duration::from_secs(60),
            agents: vec!["alice".into(), "bob".into()],
            schedule_for: schedule_for
                .iter()
                .map(|(a, list)| (a.to_string(), list.iter().map(|s| s.to_string()).collect()))
                .collect(),
        }
    }

    #[test]
    fn another_agent_is_a_target_only_where_the_operator_listed_it() {
        let none = settings(&[]);
        assert_eq!(none.fires_as(None, "alice").unwrap(), "alice");
        assert_eq!(none.fires_as(Some(" alice "), "alice").unwrap(), "alice");
        let denied = none.fires_as(Some("bob"), "alice").unwrap_err();
        assert_eq!(denied.kind, ErrorKind::Denied);
        assert!(denied.message.contains("schedule_for"), "{denied}");
        assert_eq!(
            none.fires_as(Some("carol"), "alice").unwrap_err().kind,
            ErrorKind::NotFound
        );
        let listed = settings(&[("alice", &["bob"])]);
        assert_eq!(listed.fires_as(Some("bob"), "alice").unwrap(), "bob");
        // Leave is one way.
        assert_eq!(
            listed.fires_as(Some("alice"), "bob").unwrap_err().kind,
            ErrorKind::Denied
        );
    }

    #[test]
    fn a_childs_schedules_are_owned_by_its_path_and_a_worker_counts_once() {
        let host = Arc::new(MockHost::new());
        let root = host.context();
        assert_eq!(caller(&root), "default");
        let child = host
            .context()
            .with_ancestors(vec!["alice".into(), "default".into()]);
        assert_eq!(caller(&child), "alice › default");
        let worker = host.context().with_ancestors(vec!["default".into()]);
        assert_eq!(caller(&worker), "default");
        assert_eq!(owner_agents("alice › default"), ["alice", "default"]);
    }

    #[tokio::test]
    async fn the_tools_reach_only_the_callers_own_schedules() {
        let s = Arc::new(settings(&[]));
        let tools = extension((*s).clone()).tools();
        let tool = |name: &str| {
            tools
                .iter()
                .find(|t| t.spec().name == name)
                .cloned()
                .unwrap()
        };
        let host = Arc::new(MockHost::new());
        let mine = host.context();
        let add = json!({"id": "a", "cron": "0 0 9 * * *", "task": "t", "target": "fresh"});
        tool("schedule_add").call(add, &mine).await.unwrap();
        // The same id, planted by the agent's child: a different owner.
        let child = host.context().with_ancestors(vec!["alice".into()]);
        let remove = json!({"id": "a"});
        let err = tool("schedule_remove")
            .call(remove.clone(), &child)
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotFound);
        let listed = tool("schedule_list").call(json!({}), &child).await.unwrap();
        assert_eq!(listed.content, "You have no schedules.");
        tool("schedule_remove").call(remove, &mine).await.unwrap();
    }

    #[test]
    fn naming_an_agent_always_asks() {
        let t = ScheduleAdd(Arc::new(settings(&[])));
        assert_eq!(
            t.approval_for(&json!({"id": "a", "agent": "bob"})),
            Some(tackle_protocol::ApprovalMode::Always)
        );
        let blank = json!({"id": "a", "cron": "0 0 9 * * *", "task": "t", "agent": " "});
        assert_eq!(t.approval_for(&blank), None);
        let m = ScheduleModify(Arc::new(settings(&[])));
        assert_eq!(
            m.approval_for(&json!({"id": "a", "agent": "bob", "task": "x"})),
            Some(tackle_protocol::ApprovalMode::Always)
        );
        assert_eq!(
            m.approval_for(&json!({"id": "a", "agent": "bob", "enabled": false})),
            None
        );
    }
}
