//! `schedule_add`, `schedule_modify`, `schedule_remove`, `schedule_list`, and the functions
//! behind them that `tackle schedule` calls too, so both front ends check the same rules.

use super::plan::{check_recurring, parse_time};
use super::render::schedule_line;
use super::{caller, now, store_error, ScheduleSettings};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::sync::Arc;
use tackle_protocol::{ApprovalMode, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tackle_store::{NewSchedule, Schedule, ScheduleKind, ScheduleUpdate, Target};

/// A recurring schedule to plant: what `schedule_add`, `cron add` and the CLI ask for.
#[derive(Debug, Clone)]
pub struct AddRequest {
    /// The agent it fires as.
    pub owner: String,
    /// The agent that plants it (its tree path for a child), when not `owner` itself; only
    /// that agent's schedule tools will see it. `None`: `owner` (or the operator) plants it.
    pub planted_by: Option<String>,
    /// The schedule's id, unique per owner.
    pub id: String,
    /// The cron expression, read in the settings' zone.
    pub cron: String,
    /// What the agent is told when it fires.
    pub task: String,
    /// Where a fire is delivered.
    pub target: Target,
    /// The session a `Pinned` target reports to (without one it runs fresh); else ignored.
    pub session_id: Option<String>,
    /// Fires after which the schedule stops; `None`: no limit.
    pub max_fires: Option<u32>,
    /// RFC 3339 time after which the schedule stops firing; `None`: never.
    pub expires_at: Option<String>,
}

/// Checks and stores `req`; the first fire is the expression's next one after now.
pub async fn add_recurring(
    settings: &ScheduleSettings,
    req: AddRequest,
) -> Result<Schedule, ToolError> {
    let id = req.id.as_str();
    tackle_protocol::ids::check(tackle_protocol::ids::IdKind::Schedule, id)
        .map_err(|e| ToolError::invalid_arguments(e.to_string()))?;
    if req.task.trim().is_empty() {
        return Err(ToolError::invalid_arguments("`task` must not be empty"));
    }
    if req.max_fires == Some(0) {
        return Err(ToolError::invalid_arguments(
            "`max_fires` must be at least 1",
        ));
    }
    let now = now();
    let cron = check_recurring(&req.cron, settings.zone, settings.min_interval, now)?;
    let expires_at = req
        .expires_at
        .as_deref()
        .map(|e| parse_time("expires_at", e))
        .transpose()?;
    let next_fire = cron.next_after(now, settings.zone);
    // A pinned schedule needs a session to report to; without one it runs fresh.
    let target = match (&req.target, &req.session_id) {
        (Target::Pinned, None) => Target::Fresh,
        (t, _) => *t,
    };
    settings
        .store
        .add_owned_schedule(
            NewSchedule {
                agent: req.owner,
                name: id.to_string(),
                kind: ScheduleKind::Cron,
                spec: cron.as_str().to_string(),
                message: req.task,
                next_fire,
                target,
                session_id: req.session_id.filter(|_| target == Target::Pinned),
                max_fires: req.max_fires,
                expires_at,
            },
            req.planted_by.as_deref(),
        )
        .await
        .map_err(store_error)
}

/// A partial change; `Some(None)` in a bound clears it.
#[derive(Debug, Clone, Default)]
pub struct ModifyRequest {
    /// A new cron expression.
    pub cron: Option<String>,
    /// A new task text.
    pub task: Option<String>,
    /// A new delivery target.
    pub target: Option<Target>,
    /// Pauses (`false`) or resumes (`true`) the schedule.
    pub enabled: Option<bool>,
    /// A new fire limit; `Some(None)` removes it.
    pub max_fires: Option<Option<u32>>,
    /// A new RFC 3339 expiry; `Some(None)` removes it.
    pub expires_at: Option<Option<String>>,
}

/// Applies `req` to `owner`'s schedule `id`, if `by` planted it (`None`: the operator, who
/// may change any); a new expression or re-enabling re-plans the next fire from now. Unknown,
/// or planted by someone else → `not_found` (which of the two is not said).
pub async fn modify(
    settings: &ScheduleSettings,
    by: Option<&str>,
    owner: &str,
    id: &str,
    req: ModifyRequest,
) -> Result<Schedule, ToolError> {
    let current = settings
        .store
        .get_owned_schedule(by, owner, id)
        .await
        .map_err(store_error)?
        .ok_or_else(|| not_found(owner, id))?;
    let now = now();
    let mut update = ScheduleUpdate {
        message: req.task,
        enabled: req.enabled,
        target: req.target,
        max_fires: req.max_fires,
        ..ScheduleUpdate::default()
    };
    if req.max_fires == Some(Some(0)) {
        return Err(ToolError::invalid_arguments(
            "`max_fires` must be at least 1",
        ));
    }
    if let Some(e) = req.expires_at {
        update.expires_at = Some(
            e.as_deref()
                .map(|e| parse_time("expires_at", e))
                .transpose()?,
        );
    }
    let spec = match req.cron {
        Some(_) if current.kind == ScheduleKind::Once => {
            return Err(ToolError::invalid_arguments(format!(
                "`{}` is a one-shot; remove it and add a recurring schedule instead of giving `cron`",
                current.name
            )))
        }
        Some(c) => {
            let cron = check_recurring(&c, settings.zone, settings.min_interval, now)?;
            update.kind = Some(ScheduleKind::Cron);
            update.spec = Some(cron.as_str().to_string());
            Some(cron)
        }
        None => None,
    };
    let re_enabled = req.enabled == Some(true) && !current.enabled;
    if current.kind != ScheduleKind::Once && (spec.is_some() || re_enabled) {
        let next = match &spec {
            Some(cron) => cron.next_after(now, settings.zone),
            None => super::next_fire(current.kind, &current.spec, now, settings.zone),
        };
        update.next_fire = Some(next);
    }
    settings
        .store
        .modify_owned_schedule(by, owner, id, update)
        .await
        .map_err(store_error)?
        .ok_or_else(|| not_found(owner, id))
}

/// Removes `owner`'s schedule `id`, if `by` planted it (`None`: the operator); unknown, or
/// planted by someone else → `not_found`.
pub async fn remove(
    settings: &ScheduleSettings,
    by: Option<&str>,
    owner: &str,
    id: &str,
) -> Result<(), ToolError> {
    let removed = settings
        .store
        .remove_owned_schedule(by, owner, id)
        .await
        .map_err(store_error)?;
    if removed {
        Ok(())
    } else {
        Err(not_found(owner, id))
    }
}

/// `owner`'s schedules (every agent's for `None`) that `by` planted (`None`: anyone), one
/// line each with the last fire's outcome.
pub async fn list_lines(
    settings: &ScheduleSettings,
    by: Option<&str>,
    owner: Option<&str>,
) -> Result<Vec<String>, ToolError> {
    let all = settings
        .store
        .list_owned_schedules(by, owner)
        .await
        .map_err(store_error)?;
    let mut lines = Vec::with_capacity(all.len());
    for s in &all {
        let last = settings
            .store
            .fires(&s.agent, &s.name, 1)
            .await
            .map_err(store_error)?;
        lines.push(schedule_line(s, last.first()));
    }
    Ok(lines)
}

fn not_found(owner: &str, id: &str) -> ToolError {
    ToolError::not_found(format!(
        "agent `{owner}` has no schedule `{id}`; schedule_list shows them"
    ))
}

/// The `schedule_add` tool: plants a recurring schedule.
pub struct ScheduleAdd(pub(super) Arc<ScheduleSettings>);
/// The `schedule_modify` tool: changes a schedule.
pub struct ScheduleModify(pub(super) Arc<ScheduleSettings>);
/// The `schedule_remove` tool: deletes a schedule.
pub struct ScheduleRemove(pub(super) Arc<ScheduleSettings>);
/// The `schedule_list` tool: the calling agent's schedules.
pub struct ScheduleList(pub(super) Arc<ScheduleSettings>);

// The names `target` takes (the store's [`Target`], which has no schema of its own).
#[derive(JsonSchema)]
#[schemars(inline)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)] // only its schema is used
enum TargetName {
    Pinned,
    Fresh,
}

// Arguments of `schedule_add`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AddArgs {
    #[schemars(length(min = 1, max = tackle_protocol::ids::MAX_LEN))]
    id: String,
    cron: String,
    #[schemars(length(min = 1))]
    task: String,
    #[schemars(
        description = "The agent it runs as; default: you. Another agent only where the operator allows it (schedule_for), and a person is always asked."
    )]
    agent: Option<String>,
    #[schemars(with = "Option<TargetName>")]
    target: Option<Target>,
    #[schemars(range(min = 1))]
    max_fires: Option<u32>,
    /// RFC 3339
    expires_at: Option<String>,
}

