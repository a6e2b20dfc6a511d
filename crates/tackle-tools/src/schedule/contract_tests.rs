//! The schedule tools' argument contract: the property names and `required` lists their
//! schemas always had (written out here, since models and MCP clients rely on them), and
//! refusal of an unknown or a missing field with `invalid_arguments`.

use super::{extension, ScheduleSettings, Zone};
use crate::args::contract::{assert_closed, assert_refusals, named};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::Tool;
use tackle_store::Store;

fn tool(name: &str) -> Arc<dyn Tool> {
    let settings = ScheduleSettings {
        store: Store::open_in_memory().unwrap(),
        zone: Zone::default(),
        min_interval: Duration::from_secs(60),
        agents: vec!["default".into()],
        schedule_for: Default::default(),
    };
    named(extension(settings).tools(), name)
}

#[test]
fn the_schemas_name_the_properties_and_requirements_they_always_had() {
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            "schedule_add",
            &[
                "id",
                "cron",
                "task",
                "agent",
                "target",
                "max_fires",
                "expires_at",
            ],
            &["id", "cron", "task"],
        ),
        (
            "schedule_modify",
            &[
                "id",
                "agent",
                "cron",
                "task",
                "target",
                "enabled",
                "max_fires",
                "expires_at",
            ],
            &["id"],
        ),
        ("schedule_remove", &["id", "agent"], &["id"]),
        ("schedule_list", &["agent"], &[]),
        (
            "schedule_once",
            &["after_seconds", "task"],
            &["after_seconds", "task"],
        ),
        (
            "cron",
            &[
                "action",
                "message",
                "name",
                "every_seconds",
                "cron_expr",
                "at",
                "include_disabled",
                "job_id",
                "channel",
                "chat_id",
            ],
            &["action"],
        ),
        (
            "reminder",
            &[
                "action",
                "title",
                "description",
                "category",
                "due_at",
                "recurrence",
                "id",
                "status",
            ],
            &["action"],
        ),
    ];
    assert_closed(tool, cases);
}

#[test]
fn the_bounds_and_value_sets_stay() {
    let add = tool("schedule_add").spec().parameters;
    assert_eq!(
        add["properties"]["target"]["enum"],
        json!(["pinned", "fresh"])
    );
    assert_eq!(add["properties"]["max_fires"]["minimum"], json!(1));
    assert_eq!(add["properties"]["task"]["minLength"], json!(1));
    let modify = tool("schedule_modify").spec().parameters;
    // `null` clears a bound and nothing else.
    assert_eq!(
        modify["properties"]["max_fires"]["type"],
        json!(["integer", "null"])
    );
    assert_eq!(
        modify["properties"]["expires_at"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(modify["properties"]["cron"]["type"], json!("string"));
    assert_eq!(modify["properties"]["enabled"]["type"], json!("boolean"));
    let once = tool("schedule_once").spec().parameters;
    assert_eq!(once["properties"]["after_seconds"]["minimum"], json!(30));
    assert_eq!(
        once["properties"]["after_seconds"]["maximum"],
        json!(2_592_000)
    );
    let cron = tool("cron").spec().parameters;
    assert_eq!(
        cron["properties"]["action"]["enum"],
        json!(["add", "list", "remove"])
    );
    assert_eq!(cron["properties"]["every_seconds"]["minimum"], json!(60));
    let reminder = tool("reminder").spec().parameters;
    assert_eq!(
        reminder["properties"]["action"]["enum"],
        json!(["add", "list", "complete", "snooze", "remove", "overdue"])
    );
    assert_eq!(
        reminder["properties"]["status"]["enum"],
        json!(["pending", "done", "snoozed"])
    );
}

#[tokio::test]
async fn an_unknown_or_a_missing_field_is_refused() {
    let cases = [
        (
            "schedule_add",
            json!({"id": "standup", "cron": "0 0 9 * * *", "task": "summarise"}),
            &["id", "cron", "task"][..],
        ),
        (
            "schedule_modify",
            json!({"id": "standup", "enabled": false}),
            &["id"],
        ),
        ("schedule_remove", json!({"id": "standup"}), &["id"]),
        ("schedule_list", json!({}), &[]),
        (
            "schedule_once",
            json!({"after_seconds": 600, "task": "check"}),
            &["after_seconds", "task"],
        ),
        ("cron", json!({"action": "list"}), &["action"]),
        ("reminder", json!({"action": "overdue"}), &["action"]),
    ];
    for (name, valid, required) in cases {
        assert_refusals(&*tool(name), valid, required).await;
    }
}

/// `null` on a bound clears it; on anything else it is refused, as the hand-read arguments did.
#[tokio::test]
async fn schedule_modify_reads_null_only_on_bounds() {
    let modify = tool("schedule_modify");
    let schema = modify.spec().parameters;
    let accepts = |v: serde_json::Value| crate::args::contract::accepts(&schema, &v);
    assert!(accepts(json!({"id": "a", "max_fires": null})));
    assert!(accepts(json!({"id": "a", "expires_at": null})));
    assert!(!accepts(json!({"id": "a", "cron": null})));
    assert!(!accepts(json!({"id": "a", "max_fires": 0})));
    assert!(!accepts(json!({"id": "a", "target": "elsewhere"})));
}
