//! The service tools' argument contract: the property names and `required` lists their schemas
//! always had (written out here, since models and MCP clients rely on them), and refusal of an
//! unknown or a missing field with `invalid_arguments`.

use super::{extension, ServicesSettings};
use crate::args::contract::{assert_closed, assert_refusals, named};
use serde_json::json;
use std::sync::Arc;
use tackle_protocol::Tool;

fn tool(name: &str) -> Arc<dyn Tool> {
    named(extension(ServicesSettings::default()).tools(), name)
}

#[test]
fn the_schemas_name_the_properties_and_requirements_they_always_had() {
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            "whatsapp",
            &["to", "message", "template", "template_params", "language"],
            &["to"],
        ),
        (
            "gsheets",
            &["spreadsheet_id", "action", "range", "values"],
            &["spreadsheet_id", "action", "range"],
        ),
        (
            "stripe",
            &[
                "action",
                "amount",
                "currency",
                "description",
                "payment_id",
                "payment_intent_id",
                "customer_id",
                "email",
                "name",
                "limit",
                "payload",
                "signature",
            ],
            &["action"],
        ),
        (
            "r8r",
            &[
                "action",
                "workflow",
                "inputs",
                "wait",
                "execution_id",
                "event",
                "data",
                "definition",
            ],
            &[],
        ),
    ];
    assert_closed(tool, cases);
}

#[test]
fn the_value_sets_and_bounds_stay() {
    let gsheets = tool("gsheets").spec().parameters;
    assert_eq!(
        gsheets["properties"]["action"]["enum"],
        json!(["read", "append", "update"])
    );
    let stripe = tool("stripe").spec().parameters;
    assert_eq!(
        stripe["properties"]["action"]["enum"],
        json!([
            "create_payment",
            "get_payment",
            "list_payments",
            "create_customer",
            "get_customer",
            "list_customers",
            "create_refund",
            "get_balance",
            "verify_webhook"
        ])
    );
    assert_eq!(stripe["properties"]["amount"]["minimum"], json!(1));
    let r8r = tool("r8r").spec().parameters;
    assert_eq!(
        r8r["properties"]["action"]["enum"],
        json!(["run", "list", "show", "status", "emit", "create"])
    );
    assert_eq!(r8r["properties"]["inputs"]["type"], json!("object"));
    assert_eq!(r8r["properties"]["data"]["type"], json!("object"));
}

#[tokio::test]
async fn an_unknown_or_a_missing_field_is_refused() {
    let cases = [
        (
            "whatsapp",
            json!({"to": "14155550123", "message": "hi"}),
            &["to"][..],
        ),
        (
            "gsheets",
            json!({"spreadsheet_id": "abc", "action": "read", "range": "A1:B2"}),
            &["spreadsheet_id", "action", "range"],
        ),
        ("stripe", json!({"action": "get_balance"}), &["action"]),
        ("r8r", json!({"action": "list"}), &[]),
    ];
    for (name, valid, required) in cases {
        assert_refusals(&*tool(name), valid, required).await;
    }
}