/// Whether `agent` names an agent (a blank one is the caller itself, as `fires_as` and
/// `among` read it). Naming one in a call that plants or widens work always asks a person,
/// even when calls are auto-approved: it may set work running as someone else.
fn names_an_agent(agent: Option<&str>) -> bool {
    agent.is_some_and(|a| !a.trim().is_empty())
}

fn session(cx: &ToolContext) -> Option<String> {
    Some(cx.session_id.clone()).filter(|s| !s.is_empty())
}

#[async_trait]
impl Tool for ScheduleAdd {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "schedule_add",
            "Plant recurring work: at every fire of cron (6 fields `sec min hour dom month dow` \
             with names, or 5 without seconds), the agent is given task. target pinned (this \
             session, the default) or fresh (a new session each fire). Bounds: max_fires, \
             expires_at (RFC 3339). Example: {\"id\": \"standup\", \"cron\": \"0 0 9 * * Mon-Fri\", \
             \"task\": \"summarise open issues\"}.",
            super::NAME,
        )
        .approval(ApprovalMode::UnlessAutoApproved)
        .parameters(crate::args::schema::<AddArgs>())
    }

    /// Planting work that runs as another agent always asks a person; so do arguments that
    /// do not read, which may name one.
    fn approval_for(&self, args: &Value) -> Option<ApprovalMode> {
        crate::args::decide(args, Some(ApprovalMode::Always), |a: AddArgs| {
            names_an_agent(a.agent.as_deref()).then_some(ApprovalMode::Always)
        })
    }

    fn sink(&self, _args: &Value) -> Option<String> {
        Some("plants work that runs later".into())
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: AddArgs = crate::args::parse(args)?;
        let owner = self.0.fires_as(args.agent.as_deref(), &cx.agent)?;
        // Another agent's schedule cannot report to this agent's session.
        let session = session(cx).filter(|_| owner == cx.agent);
        let s = add_recurring(
            &self.0,
            AddRequest {
                planted_by: Some(caller(cx)),
                owner,
                id: args.id,
                cron: args.cron,
                task: args.task,
                target: args.target.unwrap_or(Target::Pinned),
                session_id: session,
                max_fires: args.max_fires,
                expires_at: args.expires_at,
            },
        )
        .await?;
        Ok(ToolOutput::text(format!(
            "Scheduled {}{}",
            schedule_line(&s, None),
            super::who_fires::note(&self.0.store, &s)
        ))
        .with_structured(serde_json::to_value(&s).unwrap_or(Value::Null)))
    }
}

