//! The agent tools' argument contract: the property names and `required` lists their schemas
//! always had (written out here, since models and MCP clients rely on them), and refusal of an
//! unknown or a missing field with `invalid_arguments`.

use crate::args::contract::{assert_names, assert_refusals};
use crate::mock_host::MockHost;
use serde_json::json;
use std::sync::Arc;
use tackle_protocol::{ErrorKind, Tool};

fn tool(name: &str) -> Arc<dyn Tool> {
    crate::args::contract::named(super::extension().tools(), name)
}

const CHILD: &[&str] = &[
    "task",
    "context",
    "model",
    "preset",
    "max_iterations",
    "async",
];

#[test]
fn the_schemas_name_the_properties_and_requirements_they_always_had() {
    let agent = [CHILD, &["agent", "agent_ref"]].concat();
    let worker = [CHILD, &["name", "tools"]].concat();
    let cases: &[(&str, &[&str], &[&str])] = &[
        ("spawn_agent", &agent, &["task"]),
        ("spawn_worker", &worker, &["name", "task"]),
        ("spawn", &["task", "label"], &["task"]),
        (
            "delegate",
            &[
                "action",
                "role",
                "task",
                "tools",
                "tasks",
                "parallel",
                "merge_strategy",
            ],
            &[],
        ),
        (
            "message",
            &[
                "content", "channel", "chat_id", "reply_to", "action", "payload", "file",
            ],
            &["content"],
        ),
    ];
    for (name, properties, required) in cases {
        assert_names(&tool(name).spec().parameters, properties, required);
    }
    let delegate = tool("delegate").spec().parameters;
    assert_eq!(
        delegate["properties"]["action"]["enum"],
        json!(["run", "aggregate"])
    );
    assert_eq!(
        delegate["properties"]["merge_strategy"]["enum"],
        json!(["concatenate", "summarize"])
    );
    assert_eq!(
        delegate["properties"]["tasks"]["items"]["required"],
        json!(["task"])
    );
    let message = tool("message").spec().parameters;
    assert_eq!(
        message["properties"]["action"]["enum"],
        json!(["send", "react", "rich_message", "inline_keyboard"])
    );
}

#[tokio::test]
async fn an_unknown_or_a_missing_field_is_refused() {
    let cases = [
        (
            "spawn_agent",
            json!({"agent": "researcher", "task": "look"}),
            &["task"][..],
        ),
        (
            "spawn_worker",
            json!({"name": "coder", "task": "fix"}),
            &["name", "task"],
        ),
        ("spawn", json!({"task": "watch"}), &["task"]),
        ("delegate", json!({"role": "critic", "task": "read"}), &[]),
        ("message", json!({"content": "hi"}), &["content"]),
    ];
    for (name, valid, required) in cases {
        assert_refusals(&*tool(name), valid, required).await;
    }
}

/// `agent_ref` names the agent as `agent` does; naming none, or both, is refused.
#[tokio::test]
async fn spawn_agent_takes_the_agent_under_either_name_once() {
    let spawn = tool("spawn_agent");
    let schema = spawn.spec().parameters;
    assert!(crate::args::contract::accepts(
        &schema,
        &json!({"agent_ref": "researcher", "task": "look"})
    ));
    for args in [
        json!({"task": "look"}),
        json!({"agent": "a", "agent_ref": "b", "task": "look"}),
    ] {
        let cx = Arc::new(MockHost::new()).context();
        let err = spawn.call(args.clone(), &cx).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArguments, "{args}");
        assert!(err.message.contains("field `agent`"), "{}", err.message);
    }
}
