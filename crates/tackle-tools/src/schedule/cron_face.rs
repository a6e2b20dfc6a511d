//! `cron {action: add|list|remove, …}`: the same schedules under the job-style arguments
//! some agents expect (`every_seconds`, `cron_expr`, `at`).

use super::manage::{add_recurring, remove, AddRequest};
use super::plan::parse_time;
use super::render::schedule_line;
use super::{caller, now, once_marker, store_error, ScheduleSettings};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use tackle_protocol::{ApprovalMode, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tackle_store::{NewSchedule, ScheduleKind, Target};

/// Most jobs one agent may hold through this face.
const MAX_JOBS: usize = 50;
/// Characters of `message` a default name keeps.
const NAME_CHARS: usize = 30;

/// The `cron` tool: the schedules under job-style arguments.
pub struct CronTool(pub(super) Arc<ScheduleSettings>);

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[schemars(inline)]
#[serde(rename_all = "snake_case")]
enum Action {
    Add,
    List,
    Remove,
}

// Arguments of `cron`; which fields each action reads is in the tool's description.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    action: Action,
    message: Option<String>,
    name: Option<String>,
    #[schemars(range(min = 60))]
    every_seconds: Option<u64>,
    cron_expr: Option<String>,
    at: Option<String>,
    #[serde(default)]
    include_disabled: bool,
    job_id: Option<String>,
    channel: Option<String>,
    chat_id: Option<String>,
}

/// What an `add` is, as a sink.
const PLANTS: &str = "plants work that runs later";

impl Args {
    /// Whether the call plants work that runs later.
    fn plants(&self) -> bool {
        self.action == Action::Add
    }
}

#[async_trait]
impl Tool for CronTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "cron",
            "Jobs on the schedule engine. add: message, name?, and exactly one of every_seconds \
             (≥ 60), cron_expr, at (RFC 3339, a one-shot). list: include_disabled?. remove: job_id.",
            super::NAME,
        )
        .parameters(crate::args::schema::<Args>())
    }

    /// Adding plants work; listing and removing do not. Arguments that do not read ask as
    /// `add` does, the most this tool asks.
    fn approval_for(&self, args: &Value) -> Option<ApprovalMode> {
        crate::args::decide(args, Some(ApprovalMode::UnlessAutoApproved), |a: Args| {
            a.plants().then_some(ApprovalMode::UnlessAutoApproved)
        })
    }

    fn sink(&self, args: &Value) -> Option<String> {
        crate::args::decide(args, Some(PLANTS.to_string()), |a: Args| {
            a.plants().then(|| PLANTS.to_string())
        })
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        // `channel`/`chat_id` name the session in other agents; here it is always this one.
        let _ = (&args.channel, &args.chat_id);
        match args.action {
            Action::Add => self.add(args, cx).await,
            Action::List => {
                let all = self
                    .0
                    .store
                    .list_owned_schedules(Some(&caller(cx)), Some(&cx.agent))
                    .await
                    .map_err(store_error)?;
                let shown: Vec<String> = all
                    .iter()
                    .filter(|s| args.include_disabled || s.enabled)
                    .map(|s| schedule_line(s, None))
                    .collect();
                if shown.is_empty() {
                    Ok(ToolOutput::text("No cron jobs."))
                } else {
                    Ok(ToolOutput::text(shown.join("\n")))
                }
            }
            Action::Remove => {
                let id = args
                    .job_id
                    .ok_or_else(|| ToolError::invalid_arguments("`job_id` is required"))?;
                remove(&self.0, Some(&caller(cx)), &cx.agent, &id).await?;
                Ok(ToolOutput::text(format!("Removed job {id}")))
            }
        }
    }
}