#[async_trait]
impl Tool for ScheduleModify {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "schedule_modify",
            "Change a schedule: give id and at least one of cron, task, target, enabled, \
             max_fires, expires_at; only those change, null clears a bound. Re-enabling one \
             past its bound retires it again at its next fire.",
            super::NAME,
        )
        .parameters(crate::args::schema_with_nulls::<ModifyArgs>())
    }

    /// Disabling narrows and asks nothing; anything that enables, re-plans, re-targets,
    /// changes what runs or moves a bound is planting work and asks like `schedule_add`.
    /// Arguments that do not read ask as a change to another agent's schedule does, the most
    /// this tool asks.
    fn approval_for(&self, args: &Value) -> Option<ApprovalMode> {
        crate::args::decide(args, Some(ApprovalMode::Always), |a: ModifyArgs| {
            match (a.widens(), names_an_agent(a.agent.as_deref())) {
                (false, _) => None,
                (true, false) => Some(ApprovalMode::UnlessAutoApproved),
                (true, true) => Some(ApprovalMode::Always),
            }
        })
    }

    fn sink(&self, args: &Value) -> Option<String> {
        // Exactly the arguments that plant or widen work ask for approval above.
        self.approval_for(args)
            .map(|_| "plants work that runs later".to_string())
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: ModifyArgs = crate::args::parse(args)?;
        let owner = ScheduleSettings::among(args.agent.as_deref(), &cx.agent);
        let id = args.id.clone();
        let req = args.into_request()?;
        let s = modify(&self.0, Some(&caller(cx)), &owner, &id, req).await?;
        Ok(ToolOutput::text(format!(
            "Updated {}",
            schedule_line(&s, None)
        )))
    }
}

