//! An MCP server's tool as a Tackle [`Tool`], and the per-server [`Extension`].

use super::server::Server;
use super::ServerState;
use crate::content::{self, RemoteTool};
use crate::pinning::clean::{self, Removed};
use crate::pinning::{digest, Pin};
use crate::wire::WireError;
use async_trait::async_trait;
use serde_json::Value;
use std::sync::{Arc, Weak};
use tackle_protocol::{
    ApprovalMode, Extension, Risk, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

/// The longest a call may spend on a person's forms, on top of its own time-out.
const FORM_ALLOWANCE: std::time::Duration = std::time::Duration::from_secs(15 * 60);

pub(crate) struct McpTool {
    /// Weak: the server owns its tools, and a tool must not keep a stopped server alive.
    server: Weak<Server>,
    pub remote_name: String,
    spec: ToolSpec,
    /// The definition as listed, canonical, and its digest: what a pin compares.
    pub definition: Value,
    pub digest: String,
    /// What was cleaned out of its description, title and parameter descriptions.
    pub removed: Removed,
}

impl McpTool {
    pub fn new(server: Weak<Server>, registry_name: String, mut remote: RemoteTool) -> Self {
        let (owner, trusted) = server
            .upgrade()
            .map(|s| (s.name.clone(), s.trusts_annotations()))
            .unwrap_or_default();
        // Pinned as listed, before cleaning: hidden characters added later are a change.
        let definition = digest::canonical(&listed(&remote));
        let digest = digest::digest(&definition);
        let removed = clean_for_the_model(&mut remote);
        // Annotations are the server's claims: shown, and used to lower the policy only
        // where the operator said this server's claims hold (`trust_annotations`).
        let read_only = remote
            .annotations
            .as_ref()
            .is_some_and(|a| a.read_only_hint == Some(true) && a.destructive_hint != Some(true));
        let (risk, approval) = if trusted && read_only {
            (Risk::Low, ApprovalMode::Never)
        } else {
            (Risk::Medium, ApprovalMode::UnlessAutoApproved)
        };
        let mut description = content::describe(&remote, &owner);
        if !removed.is_empty() {
            // Said to the model too: a description that hid something is worth a doubt.
            description.push_str(&format!(
                "\n[Tackle removed hidden characters from this tool's description: {removed}]"
            ));
        }
        let spec = ToolSpec::new(&registry_name, &description, &owner)
            .parameters(object_schema(remote.input_schema))
            .risk(risk)
            .approval(approval);
        Self {
            server,
            remote_name: remote.name,
            spec,
            definition,
            digest,
            removed,
        }
    }

    /// This definition as a pin.
    pub fn pin(&self) -> Pin {
        Pin {
            tool: self.remote_name.clone(),
            digest: self.digest.clone(),
            definition: self.definition.to_string(),
        }
    }

    pub fn registry_name(&self) -> &str {
        &self.spec.name
    }

    async fn call_remote(
        &self,
        server: &Server,
        args: Value,
        cx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let name = &server.name;
        let conn = server
            .connection()
            .ok_or_else(|| ToolError::failed(not_ready(server)))?;
        let timeout = server.call_timeout();
        // While the call runs, the server's forms may go to the caller's front end.
        let _relayed = cx
            .forms()
            .map(|forms| server.relays.register(&cx.session_id, Arc::clone(forms)));
        let mut call = std::pin::pin!(conn.call(&self.remote_name, args));
        // The time-out counts the server's time, not a person's: while one of its forms is
        // open, or when one opened or closed during the window, the window starts again.
        let mut seen = server.elicitation_marker();
        let outcome = loop {
            let r = tokio::select! {
                r = tokio::time::timeout(timeout, &mut call) => r,
                _ = cx.cancel.cancelled() => {
                    return Err(ToolError::failed(format!("the call to MCP server `{name}` was cancelled")))
                }
            };
            match r {
                Err(elapsed) => {
                    let now = server.elicitation_marker();
                    if now.0 > 0 || now.1 != seen.1 {
                        seen = now;
                        continue;
                    }
                    break Err(elapsed);
                }
                Ok(r) => break Ok(r),
            }
        };
        let result = match outcome {
            Err(_) => {
                server.suspect_hung();
                return Err(ToolError::timeout(format!(
                    "MCP server `{name}` did not answer `{}` within {}s (call_timeout_secs)",
                    self.remote_name,
                    timeout.as_secs()
                )))
            }
            Ok(Err(WireError::Closed)) => {
                return Err(ToolError::failed(format!(
                    "MCP server `{name}` closed the connection during the call{}; it is being restarted",
                    server.stderr_note()
                )))
            }
            Ok(Err(e)) => return Err(ToolError::failed(format!("MCP server `{name}`: {e}"))),
            Ok(Ok(result)) => result,
        };
        let spill = server.options.spill.as_deref();
        Ok(content::to_output(&result, &self.spec.name, server.options.result_limit, spill).await)
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn provenance(&self, _args: &Value) -> tackle_protocol::Provenance {
        match self.server.upgrade() {
            Some(s) if s.trusts_results() => tackle_protocol::Provenance::Trusted,
            Some(s) => tackle_protocol::Provenance::Untrusted(format!("MCP server `{}`", s.name)),
            None => tackle_protocol::Provenance::Untrusted("an MCP server".into()),
        }
    }

    fn timeout(&self) -> Option<std::time::Duration> {
        // A little over our own per-call limit, so the clearer MCP time-out message wins;
        // where a person may be asked to fill in a form, with time for that too.
        self.server.upgrade().map(|s| {
            let form = if s.can_elicit() {
                FORM_ALLOWANCE
            } else {
                std::time::Duration::ZERO
            };
            s.call_timeout() + std::time::Duration::from_secs(5) + form
        })
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let server = self
            .server
            .upgrade()
            .ok_or_else(|| ToolError::failed("the MCP client has been shut down"))?;
        // The last gate: the registry may still hold this tool from before a re-listing.
        server
            .admit(&self.remote_name)
            .await
            .map_err(|e| ToolError::failed(e.to_string()))?;
        self.call_remote(&server, args, cx).await
    }
}

/// The tool object as listed; rebuilt from its fields when it was not kept.
fn listed(remote: &RemoteTool) -> Value {
    if remote.listed.is_object() {
        return remote.listed.clone();
    }
    serde_json::json!({
        "name": remote.name,
        "title": remote.title,
        "description": remote.description,
        "inputSchema": remote.input_schema,
    })
}

/// Removes hidden characters from what the model reads of `remote`; what was removed.
fn clean_for_the_model(remote: &mut RemoteTool) -> Removed {
    let mut removed = Removed::default();
    for text in [&mut remote.description, &mut remote.title]
        .into_iter()
        .flatten()
    {
        let (clean, r) = clean::clean_text(text);
        *text = clean;
        clean::merge(&mut removed, r);
    }
    clean::merge(&mut removed, clean::clean_schema(&mut remote.input_schema));
    removed
}

/// MCP schemas may omit `type` or be absent; the dispatcher validates against an object schema.
fn object_schema(schema: Value) -> Value {
    match schema {
        Value::Object(mut map) => {
            map.entry("type")
                .or_insert_with(|| Value::String("object".into()));
            Value::Object(map)
        }
        _ => serde_json::json!({"type": "object"}),
    }
}

fn not_ready(server: &Server) -> String {
    match server.state() {
        ServerState::Starting => format!("MCP server `{}` is still starting", server.name),
        ServerState::Failed(why) => format!("MCP server `{}` failed: {why}", server.name),
        ServerState::Ready => format!("MCP server `{}` is reconnecting", server.name),
    }
}

/// One server's tools, under the server's name.
pub(crate) struct ServerExtension {
    server: Arc<Server>,
}

impl ServerExtension {
    pub fn new(server: Arc<Server>) -> Self {
        Self { server }
    }
}

impl Extension for ServerExtension {
    fn name(&self) -> &str {
        &self.server.name
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.server
            .tools()
            .into_iter()
            .map(|t| t as Arc<dyn Tool>)
            .collect()
    }

    fn unavailable(&self, tool: &str) -> Option<String> {
        if !tool.starts_with(&self.server.prefix) {
            return None;
        }
        match self.server.state() {
            ServerState::Ready => self.server.quarantined(tool),
            _ => Some(not_ready(&self.server)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schemas_without_a_type_become_object_schemas() {
        assert_eq!(object_schema(json!({"properties": {}}))["type"], "object");
        assert_eq!(object_schema(json!(null)), json!({"type": "object"}));
        assert_eq!(
            object_schema(json!({"type": "object", "required": ["a"]}))["required"][0],
            "a"
        );
    }
}