impl CronTool {
    async fn add(&self, args: Args, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let message = args
            .message
            .filter(|m| !m.trim().is_empty())
            .ok_or_else(|| ToolError::invalid_arguments("`message` is required for add"))?;
        let name = args
            .name
            .filter(|n| !n.trim().is_empty())
            // Named after the message when the model gives no name, in the one id rule's terms.
            .unwrap_or_else(|| tackle_protocol::ids::slug(&message, NAME_CHARS, "job"));
        let given = [
            args.every_seconds.is_some(),
            args.cron_expr.is_some(),
            args.at.is_some(),
        ];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err(ToolError::invalid_arguments(
                "give exactly one of every_seconds, cron_expr, at",
            ));
        }
        let held = self
            .0
            .store
            .list_owned_schedules(Some(&caller(cx)), Some(&cx.agent))
            .await
            .map_err(store_error)?;
        if held.len() >= MAX_JOBS {
            return Err(ToolError::invalid_arguments(format!(
                "this agent already has {MAX_JOBS} jobs; remove one first"
            )));
        }
        let session = Some(cx.session_id.clone()).filter(|s| !s.is_empty());
        let target = if session.is_some() {
            Target::Pinned
        } else {
            Target::Fresh
        };
        let now = now();
        let new = if let Some(expr) = args.cron_expr {
            let s = add_recurring(
                &self.0,
                AddRequest {
                    owner: cx.agent.clone(),
                    planted_by: Some(caller(cx)),
                    id: name,
                    cron: expr,
                    task: message,
                    target,
                    session_id: session,
                    max_fires: None,
                    expires_at: None,
                },
            )
            .await?;
            return Ok(ToolOutput::text(format!(
                "Added job {}{}",
                schedule_line(&s, None),
                super::who_fires::note(&self.0.store, &s)
            )));
        } else if let Some(every) = args.every_seconds {
            let min = self.0.min_interval.as_secs().max(60);
            if every < min {
                return Err(ToolError::invalid_arguments(format!(
                    "`every_seconds` must be at least {min}"
                )));
            }
            let secs = i64::try_from(every).unwrap_or(i64::MAX);
            NewSchedule {
                agent: cx.agent.clone(),
                name,
                kind: ScheduleKind::Interval,
                spec: every.to_string(),
                message,
                next_fire: now.checked_add(time::Duration::seconds(secs)),
                target,
                session_id: session,
                max_fires: None,
                expires_at: None,
            }
        } else {
            let at_text = args.at.unwrap_or_default();
            let at = parse_at(&at_text)?;
            if at <= now {
                return Err(ToolError::invalid_arguments("`at` must be in the future"));
            }
            NewSchedule {
                agent: cx.agent.clone(),
                name,
                kind: ScheduleKind::Once,
                spec: once_marker(at),
                message,
                next_fire: Some(at),
                target,
                session_id: session,
                max_fires: Some(1),
                expires_at: None,
            }
        };
        let s = self
            .0
            .store
            .add_owned_schedule(new, Some(&caller(cx)))
            .await
            .map_err(store_error)?;
        Ok(ToolOutput::text(format!(
            "Added job {}{}",
            schedule_line(&s, None),
            super::who_fires::note(&self.0.store, &s)
        )))
    }
}