// Arguments of `schedule_modify`: absent = unchanged, `null` = cleared (bounds only). The
// schema gives the others no `null`, so the dispatcher refuses one there; a call that skips
// the dispatcher reads it as absent.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ModifyArgs {
    id: String,
    #[serde(default)]
    #[schemars(with = "String")]
    agent: Option<String>,
    #[serde(default)]
    #[schemars(with = "String")]
    cron: Option<String>,
    #[serde(default)]
    #[schemars(with = "String", length(min = 1))]
    task: Option<String>,
    #[serde(default)]
    #[schemars(with = "TargetName")]
    target: Option<Target>,
    #[serde(default)]
    #[schemars(with = "bool")]
    enabled: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<u32>", range(min = 1))]
    max_fires: Option<Option<u32>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<String>")]
    expires_at: Option<Option<String>>,
}

/// A field that is there, `null` included: `Some(None)` for `null`, and absent stays `None`
/// through `#[serde(default)]`.
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

impl ModifyArgs {
    /// Whether the change plants or widens work: every field but `enabled: false` does (a
    /// cleared bound too: `null` lets the schedule fire on).
    fn widens(&self) -> bool {
        self.cron.is_some()
            || self.task.is_some()
            || self.target.is_some()
            || self.max_fires.is_some()
            || self.expires_at.is_some()
            || self.enabled == Some(true)
    }

    /// The partial change, refused when it changes nothing.
    fn into_request(self) -> Result<ModifyRequest, ToolError> {
        let req = ModifyRequest {
            cron: self.cron,
            task: self.task,
            target: self.target,
            enabled: self.enabled,
            max_fires: self.max_fires,
            expires_at: self.expires_at,
        };
        let any = req.cron.is_some()
            || req.task.is_some()
            || req.target.is_some()
            || req.enabled.is_some()
            || req.max_fires.is_some()
            || req.expires_at.is_some();
        if !any {
            return Err(ToolError::invalid_arguments(
                "give at least one of cron, task, target, enabled, max_fires, expires_at",
            ));
        }
        Ok(req)
    }
}

// Arguments of `schedule_remove`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct IdArgs {
    id: String,
    agent: Option<String>,
}

#[async_trait]
impl Tool for ScheduleRemove {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "schedule_remove",
            "Remove one of your schedules by id (its fire log stays).",
            super::NAME,
        )
        .parameters(crate::args::schema::<IdArgs>())
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: IdArgs = crate::args::parse(args)?;
        let owner = ScheduleSettings::among(args.agent.as_deref(), &cx.agent);
        remove(&self.0, Some(&caller(cx)), &owner, &args.id).await?;
        Ok(ToolOutput::text(format!("Removed schedule {}", args.id)))
    }
}

