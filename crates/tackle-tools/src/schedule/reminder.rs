//! `reminder {action: add|list|complete|snooze|remove|overdue, …}`: to-dos whose due time is
//! a schedule (`reminder-r<N>`) on the same engine, which tells the agent `Reminder: <title>`.

use super::plan::{check_recurring, parse_time};
use super::render::stamp;
use super::{now, once_marker, store_error, ScheduleSettings};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use tackle_protocol::{ApprovalMode, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tackle_store::{NewReminder, NewSchedule, Reminder, ReminderStatus, ScheduleKind, Target};
use time::OffsetDateTime;

/// The `reminder` tool: to-dos whose due time is a schedule.
pub struct ReminderTool(pub(super) Arc<ScheduleSettings>);

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[schemars(inline)]
#[serde(rename_all = "snake_case")]
enum Action {
    Add,
    List,
    Complete,
    Snooze,
    Remove,
    Overdue,
}

// The names `status` takes (the store's [`ReminderStatus`], which has no schema of its own).
#[derive(JsonSchema)]
#[schemars(inline)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)] // only its schema is used
enum StatusName {
    Pending,
    Done,
    Snoozed,
}

// Arguments of `reminder`; which fields each action reads is in the tool's description.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    action: Action,
    title: Option<String>,
    description: Option<String>,
    category: Option<String>,
    due_at: Option<String>,
    /// A cron expression.
    recurrence: Option<String>,
    /// r<N>
    id: Option<String>,
    #[schemars(with = "Option<StatusName>")]
    status: Option<ReminderStatus>,
}

impl Args {
    /// Whether the call plants a fire: an `add` with a due time or a recurrence, or a
    /// `snooze` (which moves one).
    fn plants(&self) -> bool {
        match self.action {
            Action::Add => self.due_at.is_some() || self.recurrence.is_some(),
            Action::Snooze => true,
            Action::List | Action::Complete | Action::Remove | Action::Overdue => false,
        }
    }
}

/// The schedule that fires reminder `id`.
fn schedule_name(id: &str) -> String {
    format!("reminder-{id}")
}

#[async_trait]
impl Tool for ReminderTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "reminder",
            "Reminders. add: title, description?, category? (general), due_at? (RFC 3339 or \
             YYYY-MM-DD), recurrence? (cron): a due one wakes you with `Reminder: <title>`. \
             list: status?, category?. complete / remove: id. snooze: id, due_at. overdue.",
            super::NAME,
        )
        .parameters(crate::args::schema::<Args>())
    }

    /// Adding one with a due time (or snoozing one to a new time) plants a fire.
    /// Arguments that do not read ask as a planting call does, the most this tool asks.
    fn approval_for(&self, args: &Value) -> Option<ApprovalMode> {
        crate::args::decide(args, Some(ApprovalMode::UnlessAutoApproved), |a: Args| {
            a.plants().then_some(ApprovalMode::UnlessAutoApproved)
        })
    }

    fn sink(&self, args: &Value) -> Option<String> {
        // Exactly the arguments that plant or widen work ask for approval above.
        self.approval_for(args)
            .map(|_| "plants work that runs later".to_string())
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        match args.action {
            Action::Add => self.add(args, cx).await,
            Action::List => {
                let all = self
                    .0
                    .store
                    .list_reminders(&cx.agent, args.status, args.category.as_deref())
                    .await
                    .map_err(store_error)?;
                Ok(lines(&all, "No reminders."))
            }
            Action::Overdue => {
                let now = now();
                let all = self
                    .0
                    .store
                    .list_reminders(&cx.agent, Some(ReminderStatus::Pending), None)
                    .await
                    .map_err(store_error)?;
                let late: Vec<Reminder> = all
                    .into_iter()
                    .filter(|r| r.due_at.is_some_and(|d| d < now))
                    .collect();
                Ok(lines(&late, "Nothing is overdue."))
            }
            Action::Complete | Action::Remove => {
                let id = required("id", args.id.as_deref())?;
                let store = &self.0.store;
                let found = if args.action == Action::Complete {
                    store
                        .update_reminder(&cx.agent, id, ReminderStatus::Done, None)
                        .await
                } else {
                    store.remove_reminder(&cx.agent, id).await
                }
                .map_err(store_error)?;
                if !found {
                    return Err(ToolError::not_found(format!("no reminder `{id}`")));
                }
                store
                    .remove_owned_schedule(Some(&super::caller(cx)), &cx.agent, &schedule_name(id))
                    .await
                    .map_err(store_error)?;
                let done = if args.action == Action::Complete {
                    "Completed"
                } else {
                    "Removed"
                };
                Ok(ToolOutput::text(format!("{done} reminder {id}")))
            }
            Action::Snooze => {
                let id = required("id", args.id.as_deref())?;
                let due = parse_due(required("due_at", args.due_at.as_deref())?)?;
                if due <= now() {
                    return Err(ToolError::invalid_arguments(
                        "`due_at` must be in the future",
                    ));
                }
                let r = self
                    .0
                    .store
                    .get_reminder(&cx.agent, id)
                    .await
                    .map_err(store_error)?
                    .ok_or_else(|| ToolError::not_found(format!("no reminder `{id}`")))?;
                self.0
                    .store
                    .update_reminder(&cx.agent, id, ReminderStatus::Snoozed, Some(due))
                    .await
                    .map_err(store_error)?;
                self.0
                    .store
                    .remove_owned_schedule(Some(&super::caller(cx)), &cx.agent, &schedule_name(id))
                    .await
                    .map_err(store_error)?;
                self.plant(cx, &r.id, &r.title, due, r.recurrence.as_deref())
                    .await?;
                Ok(ToolOutput::text(format!("Snoozed {id} to {}", stamp(due))))
            }
        }
    }
}

