//! `tackle policy replay | test`: what a configuration decides about calls, planned by the
//! dispatcher exactly as `tools call --explain` and a real call are (`Dispatcher::explain`),
//! with nothing run.
//!
//! `replay` takes the recorded calls of the audit log and the configuration given with
//! `--config` (the candidate) and lists every call whose decision would differ from the one
//! recorded, grouped by the rule that decides under the candidate. `test` checks a file of
//! cases against the configuration and exits 1 on any mismatch, for CI.

use crate::app::{App, Selection};
use crate::cli::Global;
use crate::exit::{self, usage};
use anyhow::{Context, Result};
use clap::Subcommand;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use tackle_protocol::{Decision, Verdict};
use tackle_store::{AuditQuery, AuditRecord, StoreError};

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Re-decide the audit log's recorded calls under the configuration given with --config
    /// and list each decision that would change (allow → deny, deny → allow, ask ↔ allow),
    /// grouped by rule. Nothing is run.
    Replay {
        /// Only calls since this long ago (`30m`, `7d`) or this RFC 3339 time or date.
        #[arg(long, value_name = "DURATION|TIME")]
        since: Option<String>,
        /// At most the newest N calls.
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Print `{"replayed", "changed": [...], "skipped": {...}}` JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check a file of cases (YAML or JSON: a list of `{tool, arguments, agent?, expect:
    /// allow|deny|ask}`) against the configuration; exit 1 when any is decided otherwise.
    Test {
        /// The cases file.
        file: PathBuf,
        /// Print one JSON object per case.
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(global: &Global, command: PolicyCommand) -> Result<i32> {
    match command {
        PolicyCommand::Replay { since, limit, json } => replay(global, since, limit, json).await,
        PolicyCommand::Test { file, json } => test(global, &file, json).await,
    }
}

/// The planners, one per agent named (each agent has its own policy overlay), built on first
/// use. MCP servers are not started: their tools are not re-decided.
struct Planners<'g> {
    global: &'g Global,
    apps: BTreeMap<Option<String>, App>,
}

impl<'g> Planners<'g> {
    fn new(global: &'g Global) -> Self {
        Self {
            global,
            apps: BTreeMap::new(),
        }
    }

    async fn decide(
        &mut self,
        agent: Option<&str>,
        tool: &str,
        arguments: &Value,
    ) -> Result<std::result::Result<Decision, String>> {
        let key = agent.map(str::to_string);
        if !self.apps.contains_key(&key) {
            let selection = Selection {
                agent: key.clone(),
                without_mcp: true,
                lists_only: true,
                ..Selection::default()
            };
            let app = match App::build(self.global, &selection) {
                Ok(app) => app,
                // An agent the configuration does not have is decided as the default one.
                Err(_) if key.is_some() => {
                    return Box::pin(self.decide(None, tool, arguments)).await;
                }
                Err(e) => return Err(e),
            };
            self.apps.insert(key.clone(), app);
        }
        let Some(app) = self.apps.get(&key) else {
            anyhow::bail!("no planner for agent {key:?}");
        };
        Ok(match app.dispatcher.explain(tool, arguments).await {
            Ok(x) => Ok(x.decision),
            Err(e) => Err(e.message),
        })
    }

    async fn shutdown(self) {
        for app in self.apps.values() {
            app.shutdown().await;
        }
    }
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Allow => "allow",
        Verdict::Deny => "deny",
        Verdict::Ask => "ask",
    }
}

// ---------------------------------------------------------------------------------------------
// replay

/// Why a recorded call is not re-decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Skip {
    /// Not a tool call (an HTTP API request), or refused before policy (unknown tool, invalid
    /// arguments): no policy decision was recorded.
    NotAPolicyDecision,
    /// A record written before the arguments were kept whole keeps a summary of them (cut at
    /// 200 characters) that is not the whole call.
    ArgumentsSummarised,
    /// The arguments were longer than the log keeps whole (`ARGUMENTS_MAX_BYTES`), or the
    /// redactor left them as text that is not JSON.
    ArgumentsCut,
    /// The candidate configuration cannot plan the call (its tool is unknown there, e.g. an
    /// MCP tool, since no server is started).
    NotPlannable,
}

impl Skip {
    fn words(self) -> &'static str {
        match self {
            Skip::NotAPolicyDecision => {
                "not a policy decision (API requests, unknown tools, invalid arguments)"
            }
            Skip::ArgumentsSummarised => {
                "arguments recorded only as a cut summary (records written before the arguments were kept whole)"
            }
            Skip::ArgumentsCut => "arguments longer than the log keeps whole (16 KiB), or not JSON once redacted",
            Skip::NotPlannable => "tool unknown to the candidate (MCP servers are not started)",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Skip::NotAPolicyDecision => "not_a_policy_decision",
            Skip::ArgumentsSummarised => "arguments_summarised",
            Skip::ArgumentsCut => "arguments_cut",
            Skip::NotPlannable => "not_plannable",
        }
    }
}

