//! `schedule_once {after_seconds, task}`: wake the calling session once, later.

use super::render::stamp;
use super::{now, store_error, ScheduleSettings};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;
use tackle_protocol::{ApprovalMode, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tackle_store::{NewSchedule, ScheduleKind, StoreError, Target};
use time::OffsetDateTime;

/// Ids of one-shots: `wakeup-<epoch_ms>`, suffixed `-2`, `-3`, … on collision.
pub const ONCE_PREFIX: &str = "wakeup-";

const MIN_AFTER: u64 = 30;
const MAX_AFTER: u64 = 2_592_000;
/// Suffixes tried before giving up on a free id.
const MAX_SUFFIX: u32 = 1000;

/// The `schedule_once` tool: wakes the calling session once, later.
pub struct ScheduleOnce(pub(super) Arc<ScheduleSettings>);

// Arguments of `schedule_once`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    #[schemars(range(min = MIN_AFTER, max = MAX_AFTER))]
    after_seconds: u64,
    #[schemars(length(min = 1))]
    task: String,
}

/// How a one-shot lists: `@YYYY-MM-DD HH:MM:SSZ`.
pub fn once_marker(at: OffsetDateTime) -> String {
    format!("@{}", stamp(at))
}

#[async_trait]
impl Tool for ScheduleOnce {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "schedule_once",
            "Wake this session once, after_seconds from now (30 to 2592000), with task as the \
             message. Example: {\"after_seconds\": 600, \"task\": \"check the build\"}.",
            super::NAME,
        )
        .approval(ApprovalMode::UnlessAutoApproved)
        .parameters(crate::args::schema::<Args>())
    }

    fn sink(&self, _args: &Value) -> Option<String> {
        Some("plants work that runs later".into())
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        if !(MIN_AFTER..=MAX_AFTER).contains(&args.after_seconds) {
            return Err(ToolError::invalid_arguments(format!(
                "`after_seconds` must be in [{MIN_AFTER}, {MAX_AFTER}]"
            )));
        }
        if args.task.trim().is_empty() {
            return Err(ToolError::invalid_arguments("`task` must not be empty"));
        }
        let now = now();
        let secs = i64::try_from(args.after_seconds).unwrap_or(i64::MAX);
        let at = now + time::Duration::seconds(secs);
        let by = super::caller(cx);
        let s = add_once(
            &self.0,
            (&cx.agent, &by),
            &cx.session_id,
            &args.task,
            now,
            at,
        )
        .await?;
        Ok(ToolOutput::text(format!(
            "Scheduled {} {}: {}{}",
            s.name,
            s.spec,
            s.message,
            super::who_fires::note(&self.0.store, &s)
        ))
        .with_structured(json!({"id": s.name, "at": s.spec})))
    }
}

/// Adds a one-shot for `agent`, planted by `by`, due at `at`, pinned to `session` (fresh when
/// there is none).
pub(crate) async fn add_once(
    settings: &ScheduleSettings,
    (agent, by): (&str, &str),
    session: &str,
    task: &str,
    now: OffsetDateTime,
    at: OffsetDateTime,
) -> Result<tackle_store::Schedule, ToolError> {
    let base = format!("{ONCE_PREFIX}{}", super::cron::unix_ms(now));
    let session = Some(session.to_string()).filter(|s| !s.is_empty());
    for n in 1..=MAX_SUFFIX {
        let name = if n == 1 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        let new = once_schedule(agent, name, task, at, session.clone());
        match settings.store.add_owned_schedule(new, Some(by)).await {
            Ok(s) => return Ok(s),
            Err(StoreError::DuplicateSchedule { .. }) => continue,
            Err(e) => return Err(store_error(e)),
        }
    }
    Err(ToolError::failed("no free one-shot id; try again"))
}

/// A one-shot the operator plants under a name of their choosing: `id` runs `task` once at
/// `at` as a fresh session of `owner`. Checked as the tool checks its own: a valid id, a task,
/// and a time still to come.
pub async fn add_named_once(
    settings: &ScheduleSettings,
    owner: &str,
    id: &str,
    task: &str,
    at: OffsetDateTime,
) -> Result<tackle_store::Schedule, ToolError> {
    tackle_protocol::ids::check(tackle_protocol::ids::IdKind::Schedule, id)
        .map_err(|e| ToolError::invalid_arguments(e.to_string()))?;
    if task.trim().is_empty() {
        return Err(ToolError::invalid_arguments("`task` must not be empty"));
    }
    if at <= now() {
        return Err(ToolError::invalid_arguments(format!(
            "the time {} has passed; give one still to come",
            stamp(at)
        )));
    }
    let new = once_schedule(owner, id.to_string(), task, at, None);
    settings
        .store
        .add_owned_schedule(new, None)
        .await
        .map_err(store_error)
}

