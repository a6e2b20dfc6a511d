//! `project` end to end: the real host in front of a local stand-in for the GitHub API.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tackle_host::{HostConfig, NativeHostProvider};
use tackle_protocol::{
    CallScope, ErrorKind, FsGrant, Grants, HostProvider, Tool, ToolContext, ToolError,
};
use tackle_tools::dev::{DevSettings, Project};
use wiremock::matchers::{body_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

struct Setup {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    ws: PathBuf,
    cx: ToolContext,
}

/// A host whose operator list holds `trusted` (the config's `dev.github_api_base` in real use).
fn setup(trusted: Vec<String>) -> Setup {
    setup_with(trusted, Grants::default())
}

fn setup_with(trusted: Vec<String>, grants: Grants) -> Setup {
    let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let state = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let mut config = HostConfig::new(state.path());
    config.operator_hosts = trusted;
    let scope = CallScope {
        tool: "project".into(),
        session_id: "s".into(),
        agent: "default".into(),
        workspace: ws.path().to_path_buf(),
        grants,
        cancel: Default::default(),
        approved: false,
    };
    let host = NativeHostProvider::new(config).scoped(&scope);
    Setup {
        ws: ws.path().to_path_buf(),
        _dirs: (ws, state),
        cx: ToolContext::new(&scope, "test", host),
    }
}

fn text(
    out: Result<tackle_protocol::ToolOutput, ToolError>,
) -> Result<String, (ErrorKind, String)> {
    out.map(|o| o.content).map_err(|e| (e.kind, e.message))
}

/// The request's query string exactly as sent (order and encoding included).
fn raw_query(expected: &'static str) -> impl Fn(&Request) -> bool + Send + Sync {
    move |r: &Request| r.url.query() == Some(expected)
}

fn write(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("mkdir: {e}"));
    }
    std::fs::write(&p, content).unwrap_or_else(|e| panic!("write {rel}: {e}"));
}

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
}

/// Every file below `dir`, with its content, sorted.
fn tree(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap_or(&p).display().to_string();
                out.push((rel, std::fs::read_to_string(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
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

#[tokio::test]
async fn get_issue_fetches_one_issue_with_its_body() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/tool/issues/7"))
        .and(header("authorization", "Bearer sekrit-token"))
        .and(|r: &Request| r.url.query().is_none() && r.body.is_empty())
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "number": 7, "state": "open", "title": "Crash on start", "html_url": "http://x/7",
            "labels": [{"name": "bug"}], "user": {"login": "alice"},
            "assignees": [{"login": "bob"}, {"login": "carol"}], "comments": 2,
            "body": "Steps:\n1. run it"
        })))
        .expect(1)
        .mount(&server)
        .await;
    let s = setup(vec![server.uri()]);
    let out = project(&server.uri(), Some("sekrit-token"))
        .call(
            json!({"action": "get_issue", "repo": "acme/tool", "number": 7}),
            &s.cx,
        )
        .await;
    assert_eq!(
        text(out),
        Ok("#7 (open) Crash on start [bug] — http://x/7\nAuthor: alice · Assignees: bob, carol · Comments: 2\n\nSteps:\n1. run it".into())
    );
}

#[tokio::test]
async fn update_issue_patches_only_the_given_fields() {
    let server = MockServer::start().await;
    Mock::given(method("PATCH"))
        .and(path("/repos/acme/tool/issues/12"))
        .and(header("authorization", "Bearer sekrit-token"))
        .and(header("content-type", "application/json"))
        .and(body_json(
            json!({"state": "closed", "labels": [], "assignees": ["bob"]}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"number": 12, "state": "closed", "title": "Old", "html_url": "http://x/12"}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let s = setup(vec![server.uri()]);
    let args = json!({"action": "update_issue", "repo": "acme/tool", "number": 12,
        "state": "closed", "labels": [], "assignees": ["bob"]});
    let out = project(&server.uri(), Some("sekrit-token"))
        .call(args, &s.cx)
        .await;
    assert_eq!(
        text(out),
        Ok("Updated #12 (closed) Old — http://x/12".into())
    );
}

#[tokio::test]
async fn update_issue_refuses_bad_fields_before_any_request() {
    let server = MockServer::start().await;
    let s = setup(vec![server.uri()]);
    let tool = project(&server.uri(), Some("sekrit-token"));
    for args in [
        json!({"action": "update_issue", "repo": "acme/tool", "number": 1}),
        json!({"action": "update_issue", "repo": "acme/tool", "number": 1, "state": "all"}),
        json!({"action": "update_issue", "repo": "acme/tool", "number": 1, "assignees": ["../x"]}),
        json!({"action": "update_issue", "repo": "acme/tool", "number": 0, "title": "x"}),
        json!({"action": "update_issue", "repo": "acme/../x", "number": 1, "title": "x"}),
        json!({"action": "get_issue", "repo": "acme/tool"}),
    ] {
        let out = tool.call(args.clone(), &s.cx).await;
        assert_eq!(
            out.err().map(|e| e.kind),
            Some(ErrorKind::InvalidArguments),
            "{args}"
        );
    }
    assert!(server
        .received_requests()
        .await
        .unwrap_or_default()
        .is_empty());
}

#[tokio::test]
async fn search_is_always_confined_to_the_repository() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/search/issues"))
        .and(raw_query(
            "q=crash+label%3Abug+repo%3Aacme%2Ftool&per_page=5",
        ))
        .and(header("authorization", "Bearer sekrit-token"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "total_count": 9,
            "items": [{"number": 3, "state": "open", "title": "Crash", "html_url": "http://x/3"}]
        })))
        .expect(1)
        .mount(&server)
        .await;
    let s = setup(vec![server.uri()]);
    let args = json!({"action": "search_issues", "repo": "acme/tool", "query": "crash label:bug", "limit": 5});
    let out = project(&server.uri(), Some("sekrit-token"))
        .call(args, &s.cx)
        .await;
    assert_eq!(
        text(out),
        Ok("9 issues in acme/tool match (showing 1):\n#3 (open) Crash — http://x/3".into())
    );
}

