//! `r8r {action: run|list|show|status|emit|create, …}`: an r8r workflow server's API. A run
//! that failed is `failed`; one still running (or `wait: false`) returns its execution id to
//! poll with `status`.

use super::client::{is_success, json_of, Api, Body};
use super::secrets::Secrets;
use super::{not_configured, path_id, ServicesSettings, NAME};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::time::Duration;
use tackle_protocol::text::preview;
use tackle_protocol::{
    ApprovalMode, Capability, HttpResponse, Risk, Tool, ToolContext, ToolError, ToolOutput,
    ToolSpec,
};

/// The most of an execution's output shown in the text reply.
const MAX_OUTPUT_CHARS: usize = 20_000;

pub(crate) struct R8r {
    target: Option<Target>,
}

struct Target {
    api: Api,
    token: Option<String>,
}

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Debug, Default)]
#[schemars(inline)]
#[serde(rename_all = "snake_case")]
enum Action {
    #[default]
    Run,
    List,
    Show,
    Status,
    Emit,
    Create,
}

// Arguments of `r8r`; which fields each action reads is in their descriptions.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Default run.
    #[serde(default)]
    action: Action,
    /// Workflow name (run, show, create).
    workflow: Option<String>,
    /// run: the workflow's input.
    #[serde(default)]
    inputs: Map<String, Value>,
    /// run: wait for the result (default true).
    #[serde(default = "yes")]
    wait: bool,
    /// status: the execution to look up.
    execution_id: Option<String>,
    /// emit: the event name.
    event: Option<String>,
    /// emit: the event's data.
    #[serde(default)]
    data: Map<String, Value>,
    /// create: the workflow definition (YAML).
    definition: Option<String>,
}

fn yes() -> bool {
    true
}

struct Request {
    method: &'static str,
    path: String,
    body: Option<Value>,
}

impl R8r {
    pub(crate) fn new(settings: &ServicesSettings) -> Self {
        let target = settings.r8r.as_ref().map(|c| {
            let token = c
                .token
                .as_deref()
                .map(str::to_string)
                .filter(|t| !t.trim().is_empty());
            let secrets = Secrets::new(token.clone());
            Target {
                api: Api::operator(&c.base(), settings.r8r_timeout, secrets),
                token,
            }
        });
        Self { target }
    }
}

/// A workflow, execution or event name: it goes into a path or names a resource.
fn name(field: &str, value: &Option<String>) -> Result<String, ToolError> {
    match value.as_deref().map(str::trim) {
        Some(v) if !v.is_empty() => path_id(field, v, "._-"),
        _ => Err(ToolError::invalid_arguments(format!(
            "this action needs `{field}`"
        ))),
    }
}

fn request(a: &Args) -> Result<Request, ToolError> {
    let get = |path: String| Request {
        method: "GET",
        path,
        body: None,
    };
    let post = |path: String, body: Value| Request {
        method: "POST",
        path,
        body: Some(body),
    };
    Ok(match a.action {
        Action::List => get("/api/workflows".into()),
        Action::Show => get(format!("/api/workflows/{}", name("workflow", &a.workflow)?)),
        Action::Run => post(
            format!("/api/workflows/{}/execute", name("workflow", &a.workflow)?),
            json!({"input": a.inputs, "wait": a.wait}),
        ),
        Action::Status => get(format!(
            "/api/executions/{}",
            name("execution_id", &a.execution_id)?
        )),
        Action::Emit => post(
            "/api/events/publish".into(),
            json!({"event": name("event", &a.event)?, "data": a.data, "source": "tackle"}),
        ),
        Action::Create => {
            let workflow = name("workflow", &a.workflow)?;
            let definition = a
                .definition
                .as_deref()
                .filter(|d| !d.trim().is_empty())
                .ok_or_else(|| {
                    ToolError::invalid_arguments("create needs `definition` (the workflow YAML)")
                })?;
            post(
                "/api/workflows".into(),
                json!({"name": workflow, "definition": definition, "enabled": true}),
            )
        }
    })
}

/// r8r's errors are `{code, message, node_id?}`.
fn r8r_error(resp: &HttpResponse, secrets: &Secrets) -> ToolError {
    let v = json_of(resp);
    let message = v
        .get("message")
        .and_then(Value::as_str)
        .map(|m| preview(m, 500))
        .unwrap_or_else(|| preview(String::from_utf8_lossy(&resp.body).trim(), 300));
    let code = v
        .get("code")
        .and_then(Value::as_str)
        .map(|c| format!("{} ", preview(c, 60)))
        .unwrap_or_default();
    let node = v
        .get("node_id")
        .and_then(Value::as_str)
        .map(|n| format!(" (node {})", preview(n, 80)))
        .unwrap_or_default();
    ToolError::failed(secrets.scrub(&format!(
        "r8r answered HTTP {}: {code}{message}{node}",
        resp.status
    )))
}

fn pretty(v: &Value) -> String {
    let text = serde_json::to_string_pretty(v).unwrap_or_default();
    preview(&text, MAX_OUTPUT_CHARS)
}