// Arguments of `schedule_list`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    agent: Option<String>,
}

#[async_trait]
impl Tool for ScheduleList {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "schedule_list",
            "List the schedules you planted: id, expression (@time for one-shots), (disabled), bounds, \
             [fired N×], target, next fire, last outcome, task.",
            super::NAME,
        )
        .parameters(crate::args::schema::<ListArgs>())
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: ListArgs = crate::args::parse(args)?;
        // Every schedule this agent planted (also those running as others), never another's.
        let among = args
            .agent
            .as_deref()
            .map(str::trim)
            .filter(|a| !a.is_empty());
        let lines = list_lines(&self.0, Some(&caller(cx)), among).await?;
        if lines.is_empty() {
            return Ok(ToolOutput::text("You have no schedules."));
        }
        Ok(ToolOutput::text(lines.join("\n")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tackle_store::Store;

    fn settings() -> ScheduleSettings {
        ScheduleSettings {
            store: Store::open_in_memory().unwrap(),
            zone: super::super::Zone::default(),
            min_interval: std::time::Duration::from_secs(60),
            agents: vec!["default".into()],
            schedule_for: Default::default(),
        }
    }

    fn req(id: &str, cron: &str) -> AddRequest {
        AddRequest {
            owner: "default".into(),
            planted_by: None,
            id: id.into(),
            cron: cron.into(),
            task: "check".into(),
            target: Target::Fresh,
            session_id: None,
            max_fires: Some(2),
            expires_at: None,
        }
    }

    #[tokio::test]
    async fn a_duplicate_id_or_a_bad_field_is_invalid_arguments() {
        let s = settings();
        add_recurring(&s, req("a", "0 0 9 * * Mon-Fri"))
            .await
            .unwrap();
        let dup = add_recurring(&s, req("a", "0 0 9 * * *"))
            .await
            .unwrap_err();
        assert_eq!(dup.kind, tackle_protocol::ErrorKind::InvalidArguments);
        let bad = add_recurring(&s, req("b", "0 0 9 * * Funday"))
            .await
            .unwrap_err();
        assert_eq!(bad.kind, tackle_protocol::ErrorKind::InvalidArguments);
        assert!(bad.message.contains("day of week"), "{}", bad.message);
        let fast = add_recurring(&s, req("c", "* * * * * *"))
            .await
            .unwrap_err();
        assert!(
            fast.message.contains("min_interval_secs"),
            "{}",
            fast.message
        );
    }

    #[tokio::test]
    async fn null_clears_a_bound_and_disabling_keeps_the_row() {
        let s = settings();
        add_recurring(&s, req("a", "0 0 9 * * *")).await.unwrap();
        let m = modify(
            &s,
            None,
            "default",
            "a",
            ModifyRequest {
                max_fires: Some(None),
                enabled: Some(false),
                ..ModifyRequest::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(m.max_fires, None);
        assert!(!m.enabled);
        let lines = list_lines(&s, None, Some("default")).await.unwrap();
        assert!(lines[0].contains("(disabled) [fired 0×]"), "{}", lines[0]);
        let gone = modify(&s, None, "default", "nope", ModifyRequest::default())
            .await
            .unwrap_err();
        assert_eq!(gone.kind, tackle_protocol::ErrorKind::NotFound);
    }

    #[test]
    fn only_disabling_asks_no_approval() {
        let t = ScheduleModify(Arc::new(settings()));
        assert_eq!(t.approval_for(&json!({"id": "a", "enabled": false})), None);
        for widen in [
            json!({"id": "a", "enabled": true}),
            json!({"id": "a", "cron": "0 0 * * * *"}),
            json!({"id": "a", "max_fires": null}),
            json!({"id": "a", "task": "other"}),
        ] {
            assert_eq!(
                t.approval_for(&widen),
                Some(ApprovalMode::UnlessAutoApproved),
                "{widen}"
            );
        }
    }

    #[test]
    fn modify_asks_by_its_typed_fields_and_always_for_another_agent_or_unread_arguments() {
        let t = ScheduleModify(Arc::new(settings()));
        let schema = t.spec().parameters;
        let ask = Some(ApprovalMode::UnlessAutoApproved);
        let always = Some(ApprovalMode::Always);
        let plants = Some("plants work that runs later".to_string());
        for (args, mode) in [
            (json!({"id": "a", "enabled": false}), None),
            (json!({"id": "a", "enabled": false, "agent": "ops"}), None),
            (json!({"id": "a", "enabled": false, "agent": "  "}), None),
            (json!({"id": "a", "enabled": true}), ask),
            (json!({"id": "a", "cron": "0 0 * * * *"}), ask),
            (json!({"id": "a", "task": "other"}), ask),
            (json!({"id": "a", "target": "fresh"}), ask),
            (json!({"id": "a", "max_fires": 3}), ask),
            (json!({"id": "a", "max_fires": null}), ask),
            (
                json!({"id": "a", "expires_at": "2030-01-01T00:00:00Z"}),
                ask,
            ),
            (json!({"id": "a", "expires_at": null}), ask),
            (json!({"id": "a", "enabled": true, "agent": " "}), ask),
            (json!({"id": "a", "enabled": true, "agent": "ops"}), always),
            (
                json!({"id": "a", "max_fires": null, "agent": "ops"}),
                always,
            ),
        ] {
            assert!(crate::args::contract::accepts(&schema, &args), "{args}");
            assert_eq!(t.approval_for(&args), mode, "{args}");
            assert_eq!(t.sink(&args), mode.and(plants.clone()), "{args}");
        }
        // `null` where it does not clear a bound is refused by the schema, so the typed read
        // (which takes it as absent) never sees it.
        for null in [
            json!({"id": "a", "cron": null}),
            json!({"id": "a", "agent": null}),
        ] {
            assert!(!crate::args::contract::accepts(&schema, &null), "{null}");
        }
        // Accepted by the schema (no upper bound), refused by `u32`; and a field `ModifyArgs`
        // does not know.
        let too_big = json!({"id": "a", "enabled": false, "max_fires": 5_000_000_000_u64});
        assert!(crate::args::contract::accepts(&schema, &too_big));
        for unread in [too_big, json!({"id": "a", "enabled": false, "later": 1})] {
            assert_eq!(t.approval_for(&unread), always, "{unread}");
            assert_eq!(t.sink(&unread), plants, "{unread}");
        }
    }

    #[test]
    fn add_asks_always_for_another_agent_or_unread_arguments() {
        let t = ScheduleAdd(Arc::new(settings()));
        let schema = t.spec().parameters;
        let base = json!({"id": "a", "cron": "0 0 9 * * *", "task": "check"});
        let with = |extra: Value| {
            let mut args = base.clone();
            if let (Some(obj), Value::Object(more)) = (args.as_object_mut(), extra) {
                obj.extend(more);
            }
            args
        };
        for (args, mode) in [
            (base.clone(), None),
            (with(json!({"agent": ""})), None),
            (with(json!({"target": "fresh", "max_fires": 2})), None),
            (with(json!({"agent": "ops"})), Some(ApprovalMode::Always)),
        ] {
            assert!(crate::args::contract::accepts(&schema, &args), "{args}");
            assert_eq!(t.approval_for(&args), mode, "{args}");
            assert!(t.sink(&args).is_some(), "{args}");
        }
        let too_big = with(json!({"max_fires": 5_000_000_000_u64}));
        assert!(crate::args::contract::accepts(&schema, &too_big));
        for unread in [too_big, with(json!({"later": 1})), json!({"agent": "ops"})] {
            assert_eq!(
                t.approval_for(&unread),
                Some(ApprovalMode::Always),
                "{unread}"
            );
        }
    }
}