/// What policy decided about a recorded call, read back from the record: a call a person
/// approved or refused was `ask`; one that ran with `policy` as approver was `allow`.
fn recorded_decision(r: &AuditRecord, caller: &str) -> Option<Verdict> {
    if caller.starts_with("api") || r.tool == "api" {
        return None;
    }
    let approver = r.approver.as_deref().unwrap_or_default();
    match r.verdict {
        Verdict::Ask => Some(Verdict::Ask),
        Verdict::Allow if approver.is_empty() || approver == "policy" => Some(Verdict::Allow),
        Verdict::Allow => Some(Verdict::Ask),
        Verdict::Deny => match r.outcome.as_str() {
            "not_found" | "invalid_arguments" => None,
            _ if !approver.is_empty() => Some(Verdict::Ask),
            "denied" => Some(Verdict::Deny),
            _ => None,
        },
    }
}

/// The arguments a record gives replay to re-plan.
enum Recorded {
    /// The redacted arguments, whole.
    Whole(Value),
    /// Older records keep only the 200-character summary; it is the call when it is whole JSON.
    Summary(Value),
}

fn recorded_arguments(e: &tackle_store::ExportedEntry) -> std::result::Result<Recorded, Skip> {
    match &e.detail.arguments {
        Some(_) if e.detail.arguments_cut => Err(Skip::ArgumentsCut),
        Some(text) => serde_json::from_str(text)
            .map(Recorded::Whole)
            .map_err(|_| Skip::ArgumentsCut),
        None => serde_json::from_str(&e.entry.record.args_summary)
            .map(Recorded::Summary)
            .map_err(|_| Skip::ArgumentsSummarised),
    }
}

/// The agent a record names, as configured: a child's record names its path in the tree
/// (`default › researcher`), the last part being the agent.
fn agent_of(r: &AuditRecord) -> Option<&str> {
    let last = r.agent.rsplit(" › ").next().unwrap_or_default().trim();
    (!last.is_empty() && last != "-").then_some(last)
}

#[derive(Debug, serde::Serialize)]
struct Change {
    id: usize,
    ts: String,
    agent: String,
    tool: String,
    args_summary: String,
    recorded: &'static str,
    candidate: &'static str,
    rule: String,
    why: String,
}

async fn replay(
    global: &Global,
    since: Option<String>,
    limit: Option<usize>,
    json: bool,
) -> Result<i32> {
    let loaded = crate::app::load_config(global)?;
    let store = crate::app::open_store(&loaded.config)?;
    let query = AuditQuery {
        since: since.as_deref().map(super::audit::parse_since),
        limit,
        ..AuditQuery::default()
    };
    let records = match store.audit_export(query).await {
        Ok(r) => r,
        Err(e @ StoreError::BadTime { .. }) => {
            return Err(usage(format!(
                "--since {e}, or a duration such as 30m, 2h or 7d"
            )))
        }
        Err(e) => return Err(anyhow::anyhow!("cannot read the audit log: {e}")),
    };
    let mut planners = Planners::new(global);
    let mut changed: BTreeMap<String, Vec<Change>> = BTreeMap::new();
    let mut skipped: BTreeMap<Skip, usize> = BTreeMap::new();
    let mut replayed = 0usize;
    let mut from_summary = 0usize;
    for exported in &records {
        let r = &exported.entry.record;
        let Some(recorded) = recorded_decision(r, &exported.entry.caller) else {
            *skipped.entry(Skip::NotAPolicyDecision).or_default() += 1;
            continue;
        };
        let arguments = match recorded_arguments(exported) {
            Ok(Recorded::Whole(arguments)) => arguments,
            Ok(Recorded::Summary(arguments)) => {
                from_summary += 1;
                arguments
            }
            Err(skip) => {
                *skipped.entry(skip).or_default() += 1;
                continue;
            }
        };
        let decision = match planners.decide(agent_of(r), &r.tool, &arguments).await? {
            Ok(d) => d,
            Err(_) => {
                *skipped.entry(Skip::NotPlannable).or_default() += 1;
                continue;
            }
        };
        replayed += 1;
        if decision.verdict == recorded {
            continue;
        }
        let rule = if decision.rule.is_empty() {
            "(no rule named)".to_string()
        } else {
            decision.rule.clone()
        };
        changed.entry(rule.clone()).or_default().push(Change {
            id: usize::try_from(exported.id).unwrap_or_default(),
            ts: r.ts.clone(),
            agent: r.agent.clone(),
            tool: r.tool.clone(),
            args_summary: r.args_summary.clone(),
            recorded: verdict_word(recorded),
            candidate: verdict_word(decision.verdict),
            rule,
            why: decision.why,
        });
    }
    planners.shutdown().await;
    let total: usize = changed.values().map(Vec::len).sum();
    if json {
        let skipped: BTreeMap<&str, usize> = skipped.iter().map(|(k, n)| (k.key(), *n)).collect();
        let all: Vec<&Change> = changed.values().flatten().collect();
        outln!(
            "{}",
            serde_json::json!({"replayed": replayed, "from_summary": from_summary, "changed": all, "skipped": skipped})
        )?;
        return Ok(exit::OK);
    }
    for (rule, calls) in &changed {
        outln!("{rule}: {} call(s)", calls.len())?;
        for c in calls {
            outln!(
                "  #{} {} {} → {}  {} {}",
                c.id,
                super::audit::short_time(&c.ts),
                c.recorded,
                c.candidate,
                c.tool,
                tackle_protocol::text::preview(&c.args_summary, 120)
            )?;
        }
    }
    outln!("{replayed} recorded calls re-decided, {total} would change")?;
    if from_summary > 0 {
        outln!(
            "{from_summary} of them re-decided from the argument summary: records written before the arguments were kept whole"
        )?;
    }
    if !global.quiet {
        for (skip, n) in &skipped {
            eprintln!("skipped {n}: {}", skip.words());
        }
    }
    Ok(exit::OK)
}