#[tokio::test]
async fn a_search_naming_another_scope_is_refused_unsent() {
    let server = MockServer::start().await;
    let s = setup(vec![server.uri()]);
    let tool = project(&server.uri(), Some("sekrit-token"));
    for query in [
        "token repo:victim/secret",
        "x -REPO:a/b",
        "(org:evil)",
        "\"user:someone\"",
        "a OR owner:x",
    ] {
        let args = json!({"action": "search_issues", "repo": "acme/tool", "query": query});
        let out = tool.call(args, &s.cx).await;
        assert_eq!(
            out.err().map(|e| e.kind),
            Some(ErrorKind::InvalidArguments),
            "{query}"
        );
    }
    assert!(server
        .received_requests()
        .await
        .unwrap_or_default()
        .is_empty());
}

#[tokio::test]
async fn github_errors_fail_with_its_message_and_never_the_token() {
    let server = MockServer::start().await;
    Mock::given(method("PATCH"))
        .and(path("/repos/acme/tool/issues/4"))
        .respond_with(
            ResponseTemplate::new(422)
                .set_body_json(json!({"message": "Validation Failed for Bearer sekrit-token"})),
        )
        .mount(&server)
        .await;
    let s = setup(vec![server.uri()]);
    let args = json!({"action": "update_issue", "repo": "acme/tool", "number": 4, "title": "t"});
    let out = project(&server.uri(), Some("sekrit-token"))
        .call(args, &s.cx)
        .await;
    assert_eq!(
        text(out),
        Err((
            ErrorKind::Failed,
            "GitHub answered 422 to PATCH: Validation Failed for Bearer [redacted]".into()
        ))
    );
}

fn scaffold_args(template: &str, target: &str, name: Option<&str>) -> Value {
    let mut a = json!({"action": "scaffold", "template": template, "target": target});
    if let Some(n) = name {
        a["name"] = json!(n);
    }
    a
}

#[tokio::test]
async fn scaffold_copies_the_template_with_the_name_filled_in() {
    let s = setup(Vec::new());
    write(
        &s.ws,
        "templates/rust/Cargo.toml",
        "[package]\nname = \"{{name}}\"\n",
    );
    write(
        &s.ws,
        "templates/rust/src/{{name}}.rs",
        "// {{name}} {{other}}\n",
    );
    write(&s.ws, "templates/rust/.gitignore", "target/\n");
    let out = project("http://127.0.0.1:9", None)
        .call(
            scaffold_args("templates/rust", "apps/demo", Some("demo")),
            &s.cx,
        )
        .await;
    assert_eq!(
        text(out),
        Ok("Created 3 files in apps/demo from templates/rust:\n\
            apps/demo/.gitignore (8 bytes)\n\
            apps/demo/Cargo.toml (24 bytes)\n\
            apps/demo/src/demo.rs (18 bytes)"
            .into())
    );
    assert_eq!(
        tree(&s.ws.join("apps/demo")),
        [
            (".gitignore".to_string(), "target/\n".to_string()),
            ("Cargo.toml".into(), "[package]\nname = \"demo\"\n".into()),
            ("src/demo.rs".into(), "// demo {{other}}\n".into()),
        ]
    );
    // The template itself is left as it was.
    assert_eq!(
        read(&s.ws, "templates/rust/src/{{name}}.rs"),
        "// {{name}} {{other}}\n"
    );
}

