//! One audit record as an OCSF event: class API Activity (6003) of the Application Activity
//! category (6), schema 1.3.0. The mapping, field by field, is in
//! docs/decisions/0032-tamper-evident-audit.md.

use serde_json::{json, Value};
use tackle_protocol::Verdict;
use tackle_store::ExportedEntry;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

const CLASS_UID: u64 = 6003;
const CATEGORY_UID: u64 = 6;
/// `Other`: a tool call is none of Create, Read, Update, Delete.
const ACTIVITY_ID: u64 = 99;
const SCHEMA_VERSION: &str = "1.3.0";

pub fn event(e: &ExportedEntry) -> Value {
    let r = &e.entry.record;
    let time_ms = OffsetDateTime::parse(&r.ts, &Rfc3339)
        .map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
        .unwrap_or(0);
    let (status_id, status) = match r.outcome.as_str() {
        "ok" => (1, "Success"),
        tackle_store::RUNNING => (0, "Unknown"),
        _ => (2, "Failure"),
    };
    // disposition: 1 Allowed, 2 Blocked; severity: 1 Informational, 3 Medium for a refusal.
    let (disposition_id, disposition, severity_id, severity) = match r.verdict {
        Verdict::Allow => (1, "Allowed", 1, "Informational"),
        Verdict::Deny | Verdict::Ask => (2, "Blocked", 3, "Medium"),
    };
    let mut event = json!({
        "class_uid": CLASS_UID,
        "class_name": "API Activity",
        "category_uid": CATEGORY_UID,
        "category_name": "Application Activity",
        "activity_id": ACTIVITY_ID,
        "activity_name": "Tool Call",
        "type_uid": CLASS_UID * 100 + ACTIVITY_ID,
        "time": time_ms,
        "severity_id": severity_id,
        "severity": severity,
        "status_id": status_id,
        "status": status,
        "status_code": r.outcome,
        "disposition_id": disposition_id,
        "disposition": disposition,
        "message": r.why,
        "metadata": {
            "version": SCHEMA_VERSION,
            "uid": e.id.to_string(),
            "original_time": r.ts,
            "product": {"name": "Tackle", "vendor_name": "Tackle", "version": env!("CARGO_PKG_VERSION")},
        },
        "actor": {
            "user": {"name": r.agent, "type": "Other"},
            "app_name": e.entry.caller,
            "session": {"uid": r.session_id},
        },
        "api": {
            "operation": r.tool,
            "service": {"name": "tackle"},
        },
        "src_endpoint": {"name": e.entry.caller},
        "cloud": {"provider": "local"},
        "duration": r.duration_ms,
        "unmapped": {
            "verdict": verdict(r.verdict),
            "layer": e.detail.layer,
            "rule": r.rule,
            "args_digest": e.detail.args_digest,
            "result_digest": e.detail.result_digest,
            "approver": r.approver,
            "args_summary": r.args_summary,
            "chain_seq": e.chain_seq,
            "hash": e.hash,
        },
    });
    if let Some(obj) = event.as_object_mut() {
        // OCSF leaves out what is not known rather than sending nulls.
        obj.retain(|_, v| !v.is_null());
    }
    event
}

fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Allow => "allow",
        Verdict::Deny => "deny",
        Verdict::Ask => "ask",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tackle_store::{AuditDetail, AuditEntry, AuditRecord};

    #[test]
    fn a_refused_call_is_a_blocked_api_activity_at_its_time() {
        let e = ExportedEntry {
            id: 42,
            chain_seq: Some(7),
            hash: Some("ab".into()),
            entry: AuditEntry {
                record: AuditRecord {
                    ts: "2026-01-02T03:04:05.678901Z".into(),
                    session_id: None,
                    agent: "default".into(),
                    tool: "shell".into(),
                    args_summary: "{\"command\":\"rm -rf /\"}".into(),
                    verdict: Verdict::Deny,
                    rule: "shell.deny".into(),
                    why: "denied by policy".into(),
                    approver: None,
                    outcome: "denied".into(),
                    duration_ms: None,
                },
                caller: "cli".into(),
            },
            detail: AuditDetail {
                layer: "policy".into(),
                args_digest: Some("cd".into()),
                ..AuditDetail::default()
            },
        };
        let v = event(&e);
        assert_eq!(v["class_uid"], 6003);
        assert_eq!(v["type_uid"], 600399);
        assert_eq!(v["time"], 1_767_323_045_678i64);
        assert_eq!(v["disposition_id"], 2);
        assert_eq!(v["status_id"], 2);
        assert_eq!(v["api"]["operation"], "shell");
        assert_eq!(v["metadata"]["uid"], "42");
        assert_eq!(v["unmapped"]["rule"], "shell.deny");
        assert_eq!(v["unmapped"]["layer"], "policy");
        assert_eq!(v["unmapped"]["args_digest"], "cd");
        assert!(v.get("duration").is_none());
    }
}