/// The stored form of a one-shot: one fire at `at`, reported to `session` when there is one.
fn once_schedule(
    agent: &str,
    name: String,
    task: &str,
    at: OffsetDateTime,
    session: Option<String>,
) -> NewSchedule {
    NewSchedule {
        agent: agent.to_string(),
        name,
        kind: ScheduleKind::Once,
        spec: once_marker(at),
        message: task.to_string(),
        next_fire: Some(at),
        target: if session.is_some() {
            Target::Pinned
        } else {
            Target::Fresh
        },
        session_id: session,
        max_fires: Some(1),
        expires_at: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tackle_store::Store;

    fn settings() -> ScheduleSettings {
        ScheduleSettings {
            store: Store::open_in_memory().unwrap(),
            zone: super::super::Zone::default(),
            min_interval: std::time::Duration::from_secs(60),
            agents: vec![],
            schedule_for: Default::default(),
        }
    }

    #[tokio::test]
    async fn after_seconds_of_exactly_30_and_30_days_are_accepted_and_one_outside_is_refused() {
        let tool = ScheduleOnce(Arc::new(settings()));
        let cx = Arc::new(crate::mock_host::MockHost::new()).context();
        for outside in [0, MIN_AFTER - 1, MAX_AFTER + 1] {
            let e = tool
                .call(
                    json!({"after_seconds": outside, "task": "too soon or too late"}),
                    &cx,
                )
                .await
                .unwrap_err();
            assert_eq!(
                e.kind,
                tackle_protocol::ErrorKind::InvalidArguments,
                "{outside}: {e:?}"
            );
        }
        let stored = || async { tool.0.store.list_owned_schedules(None, None).await.unwrap() };
        assert!(stored().await.is_empty(), "a refused call stores nothing");
        for edge in [30, 2_592_000] {
            let before = now();
            tool.call(json!({"after_seconds": edge, "task": "wake up"}), &cx)
                .await
                .unwrap_or_else(|e| panic!("{edge}: {e:?}"));
            let after = now();
            let all = stored().await;
            let fire = all
                .iter()
                .filter_map(|s| s.next_fire)
                .max()
                .unwrap_or_else(|| panic!("{edge}: nothing stored: {all:?}"));
            let edge = time::Duration::seconds(edge);
            // The store keeps milliseconds, so allow one below `before`.
            assert!(
                fire >= before + edge - time::Duration::milliseconds(1) && fire <= after + edge,
                "{fire} not {edge} from now"
            );
        }
        assert_eq!(stored().await.len(), 2);
    }

    #[tokio::test]
    async fn two_one_shots_made_in_the_same_millisecond_get_distinct_ids() {
        let s = settings();
        let now = time::macros::datetime!(2026-01-01 0:00 UTC);
        let at = now + time::Duration::minutes(5);
        let a = add_once(&s, ("default", "default"), "sess", "a", now, at)
            .await
            .unwrap();
        let b = add_once(&s, ("default", "default"), "sess", "b", now, at)
            .await
            .unwrap();
        assert_eq!(
            a.name,
            format!("wakeup-{}", super::super::cron::unix_ms(now))
        );
        assert_eq!(b.name, format!("{}-2", a.name));
        assert_eq!(a.spec, "@2026-01-01 00:05:00Z");
        assert_eq!(a.target, Target::Pinned);
        assert_eq!(a.session_id.as_deref(), Some("sess"));
    }

    #[tokio::test]
    async fn a_named_one_shot_fires_once_fresh_and_refuses_a_past_time_or_a_bad_id() {
        let s = settings();
        // Whole seconds: the store keeps milliseconds.
        let at = now().replace_nanosecond(0).unwrap() + time::Duration::hours(1);
        let o = add_named_once(&s, "default", "standup", "say hi", at)
            .await
            .unwrap();
        assert_eq!(o.name, "standup");
        assert_eq!(o.kind, ScheduleKind::Once);
        assert_eq!(o.max_fires, Some(1));
        assert_eq!(o.target, Target::Fresh);
        assert_eq!(o.next_fire, Some(at));
        let past = now() - time::Duration::minutes(1);
        let e = add_named_once(&s, "default", "late", "x", past)
            .await
            .unwrap_err();
        assert_eq!(
            e.kind,
            tackle_protocol::ErrorKind::InvalidArguments,
            "{e:?}"
        );
        let e = add_named_once(&s, "default", "bad id!", "x", at)
            .await
            .unwrap_err();
        assert_eq!(
            e.kind,
            tackle_protocol::ErrorKind::InvalidArguments,
            "{e:?}"
        );
    }
}
