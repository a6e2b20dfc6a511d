//! MCP tool listings and results in our own terms, and their conversion to Tackle's.
//!
//! These mirror the MCP wire format (camelCase JSON), independent of the SDK's Rust types,
//! so an SDK upgrade only touches `wire`.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;
use std::path::PathBuf;
use tackle_protocol::text::truncate_at_char_boundary;
use tackle_protocol::ToolOutput;

/// Results longer than this are capped and spilled (the sanitizer's 50 KB, docs/architecture.md).
pub const DEFAULT_RESULT_LIMIT: usize = 51_200;

/// A tool as an MCP server lists it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteTool {
    /// The name the server calls it by (not yet prefixed for the registry).
    pub name: String,
    /// A display title, when the server gives one.
    #[serde(default)]
    pub title: Option<String>,
    /// The server's description, untrusted text (cleaned before the model sees it).
    #[serde(default)]
    pub description: Option<String>,
    /// The JSON Schema of its arguments; an empty object schema when the server gives none.
    #[serde(default = "empty_object_schema")]
    pub input_schema: Value,
    /// The server's hints about the tool, when it gives any.
    #[serde(default)]
    pub annotations: Option<Annotations>,
    /// The tool object as the server listed it, for its pinned definition
    /// ([`crate::pinning::digest::canonical`]); `Null` when it was not kept.
    #[serde(skip)]
    pub listed: Value,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// MCP tool annotations: hints from the server, shown to the model and the person, never
/// trusted for policy.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// The server says the tool changes nothing (`Some(false)`: it modifies state).
    #[serde(default)]
    pub read_only_hint: Option<bool>,
    /// The server says the tool may destroy data.
    #[serde(default)]
    pub destructive_hint: Option<bool>,
    /// The server says repeating a call with the same arguments has no further effect.
    #[serde(default)]
    pub idempotent_hint: Option<bool>,
    /// The server says the tool reaches outside systems (the web, other services).
    #[serde(default)]
    pub open_world_hint: Option<bool>,
}

/// What `tools/call` returned.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteResult {
    /// The content blocks (text, images, resources, …) as the server sent them.
    #[serde(default)]
    pub content: Vec<Value>,
    /// The JSON result, for a tool that declares an output schema.
    #[serde(default)]
    pub structured_content: Option<Value>,
    /// The server says the call failed (a tool error, not a protocol error).
    #[serde(default)]
    pub is_error: Option<bool>,
}

/// Where an oversized result's full text goes (a file under the state dir). The binary
/// provides it, since only `tackle-host`/`tackle-store` write files.
#[async_trait]
pub trait ResultSpill: Send + Sync {
    /// Store `content` (the full text of a result of `tool`); return the path it was written to.
    async fn spill(&self, tool: &str, content: &str) -> Result<PathBuf, SpillError>;
}

/// The full text of an oversized result could not be written; holds why. The capped result
/// is still returned.
#[derive(Debug, thiserror::Error)]
#[error("could not keep the full result: {0}")]
pub struct SpillError(pub String);

/// The description the model sees: the server's text, then the annotation hints, labelled
/// as the server's claims.
pub fn describe(tool: &RemoteTool, server: &str) -> String {
    let mut out = tool.description.clone().unwrap_or_default();
    if out.trim().is_empty() {
        out = tool.title.clone().unwrap_or_else(|| tool.name.clone());
    }
    let hints = tool
        .annotations
        .as_ref()
        .map(hint_words)
        .unwrap_or_default();
    if !hints.is_empty() {
        out.push_str(&format!(
            "\n[MCP server `{server}` says: {}]",
            hints.join(", ")
        ));
    }
    out
}

fn hint_words(a: &Annotations) -> Vec<&'static str> {
    let mut words = Vec::new();
    let pick =
        |v: Option<bool>, yes: &'static str, no: &'static str| v.map(|b| if b { yes } else { no });
    words.extend(pick(a.read_only_hint, "read-only", "modifies state"));
    words.extend(pick(a.destructive_hint, "destructive", "not destructive"));
    words.extend(pick(a.idempotent_hint, "idempotent", "not idempotent"));
    words.extend(pick(
        a.open_world_hint,
        "reaches outside systems",
        "closed world",
    ));
    words
}

/// Text for the model: text parts joined, everything else summarised by type and size.
pub fn render_text(result: &RemoteResult) -> String {
    let parts: Vec<String> = result.content.iter().map(render_part).collect();
    let mut text = parts.join("\n");
    if text.is_empty() {
        if let Some(structured) = &result.structured_content {
            text = structured.to_string();
        }
    }
    text
}

fn render_part(part: &Value) -> String {
    let kind = part
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let field = |k: &str| part.get(k).and_then(Value::as_str);
    match kind {
        "text" => field("text").unwrap_or_default().to_string(),
        "image" | "audio" => format!(
            "[{kind}: {}, {} bytes]",
            field("mimeType").unwrap_or("unknown type"),
            base64_decoded_len(field("data").unwrap_or_default())
        ),
        "resource" => render_resource(part.get("resource").unwrap_or(&Value::Null)),
        "resource_link" => format!(
            "[resource link: {} {}]",
            field("uri").unwrap_or_default(),
            field("name").unwrap_or_default()
        ),
        other => format!("[{other} content]"),
    }
}