#[tokio::test]
async fn scaffold_into_an_empty_directory_works_without_a_name() {
    let s = setup(Vec::new());
    write(&s.ws, "tpl/README.md", "# {{name}}\n");
    std::fs::create_dir_all(s.ws.join("new")).unwrap_or_else(|e| panic!("{e}"));
    let out = project("http://127.0.0.1:9", None)
        .call(scaffold_args("tpl", "new", None), &s.cx)
        .await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(read(&s.ws, "new/README.md"), "# {{name}}\n");
}

#[tokio::test]
async fn scaffold_refuses_a_target_that_has_files() {
    let s = setup(Vec::new());
    write(&s.ws, "tpl/README.md", "new");
    write(&s.ws, "existing/.keep", "mine");
    write(&s.ws, "afile", "mine");
    let tool = project("http://127.0.0.1:9", None);
    for target in ["existing", "afile"] {
        let out = tool.call(scaffold_args("tpl", target, None), &s.cx).await;
        assert_eq!(
            out.err().map(|e| e.kind),
            Some(ErrorKind::Failed),
            "{target}"
        );
    }
    assert_eq!(read(&s.ws, "existing/.keep"), "mine");
    assert_eq!(read(&s.ws, "afile"), "mine");
    assert!(!s.ws.join("existing/README.md").exists());
}

#[cfg(unix)]
#[tokio::test]
async fn a_template_link_to_an_outside_file_is_never_copied() {
    let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    write(outside.path(), "id_rsa", "PRIVATE-KEY-MATERIAL");
    // Even with the outside directory readable under the grants, the copy is refused.
    let readable = Grants {
        fs: Some(FsGrant {
            allow_read: vec![outside.path().display().to_string()],
            ..Default::default()
        }),
        ..Default::default()
    };
    for grants in [Grants::default(), readable] {
        let s = setup_with(Vec::new(), grants.clone());
        write(&s.ws, "tpl/README.md", "hello");
        std::os::unix::fs::symlink(outside.path().join("id_rsa"), s.ws.join("tpl/key"))
            .unwrap_or_else(|e| panic!("symlink: {e}"));
        std::os::unix::fs::symlink(outside.path(), s.ws.join("tpl/dir"))
            .unwrap_or_else(|e| panic!("symlink: {e}"));
        let out = project("http://127.0.0.1:9", None)
            .call(scaffold_args("tpl", "out", None), &s.cx)
            .await;
        let leaked = tree(&s.ws.join("out"))
            .iter()
            .any(|(_, c)| c.contains("PRIVATE-KEY-MATERIAL"));
        assert!(!leaked, "{grants:?}");
        if grants.fs.is_some() {
            assert_eq!(out.err().map(|e| e.kind), Some(ErrorKind::Denied));
            assert!(
                !s.ws.join("out").exists(),
                "nothing is written when refused"
            );
        } else {
            // Unreadable links are not even listed: the rest is copied.
            assert!(out.is_ok(), "{out:?}");
            assert_eq!(
                tree(&s.ws.join("out")),
                [("README.md".to_string(), "hello".to_string())]
            );
        }
    }
}

#[cfg(unix)]
#[tokio::test]
async fn scaffold_paths_must_stay_inside_the_workspace() {
    let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    write(outside.path(), "tpl/secret.txt", "OUTSIDE");
    let s = setup(Vec::new());
    write(&s.ws, "tpl/README.md", "hello");
    std::os::unix::fs::symlink(outside.path().join("tpl"), s.ws.join("linked"))
        .unwrap_or_else(|e| panic!("symlink: {e}"));
    std::os::unix::fs::symlink(outside.path(), s.ws.join("escape"))
        .unwrap_or_else(|e| panic!("symlink: {e}"));
    let out_abs = outside.path().join("new").display().to_string();
    let in_abs = outside.path().join("tpl").display().to_string();
    let tool = project("http://127.0.0.1:9", None);
    for (template, target) in [
        ("../tpl", "new"),
        (in_abs.as_str(), "new"),
        ("linked", "new"),
        ("tpl", "../new"),
        ("tpl", out_abs.as_str()),
        ("tpl", "escape/new"),
        ("tpl", "~/new"),
        ("tpl", "."),
        ("tpl", "tpl/sub"),
    ] {
        let out = tool
            .call(scaffold_args(template, target, None), &s.cx)
            .await;
        assert_eq!(
            out.err().map(|e| e.kind),
            Some(ErrorKind::InvalidArguments),
            "{template} -> {target}"
        );
    }
    assert_eq!(
        tree(&outside.path().join("tpl")),
        [("secret.txt".to_string(), "OUTSIDE".to_string())]
    );
    assert!(!s.ws.join("new").exists());
}