/// An execution (`run` or `status`): done → its output, failed → `failed`, else its id.
fn execution(workflow: Option<&str>, v: &Value) -> Result<String, ToolError> {
    let id = v.get("execution_id").and_then(Value::as_str).unwrap_or("?");
    let status = v.get("status").and_then(Value::as_str).unwrap_or("unknown");
    let what = workflow
        .map(|w| format!("workflow `{w}`"))
        .unwrap_or_else(|| "execution".into());
    match status {
        "failed" | "error" | "cancelled" | "timed_out" => {
            let why = v
                .get("error")
                .map(|e| match e {
                    Value::String(s) => s.clone(),
                    Value::Object(o) => o
                        .get("message")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or_else(|| e.to_string()),
                    other => other.to_string(),
                })
                .unwrap_or_else(|| "no reason given".into());
            Err(ToolError::failed(format!(
                "{what} execution {id} {status}: {}",
                preview(&why, 500)
            )))
        }
        "running" | "pending" | "queued" => Ok(format!(
            "{what} execution {id} is {status}; check it later with action `status` and execution_id `{id}`."
        )),
        _ => {
            let took = v
                .get("duration_ms")
                .and_then(Value::as_u64)
                .map(|ms| format!(" in {ms} ms"))
                .unwrap_or_default();
            let output = v
                .get("output")
                .filter(|o| !o.is_null())
                .map(|o| format!("\nOutput:\n{}", pretty(o)))
                .unwrap_or_default();
            Ok(format!("{what} execution {id} {status}{took}.{output}"))
        }
    }
}

fn list(v: &Value) -> String {
    let Some(items) = v.as_array().filter(|a| !a.is_empty()) else {
        return "No workflows on the r8r server.".into();
    };
    items
        .iter()
        .map(|w| {
            let name = w.get("name").and_then(Value::as_str).unwrap_or("?");
            let desc = w.get("description").and_then(Value::as_str).unwrap_or("");
            let state = match w.get("enabled").and_then(Value::as_bool) {
                Some(false) => "disabled",
                _ => "enabled",
            };
            let desc = if desc.is_empty() {
                String::new()
            } else {
                format!(" — {}", preview(desc, 200))
            };
            format!("{} ({state}){desc}", preview(name, 100))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[async_trait]
impl Tool for R8r {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "r8r",
            "Run and manage r8r workflows: run (workflow, inputs, wait), list, show (workflow), \
             status (execution_id), emit (event, data), create (workflow, definition YAML). A \
             run still going returns its execution id; poll it with status.",
            NAME,
        )
        .parameters(crate::args::schema::<Args>())
        .risk(Risk::Medium)
        .approval(ApprovalMode::UnlessAutoApproved)
    }

    fn planned_capabilities(&self, _args: &Value, _cx: &ToolContext) -> Vec<Capability> {
        // The server's URL is the operator's (config), so nothing for the grant to allow.
        Vec::new()
    }

    fn timeout(&self) -> Option<Duration> {
        let t = self.target.as_ref()?;
        Some(t.api.timeout + Duration::from_secs(5))
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let a: Args = crate::args::parse_for("r8r", args)?;
        let Some(t) = &self.target else {
            return Err(not_configured("r8r"));
        };
        let req = request(&a)?;
        let headers = t
            .token
            .iter()
            .map(|tok| ("Authorization".to_string(), format!("Bearer {tok}")))
            .collect();
        let resp = t
            .api
            .send(cx, req.method, &req.path, headers, req.body.map(Body::Json))
            .await?;
        if !is_success(&resp) {
            return Err(r8r_error(&resp, &t.api.secrets));
        }
        let v = json_of(&resp);
        let text = match a.action {
            Action::Run => execution(a.workflow.as_deref(), &v)?,
            Action::Status => execution(None, &v)?,
            Action::List => list(&v),
            Action::Show => pretty(&v),
            Action::Emit => format!(
                "Published event `{}`.",
                a.event.as_deref().unwrap_or_default()
            ),
            Action::Create => format!(
                "Created workflow `{}` (id {}, {} node(s), {} trigger(s)).",
                a.workflow.as_deref().unwrap_or_default(),
                v.get("id")
                    .map(|i| match i {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .unwrap_or_else(|| "?".into()),
                v.get("node_count")
                    .and_then(Value::as_u64)
                    .unwrap_or_default(),
                v.get("trigger_count")
                    .and_then(Value::as_u64)
                    .unwrap_or_default()
            ),
        };
        let secrets = &t.api.secrets;
        Ok(ToolOutput::text(secrets.scrub(&text)).with_structured(secrets.scrub_value(v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executions_read_as_done_failed_or_pending() {
        let done = json!({"execution_id": "e1", "status": "completed", "output": {"n": 1}, "duration_ms": 12});
        let text = execution(Some("w"), &done).unwrap_or_default();
        assert!(
            text.starts_with("workflow `w` execution e1 completed in 12 ms."),
            "{text}"
        );
        let failed = json!({"execution_id": "e2", "status": "failed", "error": "node x broke"});
        let err = execution(Some("w"), &failed).err().map(|e| e.message);
        assert_eq!(
            err.as_deref(),
            Some("workflow `w` execution e2 failed: node x broke")
        );
        let running = json!({"execution_id": "e3", "status": "running"});
        assert!(execution(None, &running)
            .unwrap_or_default()
            .contains("execution_id `e3`"));
    }

    #[test]
    fn names_are_checked_and_required_where_the_action_needs_them() {
        let args = |v: Value| serde_json::from_value::<Args>(v).map_err(|e| e.to_string());
        let a = args(json!({"workflow": "../admin"})).unwrap_or_else(|e| panic!("{e}"));
        assert!(request(&a).is_err());
        let a = args(json!({"action": "status"})).unwrap_or_else(|e| panic!("{e}"));
        assert!(request(&a).is_err_and(|e| e.message.contains("execution_id")));
        let a = args(json!({"workflow": "daily.report"})).unwrap_or_else(|e| panic!("{e}"));
        let r = request(&a).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.path, "/api/workflows/daily.report/execute");
        assert_eq!(r.body, Some(json!({"input": {}, "wait": true})));
    }
}