impl ReminderTool {
    async fn add(&self, args: Args, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let title = required("title", args.title.as_deref())?.to_string();
        let now = now();
        let due = args.due_at.as_deref().map(parse_due).transpose()?;
        if let Some(expr) = &args.recurrence {
            check_recurring(expr, self.0.zone, self.0.min_interval, now)?;
        }
        let r = self
            .0
            .store
            .add_reminder(
                &cx.agent,
                NewReminder {
                    title: title.clone(),
                    description: args.description.unwrap_or_default(),
                    category: args
                        .category
                        .filter(|c| !c.trim().is_empty())
                        .unwrap_or_else(|| "general".into()),
                    due_at: due,
                    recurrence: args.recurrence.clone(),
                },
            )
            .await
            .map_err(store_error)?;
        let first = match (due, &args.recurrence) {
            (Some(d), _) if d > now => Some(d),
            (_, Some(expr)) => super::next_fire(ScheduleKind::Cron, expr, now, self.0.zone),
            _ => None,
        };
        if let Some(first) = first {
            self.plant(cx, &r.id, &title, first, args.recurrence.as_deref())
                .await?;
        }
        Ok(ToolOutput::text(format!("Added {}", line(&r))))
    }

    /// The schedule that fires the reminder at `at` (and then by `recurrence`).
    async fn plant(
        &self,
        cx: &ToolContext,
        id: &str,
        title: &str,
        at: OffsetDateTime,
        recurrence: Option<&str>,
    ) -> Result<(), ToolError> {
        let session = Some(cx.session_id.clone()).filter(|s| !s.is_empty());
        let (kind, spec, max_fires) = match recurrence {
            Some(expr) => (ScheduleKind::Cron, expr.to_string(), None),
            None => (ScheduleKind::Once, once_marker(at), Some(1)),
        };
        self.0
            .store
            .add_owned_schedule(
                NewSchedule {
                    agent: cx.agent.clone(),
                    name: schedule_name(id),
                    kind,
                    spec,
                    message: format!("Reminder: {title}"),
                    next_fire: Some(at),
                    target: if session.is_some() {
                        Target::Pinned
                    } else {
                        Target::Fresh
                    },
                    session_id: session,
                    max_fires,
                    expires_at: None,
                },
                Some(&super::caller(cx)),
            )
            .await
            .map_err(store_error)?;
        Ok(())
    }
}

fn required<'a>(field: &str, v: Option<&'a str>) -> Result<&'a str, ToolError> {
    v.map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ToolError::invalid_arguments(format!("`{field}` is required")))
}

/// RFC 3339, or a date (`YYYY-MM-DD`) at 00:00 UTC.
fn parse_due(text: &str) -> Result<OffsetDateTime, ToolError> {
    let date = time::macros::format_description!("[year]-[month]-[day]");
    if let Ok(d) = time::Date::parse(text.trim(), &date) {
        return Ok(d.midnight().assume_utc());
    }
    parse_time("due_at", text)
}

fn line(r: &Reminder) -> String {
    let mut s = format!(
        "- {} [{}] ({}) {}",
        r.id,
        r.status.as_str(),
        r.category,
        r.title
    );
    if let Some(d) = r.due_at {
        s.push_str(&format!(" — due {}", stamp(d)));
    }
    if let Some(rec) = &r.recurrence {
        s.push_str(&format!(", recurs `{rec}`"));
    }
    if !r.description.is_empty() {
        s.push_str(&format!(": {}", r.description));
    }
    s
}

