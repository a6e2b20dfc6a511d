//! The `memory` tool (workspace notes) on the real host and a real directory: links are never
//! followed, not even to files the grant would let it read.

use serde_json::json;
use tackle_host::{HostConfig, NativeHostProvider};
use tackle_protocol::{CallScope, ErrorKind, HostProvider, Tool, ToolContext};
use tackle_tools::memory::WorkspaceNotes;

fn context(ws: &std::path::Path, state: &std::path::Path) -> ToolContext {
    let scope = CallScope {
        tool: "memory".into(),
        session_id: "s".into(),
        agent: "default".into(),
        workspace: ws.to_path_buf(),
        grants: Default::default(),
        cancel: Default::default(),
        approved: false,
    };
    let host = NativeHostProvider::new(HostConfig::new(state)).scoped(&scope);
    ToolContext::new(&scope, "test", host)
}

#[tokio::test]
async fn notes_behind_links_are_neither_searched_nor_read() {
    let ws_dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(ws_dir.path()).unwrap();
    std::fs::create_dir_all(ws.join("memory/team")).unwrap();
    std::fs::write(ws.join("memory/team/plan.md"), "the launch plan is ready\n").unwrap();
    std::fs::write(ws.join("private.md"), "the launch codes are 1234\n").unwrap();
    std::os::unix::fs::symlink(ws.join("private.md"), ws.join("memory/codes.md")).unwrap();
    std::os::unix::fs::symlink(ws.join("private.md"), ws.join("MEMORY.md")).unwrap();
    std::os::unix::fs::symlink(ws.join("memory/team"), ws.join("memory/alias")).unwrap();
    let cx = context(&ws, state.path());

    let out = WorkspaceNotes
        .call(json!({"query": "launch"}), &cx)
        .await
        .unwrap();
    assert!(
        out.content.contains("memory/team/plan.md#L1-L1"),
        "{}",
        out.content
    );
    assert!(!out.content.contains("codes"), "{}", out.content);
    assert!(!out.content.contains("alias"), "{}", out.content);

    for path in ["memory/codes.md", "MEMORY.md", "memory/alias/plan.md"] {
        let err = WorkspaceNotes
            .call(json!({"action": "get", "path": path}), &cx)
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotFound, "{path}");
    }
    let ok = WorkspaceNotes
        .call(json!({"action": "get", "path": "memory/team/plan.md"}), &cx)
        .await
        .unwrap();
    assert!(
        ok.content.ends_with("the launch plan is ready"),
        "{}",
        ok.content
    );
}
