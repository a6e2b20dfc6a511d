//! `project` end to end: the real host in front of a local stand-in for the GitHub API.

use serde_json::json;
use std::sync::Arc;
use tackle_host::{HostConfig, NativeHostProvider};
use tackle_protocol::{CallScope, ErrorKind, HostProvider, Tool, ToolContext};
use tackle_tools::dev::{DevSettings, Project};
use wiremock::matchers::{body_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

struct Setup {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    cx: ToolContext,
}

/// A host whose operator list holds `trusted` (the config's `dev.github_api_base` in real use).
fn setup(trusted: Vec<String>) -> Setup {
    let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let state = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let mut config = HostConfig::new(state.path());
    config.operator_hosts = trusted;
    let scope = CallScope {
        tool: "project".into(),
        session_id: "s".into(),
        agent: "default".into(),
        workspace: ws.path().to_path_buf(),
        grants: Default::default(),
        cancel: Default::default(),
        approved: false,
    };
    let host = NativeHostProvider::new(config).scoped(&scope);
    Setup {
        _dirs: (ws, state),
        cx: ToolContext::new(&scope, "test", host),
    }
}

fn project(base: &str, token: Option<&str>) -> Arc<dyn Tool> {
    Arc::new(Project::new(DevSettings {
        github_token: token.map(str::to_string),
        github_api_base: Some(base.to_string()),
    }))
}

#[tokio::test]
async fn issues_are_listed_from_the_configured_api_base() {
    let server = MockServer::start().await;
    let issues = json!([
        {"number": 1, "state": "open", "title": "First", "html_url": "http://x/1", "labels": [{"name": "bug"}]},
        {"number": 2, "state": "open", "title": "A PR", "html_url": "http://x/2", "pull_request": {}}
    ]);
    Mock::given(method("GET"))
        .and(path("/repos/acme/tool/issues"))
        .and(query_param("state", "open"))
        .and(header("accept", "application/vnd.github+json"))
        .respond_with(ResponseTemplate::new(200).set_body_json(issues))
        .mount(&server)
        .await;
    let s = setup(vec![server.uri()]);
    let out = project(&server.uri(), None)
        .call(json!({"action": "list_issues", "repo": "acme/tool"}), &s.cx)
        .await;
    let text = out.map(|o| o.content).unwrap_or_else(|e| e.message);
    assert_eq!(
        text,
        "#1 (open) First [bug] — http://x/1\npull request #2 (open) A PR — http://x/2"
    );
}

#[tokio::test]
async fn creating_an_issue_posts_json_with_the_token() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/repos/acme/tool/issues"))
        .and(header("authorization", "Bearer sekrit"))
        .and(body_json(
            json!({"title": "Broken", "body": "steps", "labels": ["bug"]}),
        ))
        .respond_with(ResponseTemplate::new(201).set_body_json(
            json!({"number": 9, "state": "open", "title": "Broken", "html_url": "http://x/9"}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let s = setup(vec![server.uri()]);
    let args = json!({"action": "create_issue", "repo": "acme/tool", "title": "Broken", "body": "steps", "labels": ["bug"]});
    let out = project(&server.uri(), Some("sekrit"))
        .call(args, &s.cx)
        .await;
    assert_eq!(
        out.map(|o| o.content).map_err(|e| e.message),
        Ok("Created #9 (open) Broken — http://x/9".into())
    );
}

#[tokio::test]
async fn a_local_api_base_the_operator_did_not_configure_is_denied() {
    let server = MockServer::start().await;
    let s = setup(Vec::new());
    let out = project(&server.uri(), None)
        .call(json!({"action": "list_issues", "repo": "acme/tool"}), &s.cx)
        .await;
    assert_eq!(out.err().map(|e| e.kind), Some(ErrorKind::Denied));
    assert!(server
        .received_requests()
        .await
        .unwrap_or_default()
        .is_empty());
}
