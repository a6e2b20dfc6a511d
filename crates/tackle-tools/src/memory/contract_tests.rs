//! The memory tools' argument contract: the property names and `required` lists their schemas
//! always had (written out here, since models and MCP clients rely on them), and refusal of an
//! unknown or a missing field with `invalid_arguments`.

use super::extension;
use super::tests::settings;
use crate::args::contract::{assert_closed, assert_refusals, named};
use serde_json::json;
use std::sync::Arc;
use tackle_protocol::Tool;

fn tool(name: &str) -> Arc<dyn Tool> {
    named(extension(settings(&[])).tools(), name)
}

#[test]
fn the_schemas_name_the_properties_and_requirements_they_always_had() {
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            "remember",
            &["key", "value", "tags", "bank"],
            &["key", "value"],
        ),
        ("recall", &["query", "tags", "limit", "bank"], &["query"]),
        ("list_memory_banks", &[], &[]),
        (
            "memory",
            &[
                "action",
                "query",
                "max_results",
                "min_score",
                "include_citations",
                "path",
                "from",
                "lines",
            ],
            &[],
        ),
        (
            "longterm_memory",
            &[
                "action",
                "key",
                "value",
                "category",
                "tags",
                "importance",
                "query",
            ],
            &["action"],
        ),
    ];
    assert_closed(tool, cases);
}

#[test]
fn the_bounds_and_value_sets_stay() {
    let recall = tool("recall").spec().parameters;
    assert_eq!(recall["properties"]["limit"]["minimum"], json!(1));
    assert_eq!(recall["properties"]["limit"]["maximum"], json!(100));
    assert_eq!(
        recall["properties"]["tags"]["items"]["type"],
        json!("string")
    );
    let notes = tool("memory").spec().parameters;
    assert_eq!(
        notes["properties"]["action"]["enum"],
        json!(["search", "get"])
    );
    assert_eq!(notes["properties"]["from"]["minimum"], json!(1));
    let longterm = tool("longterm_memory").spec().parameters;
    assert_eq!(
        longterm["properties"]["action"]["enum"],
        json!([
            "set",
            "get",
            "search",
            "delete",
            "list",
            "categories",
            "pin"
        ])
    );
    assert_eq!(longterm["properties"]["importance"]["minimum"], json!(0));
}

#[tokio::test]
async fn an_unknown_or_a_missing_field_is_refused() {
    let cases = [
        (
            "remember",
            json!({"key": "tz", "value": "UTC"}),
            &["key", "value"][..],
        ),
        ("recall", json!({"query": "tz"}), &["query"]),
        ("memory", json!({"action": "search", "query": "x"}), &[]),
        (
            "longterm_memory",
            json!({"action": "categories"}),
            &["action"],
        ),
    ];
    for (name, valid, required) in cases {
        assert_refusals(&*tool(name), valid, required).await;
    }
}