/// RFC 3339, or a naive `YYYY-MM-DDTHH:MM:SS` taken as UTC.
fn parse_at(text: &str) -> Result<time::OffsetDateTime, ToolError> {
    if let Ok(t) = parse_time("at", text) {
        return Ok(t);
    }
    let naive = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]");
    time::PrimitiveDateTime::parse(text.trim(), &naive)
        .map(|p| p.assume_utc())
        .map_err(|_| {
            ToolError::invalid_arguments(format!(
                "`at`: `{text}` is not an RFC 3339 time or YYYY-MM-DDTHH:MM:SS (UTC)"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::MockHost;
    use serde_json::json;
    use tackle_protocol::ErrorKind;

    fn tool() -> CronTool {
        CronTool(Arc::new(ScheduleSettings {
            store: tackle_store::Store::open_in_memory().unwrap(),
            zone: super::super::Zone::default(),
            min_interval: std::time::Duration::from_secs(60),
            agents: vec![],
            schedule_for: Default::default(),
        }))
    }

    async fn list(t: &CronTool, cx: &ToolContext) -> String {
        t.call(json!({"action": "list"}), cx).await.unwrap().content
    }

    #[tokio::test]
    async fn add_each_kind_list_them_and_remove_one() {
        let t = tool();
        let cx = Arc::new(MockHost::new()).context();
        assert_eq!(list(&t, &cx).await, "No cron jobs.");
        let at = (now() + time::Duration::hours(2))
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap();
        for args in [
            json!({"action": "add", "message": "water the plants", "every_seconds": 3600}),
            json!({"action": "add", "name": "nightly", "message": "back up", "cron_expr": "0 0 3 * * *"}),
            json!({"action": "add", "name": "later", "message": "call back", "at": at}),
        ] {
            let out = t.call(args.clone(), &cx).await.unwrap();
            assert!(
                out.content.starts_with("Added job - "),
                "{args}: {}",
                out.content
            );
        }
        let shown = list(&t, &cx).await;
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines.len(), 3, "{shown}");
        // Unnamed: named after its message.
        assert!(
            shown.contains("- water-the-plants: every 3600 s")
                && shown.contains("water the plants"),
            "{shown}"
        );
        assert!(shown.contains("- nightly: 0 0 3 * * *"), "{shown}");
        assert!(shown.contains("- later: @"), "{shown}");
        // Made in a session: each fires back into it.
        assert!(lines.iter().all(|l| l.contains("· pinned")), "{shown}");

        let out = t
            .call(json!({"action": "remove", "job_id": "nightly"}), &cx)
            .await
            .unwrap();
        assert_eq!(out.content, "Removed job nightly");
        let shown = list(&t, &cx).await;
        assert_eq!(shown.lines().count(), 2, "{shown}");
        assert!(!shown.contains("nightly"), "{shown}");
        let e = t
            .call(json!({"action": "remove", "job_id": "nightly"}), &cx)
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::NotFound, "{e:?}");
    }

    #[test]
    fn only_add_asks_and_is_a_sink_and_unread_arguments_count_as_add() {
        let t = tool();
        let ask = Some(ApprovalMode::UnlessAutoApproved);
        let sink = Some(PLANTS.to_string());
        let add = json!({"action": "add", "message": "x", "every_seconds": 3600});
        assert_eq!(t.approval_for(&add), ask);
        assert_eq!(t.sink(&add), sink);
        for quiet in [
            json!({"action": "list"}),
            json!({"action": "list", "include_disabled": true}),
            json!({"action": "remove", "job_id": "nightly"}),
        ] {
            assert_eq!(t.approval_for(&quiet), None, "{quiet}");
            assert_eq!(t.sink(&quiet), None, "{quiet}");
        }
        // Accepted by the schema (no upper bound), refused by `u64`: asked as an add.
        let unread = json!({"action": "list", "every_seconds": 1e30});
        assert!(crate::args::contract::accepts(
            &t.spec().parameters,
            &unread
        ));
        assert_eq!(t.approval_for(&unread), ask);
        assert_eq!(t.sink(&unread), sink);
        for unread in [
            json!({"action": "list", "later": true}),
            json!({"action": "pause"}),
        ] {
            assert_eq!(t.approval_for(&unread), ask, "{unread}");
            assert_eq!(t.sink(&unread), sink, "{unread}");
        }
    }

    #[tokio::test]
    async fn add_needs_a_message_and_exactly_one_timing_and_stores_nothing_otherwise() {
        let t = tool();
        let cx = Arc::new(MockHost::new()).context();
        for args in [
            json!({"action": "add", "message": "x"}),
            json!({"action": "add", "message": "x", "every_seconds": 3600, "cron_expr": "0 0 3 * * *"}),
            json!({"action": "add", "every_seconds": 3600}),
            json!({"action": "add", "message": "x", "every_seconds": 59}),
            json!({"action": "add", "message": "x", "at": "2000-01-01T00:00:00Z"}),
            json!({"action": "remove"}),
        ] {
            let e = t.call(args.clone(), &cx).await.unwrap_err();
            assert_eq!(e.kind, ErrorKind::InvalidArguments, "{args}: {e:?}");
        }
        assert_eq!(list(&t, &cx).await, "No cron jobs.");
    }
}