fn render_resource(res: &Value) -> String {
    let field = |k: &str| res.get(k).and_then(Value::as_str);
    let uri = field("uri").unwrap_or_default();
    let mime = field("mimeType").unwrap_or("unknown type");
    match (field("text"), field("blob")) {
        (Some(text), _) => format!("[resource {uri} ({mime})]\n{text}"),
        (None, Some(blob)) => format!(
            "[resource {uri}: {mime}, {} bytes]",
            base64_decoded_len(blob)
        ),
        (None, None) => format!("[resource {uri}]"),
    }
}

/// The size the base64 text decodes to, without decoding it.
fn base64_decoded_len(b64: &str) -> usize {
    let body = b64.trim_end_matches('=').len();
    body * 3 / 4
}

/// Convert a result to Tackle's, capping text at `limit` bytes. When cut, the full text is
/// handed to `spill` and its path goes to the model.
pub async fn to_output(
    result: &RemoteResult,
    tool: &str,
    limit: usize,
    spill: Option<&dyn ResultSpill>,
) -> ToolOutput {
    let text = render_text(result);
    let content = if text.len() > limit {
        cap(&text, tool, limit, spill).await
    } else {
        text
    };
    ToolOutput {
        content,
        structured: result.structured_content.clone(),
        is_error: result.is_error.unwrap_or(false),
    }
}

async fn cap(text: &str, tool: &str, limit: usize, spill: Option<&dyn ResultSpill>) -> String {
    let head = truncate_at_char_boundary(text, limit);
    let cut = text.len() - head.len();
    let where_full = match spill {
        Some(s) => match s.spill(tool, text).await {
            Ok(path) => format!("the full result is in {}", path.display()),
            Err(e) => e.to_string(),
        },
        None => "the full result was not kept".to_string(),
    };
    format!(
        "{head}\n[result cut: {cut} of {} bytes omitted; {where_full}]",
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Mutex;

    fn result(v: Value) -> RemoteResult {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn text_parts_are_joined_and_binary_parts_summarised() {
        let r = result(json!({"content": [
            {"type": "text", "text": "one"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "audio", "data": "AAAAAAAA", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///a", "blob": "AAAA", "mimeType": "application/zip"}},
            {"type": "resource", "resource": {"uri": "file:///b", "text": "inner", "mimeType": "text/plain"}},
            {"type": "resource_link", "uri": "file:///c", "name": "c"},
            {"type": "text", "text": "two"}
        ]}));
        let text = render_text(&r);
        assert_eq!(
            text,
            "one\n[image: image/png, 3 bytes]\n[audio: audio/wav, 6 bytes]\n\
             [resource file:///a: application/zip, 3 bytes]\n[resource file:///b (text/plain)]\ninner\n\
             [resource link: file:///c c]\ntwo"
        );
    }

    #[tokio::test]
    async fn structured_content_and_is_error_are_kept() {
        let r = result(json!({"content": [], "structuredContent": {"a": 1}, "isError": true}));
        let out = to_output(&r, "t", 100, None).await;
        assert_eq!(out.structured, Some(json!({"a": 1})));
        assert!(out.is_error);
        assert_eq!(out.content, r#"{"a":1}"#);
    }

    struct Recorder(Mutex<Vec<String>>);

    #[async_trait]
    impl ResultSpill for Recorder {
        async fn spill(&self, _tool: &str, content: &str) -> Result<PathBuf, SpillError> {
            self.0.lock().unwrap().push(content.to_string());
            Ok(PathBuf::from("/state/mcp-results/1.txt"))
        }
    }

    #[tokio::test]
    async fn oversized_results_are_cut_at_a_char_boundary_and_spilled_whole() {
        let big = "é".repeat(100); // 200 bytes
        let r = result(json!({"content": [{"type": "text", "text": big}]}));
        let spill = Recorder(Mutex::new(Vec::new()));
        let out = to_output(&r, "t", 51, Some(&spill)).await;
        assert!(out.content.starts_with(&"é".repeat(25)));
        assert!(out.content.contains("150 of 200 bytes omitted"));
        assert!(out.content.contains("/state/mcp-results/1.txt"));
        assert_eq!(spill.0.lock().unwrap().as_slice(), [big]);
    }

    #[test]
    fn annotations_are_described_as_the_servers_claims() {
        let tool: RemoteTool = serde_json::from_value(json!({
            "name": "x", "description": "Does x",
            "annotations": {"readOnlyHint": true, "destructiveHint": false}
        }))
        .unwrap();
        assert_eq!(
            describe(&tool, "srv"),
            "Does x\n[MCP server `srv` says: read-only, not destructive]"
        );
    }

    #[test]
    fn a_tool_without_schema_or_description_still_converts() {
        let tool: RemoteTool = serde_json::from_value(json!({"name": "bare"})).unwrap();
        assert_eq!(describe(&tool, "s"), "bare");
        assert_eq!(tool.input_schema["type"], "object");
    }
}