// ---------------------------------------------------------------------------------------------
// test

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    tool: String,
    #[serde(default = "empty_object")]
    arguments: Value,
    #[serde(default)]
    agent: Option<String>,
    expect: Expect,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Expect {
    Allow,
    Deny,
    Ask,
}

impl Expect {
    fn verdict(self) -> Verdict {
        match self {
            Expect::Allow => Verdict::Allow,
            Expect::Deny => Verdict::Deny,
            Expect::Ask => Verdict::Ask,
        }
    }
}

async fn test(global: &Global, file: &std::path::Path, json: bool) -> Result<i32> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read the cases file {}", file.display()))?;
    let cases: Vec<Case> = serde_saphyr::from_str(&text).map_err(|e| {
        usage(format!(
            "{} is not a list of cases {{tool, arguments, agent?, expect: allow|deny|ask}}: {e}",
            file.display()
        ))
    })?;
    let mut planners = Planners::new(global);
    let mut failed = 0usize;
    for (n, case) in cases.iter().enumerate() {
        let expected = case.expect.verdict();
        let (got, rule, why) = match planners
            .decide(case.agent.as_deref(), &case.tool, &case.arguments)
            .await?
        {
            Ok(d) => (Some(d.verdict), d.rule, d.why),
            Err(message) => (None, String::new(), message),
        };
        let ok = got == Some(expected);
        if !ok {
            failed += 1;
        }
        let got_word = got.map(verdict_word).unwrap_or("error");
        if json {
            outln!(
                "{}",
                serde_json::json!({
                    "case": n + 1, "tool": case.tool, "agent": case.agent, "ok": ok,
                    "expect": verdict_word(expected), "got": got_word, "rule": rule, "why": why,
                })
            )?;
        } else if ok {
            outln!("ok    {} {}: {}", n + 1, case.tool, got_word)?;
        } else {
            outln!(
                "FAIL  {} {}: expected {}, got {} ({}{})",
                n + 1,
                case.tool,
                verdict_word(expected),
                got_word,
                if rule.is_empty() {
                    String::new()
                } else {
                    format!("{rule}: ")
                },
                why
            )?;
        }
    }
    planners.shutdown().await;
    if !json && !global.quiet {
        eprintln!("{} cases, {failed} failed", cases.len());
    }
    Ok(if failed == 0 { exit::OK } else { exit::FAILED })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(verdict: Verdict, approver: &str, outcome: &str) -> AuditRecord {
        AuditRecord {
            ts: String::new(),
            session_id: None,
            agent: "default".into(),
            tool: "shell".into(),
            args_summary: "{}".into(),
            verdict,
            rule: String::new(),
            why: String::new(),
            approver: (!approver.is_empty()).then(|| approver.to_string()),
            outcome: outcome.into(),
            duration_ms: None,
        }
    }

    #[test]
    fn what_policy_decided_is_read_back_from_who_approved() {
        let d = |v, a, o| recorded_decision(&record(v, a, o), "cli");
        assert_eq!(d(Verdict::Allow, "policy", "ok"), Some(Verdict::Allow));
        assert_eq!(d(Verdict::Allow, "tty", "ok"), Some(Verdict::Ask));
        assert_eq!(d(Verdict::Allow, "session", "ok"), Some(Verdict::Ask));
        assert_eq!(d(Verdict::Deny, "", "denied"), Some(Verdict::Deny));
        assert_eq!(d(Verdict::Deny, "tty", "denied"), Some(Verdict::Ask));
        assert_eq!(d(Verdict::Deny, "", "not_found"), None);
        assert_eq!(d(Verdict::Deny, "", "invalid_arguments"), None);
        assert_eq!(d(Verdict::Ask, "", "needs_approval"), Some(Verdict::Ask));
        assert_eq!(
            recorded_decision(&record(Verdict::Allow, "policy", "ok"), "api:tok"),
            None
        );
    }

    #[test]
    fn a_childs_record_is_decided_as_its_own_agent() {
        let mut r = record(Verdict::Allow, "policy", "ok");
        r.agent = "default › researcher".into();
        assert_eq!(agent_of(&r), Some("researcher"));
        r.agent = "-".into();
        assert_eq!(agent_of(&r), None);
    }
}