fn lines(all: &[Reminder], empty: &str) -> ToolOutput {
    if all.is_empty() {
        return ToolOutput::text(empty);
    }
    ToolOutput::text(all.iter().map(line).collect::<Vec<_>>().join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::MockHost;
    use serde_json::json;

    fn cx() -> ToolContext {
        Arc::new(MockHost::new()).context()
    }

    fn tool() -> ReminderTool {
        ReminderTool(Arc::new(ScheduleSettings {
            store: tackle_store::Store::open_in_memory().unwrap(),
            zone: super::super::Zone::default(),
            min_interval: std::time::Duration::from_secs(60),
            agents: vec![],
            schedule_for: Default::default(),
        }))
    }

    #[tokio::test]
    async fn a_due_reminder_plants_a_fire_that_complete_cancels() {
        let t = tool();
        let due = (now() + time::Duration::days(2)).date().to_string();
        let out = t
            .call(
                json!({"action": "add", "title": "pay rent", "due_at": due}),
                &cx(),
            )
            .await
            .unwrap();
        assert!(
            out.content.contains("r1 [pending] (general) pay rent"),
            "{}",
            out.content
        );
        let s =
            t.0.store
                .get_schedule("default", "reminder-r1")
                .await
                .unwrap()
                .unwrap();
        assert_eq!(s.message, "Reminder: pay rent");
        assert_eq!(s.kind, ScheduleKind::Once);
        t.call(json!({"action": "complete", "id": "r1"}), &cx())
            .await
            .unwrap();
        assert!(t
            .0
            .store
            .get_schedule("default", "reminder-r1")
            .await
            .unwrap()
            .is_none());
        let done = t
            .call(json!({"action": "list", "status": "done"}), &cx())
            .await
            .unwrap();
        assert!(done.content.contains("r1 [done]"), "{}", done.content);
    }

    #[tokio::test]
    async fn snooze_moves_the_fire_and_overdue_lists_pending_past_due() {
        let t = tool();
        let past = "2020-01-01T00:00:00Z";
        t.call(
            json!({"action": "add", "title": "old", "due_at": past}),
            &cx(),
        )
        .await
        .unwrap();
        let overdue = t.call(json!({"action": "overdue"}), &cx()).await.unwrap();
        assert!(overdue.content.contains("r1"), "{}", overdue.content);
        let later = now() + time::Duration::hours(3);
        let later_text = later
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap();
        t.call(
            json!({"action": "snooze", "id": "r1", "due_at": later_text}),
            &cx(),
        )
        .await
        .unwrap();
        let s =
            t.0.store
                .get_schedule("default", "reminder-r1")
                .await
                .unwrap()
                .unwrap();
        assert_eq!(
            s.next_fire.map(|n| n.unix_timestamp()),
            Some(later.unix_timestamp())
        );
        let none = t.call(json!({"action": "overdue"}), &cx()).await.unwrap();
        assert_eq!(none.content, "Nothing is overdue.");
    }

    #[test]
    fn adding_with_a_due_time_or_snoozing_asks_and_listing_does_not() {
        let t = tool();
        let ask = Some(ApprovalMode::UnlessAutoApproved);
        assert_eq!(
            t.approval_for(&json!({"action": "add", "title": "x", "due_at": "2030-01-01"})),
            ask
        );
        assert_eq!(
            t.approval_for(&json!({"action": "snooze", "id": "r1"})),
            ask
        );
        assert_eq!(
            t.approval_for(&json!({"action": "add", "title": "x"})),
            None
        );
        assert_eq!(t.approval_for(&json!({"action": "list"})), None);
    }

    #[test]
    fn each_action_asks_and_sinks_as_its_typed_arguments_say() {
        let t = tool();
        let ask = Some(ApprovalMode::UnlessAutoApproved);
        let plants = Some("plants work that runs later".to_string());
        for (args, asks) in [
            (
                json!({"action": "add", "title": "x", "due_at": "2030-01-01"}),
                true,
            ),
            (
                json!({"action": "add", "title": "x", "recurrence": "0 0 9 * * *"}),
                true,
            ),
            (
                json!({"action": "add", "title": "x", "category": "home"}),
                false,
            ),
            (
                json!({"action": "snooze", "id": "r1", "due_at": "2030-01-01"}),
                true,
            ),
            (json!({"action": "list", "status": "snoozed"}), false),
            (json!({"action": "complete", "id": "r1"}), false),
            (json!({"action": "remove", "id": "r1"}), false),
            (json!({"action": "overdue"}), false),
        ] {
            assert!(
                crate::args::contract::accepts(&t.spec().parameters, &args),
                "{args}"
            );
            assert_eq!(
                t.approval_for(&args),
                asks.then_some(ask).flatten(),
                "{args}"
            );
            assert_eq!(
                t.sink(&args),
                asks.then(|| plants.clone()).flatten(),
                "{args}"
            );
        }
        // A `null` due time, which the typed read takes as absent, never reaches the hook:
        // the schema refuses it.
        let null_due = json!({"action": "add", "title": "x", "due_at": null});
        assert!(!crate::args::contract::accepts(
            &t.spec().parameters,
            &null_due
        ));
        // Arguments that do not read as `Args` ask and count as a sink.
        for unread in [
            json!({"action": "list", "no_such_field": 1}),
            json!({"action": "postpone", "id": "r1"}),
            json!({"title": "x"}),
        ] {
            assert_eq!(t.approval_for(&unread), ask, "{unread}");
            assert_eq!(t.sink(&unread), plants, "{unread}");
        }
    }
}
