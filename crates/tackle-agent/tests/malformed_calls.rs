//! A call whose argument text is not JSON never reaches a tool, and the refusal is recorded
//! in the audit log like every other decision (the model's mistakes are evidence too).

mod tree_support;

use std::sync::Arc;
use std::time::Duration;
use tackle_agent::approvers::AutoApprover;
use tackle_store::AuditQuery;
use tokio_util::sync::CancellationToken;
use tree_support::{results, Harness, Reply};

#[tokio::test]
async fn arguments_that_are_not_json_are_refused_and_audited() {
    let harness = Harness::new(
        "agents:\n  - name: default\n",
        Box::new(|req| {
            if results(req).is_empty() {
                Reply::RawCalls(vec![
                    ("shell", "{\"command\": \"touch PLANTED".to_string()),
                    ("calculate", "expression=6*7".to_string()),
                ])
            } else {
                Reply::Text("done".into())
            }
        }),
        Duration::ZERO,
    );
    let (_out, _session) = harness
        .run("go", Arc::new(AutoApprover), &CancellationToken::new())
        .await;
    assert!(
        !harness.workspace().join("PLANTED").exists(),
        "a call with unparsable arguments ran"
    );
    let records = harness
        .store
        .audit_query(AuditQuery::default())
        .await
        .expect("audit");
    for tool in ["shell", "calculate"] {
        let rec = records.iter().find(|r| r.tool == tool).unwrap_or_else(|| {
            panic!("no audit record for the malformed {tool} call: {records:?}")
        });
        assert_eq!(rec.verdict, tackle_protocol::Verdict::Deny, "{rec:?}");
        assert_eq!(rec.outcome, "invalid_arguments", "{rec:?}");
    }
}
