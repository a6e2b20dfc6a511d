//! `list` and `search`: ignore rules, globs, caps, and nothing from outside the grant.

mod common;

use common::{is_denied, Fixture};
use std::os::unix::fs::symlink;
use std::path::PathBuf;
use tackle_protocol::{Grants, HostError, ListRequest, SearchRequest};

fn list_req(path: &str) -> ListRequest {
    ListRequest {
        path: path.into(),
        max_depth: None,
        include_hidden: false,
        respect_gitignore: true,
        glob: None,
        max_entries: 1000,
    }
}

fn search_req(pattern: &str) -> SearchRequest {
    SearchRequest {
        root: ".".into(),
        pattern: pattern.into(),
        case_insensitive: false,
        glob: None,
        include_hidden: false,
        max_results: 100,
    }
}

fn paths(entries: &[tackle_protocol::DirEntry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| e.path.display().to_string())
        .collect()
}

fn tree(f: &Fixture) {
    f.write(".gitignore", "target/\n*.log\n");
    f.write("src/main.rs", "fn main() { println!(\"Hello\"); }\n");
    f.write("src/lib.rs", "pub fn hello() {}\n// TODO: more\n");
    f.write("target/debug/out.rs", "fn hello() {}\n");
    f.write("build.log", "hello log\n");
    f.write(".hidden/secret.rs", "fn hello() {}\n");
    f.write("README.md", "say hello\n");
}

#[tokio::test]
async fn list_respects_gitignore_and_hidden_and_is_sorted() {
    let f = Fixture::new();
    tree(&f);
    let got = f.host(Grants::default()).list(list_req(".")).await.unwrap();
    assert_eq!(
        paths(&got),
        vec!["README.md", "src", "src/lib.rs", "src/main.rs"]
    );
    assert!(
        got.iter()
            .find(|e| e.path == std::path::Path::new("src"))
            .unwrap()
            .is_dir
    );
}

#[tokio::test]
async fn list_can_include_hidden_and_ignored_entries() {
    let f = Fixture::new();
    tree(&f);
    let req = ListRequest {
        include_hidden: true,
        respect_gitignore: false,
        ..list_req(".")
    };
    let got = paths(&f.host(Grants::default()).list(req).await.unwrap());
    assert!(got.contains(&"build.log".to_string()));
    assert!(got.contains(&".hidden/secret.rs".to_string()));
    assert!(got.contains(&"target/debug/out.rs".to_string()));
}

#[tokio::test]
async fn list_glob_filters_and_max_depth_limits() {
    let f = Fixture::new();
    tree(&f);
    let host = f.host(Grants::default());
    let req = ListRequest {
        glob: Some("**/*.rs".into()),
        ..list_req(".")
    };
    assert_eq!(
        paths(&host.list(req).await.unwrap()),
        vec!["src/lib.rs", "src/main.rs"]
    );
    let req = ListRequest {
        glob: Some("*.rs".into()),
        ..list_req("src")
    };
    assert_eq!(
        paths(&host.list(req).await.unwrap()),
        vec!["lib.rs", "main.rs"]
    );
    let req = ListRequest {
        max_depth: Some(1),
        ..list_req(".")
    };
    assert_eq!(
        paths(&host.list(req).await.unwrap()),
        vec!["README.md", "src"]
    );
}

#[tokio::test]
async fn list_is_capped_at_max_entries() {
    let f = Fixture::new();
    for i in 0..20 {
        f.write(&format!("f{i:02}.txt"), "x");
    }
    let req = ListRequest {
        max_entries: 5,
        ..list_req(".")
    };
    assert_eq!(f.host(Grants::default()).list(req).await.unwrap().len(), 5);
}

#[tokio::test]
async fn parent_glob_and_outside_root_find_nothing_outside() {
    let f = Fixture::new();
    tree(&f);
    std::fs::write(f.outside().join("outside.txt"), "hello").unwrap();
    let host = f.host(Grants::default());
    let req = ListRequest {
        glob: Some("../../*".into()),
        ..list_req(".")
    };
    assert!(host.list(req).await.unwrap().is_empty());
    let outside = f.outside().display().to_string();
    assert!(is_denied(&host.list(list_req(&outside)).await));
    assert!(is_denied(&host.list(list_req("..")).await));
    let req = SearchRequest {
        root: f.outside(),
        ..search_req("hello")
    };
    assert!(is_denied(&host.search(req).await));
}

#[tokio::test]
async fn links_out_of_the_grant_are_neither_listed_nor_searched() {
    let f = Fixture::new();
    f.write("inside.txt", "hello inside\n");
    std::fs::write(f.outside().join("secret.txt"), "hello secret\n").unwrap();
    symlink(f.outside(), f.ws().join("escape")).unwrap();
    symlink(f.outside().join("secret.txt"), f.ws().join("leak.txt")).unwrap();
    let host = f.host(Grants::default());
    let listed = paths(&host.list(list_req(".")).await.unwrap());
    assert_eq!(listed, vec!["inside.txt"]);
    let hits = host.search(search_req("hello")).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].path, PathBuf::from("inside.txt"));
}

#[tokio::test]
async fn search_returns_root_relative_paths_and_line_numbers() {
    let f = Fixture::new();
    tree(&f);
    let host = f.host(Grants::default());
    let hits = host.search(search_req("hello")).await.unwrap();
    let got: Vec<_> = hits
        .iter()
        .map(|h| (h.path.display().to_string(), h.line_number))
        .collect();
    assert_eq!(
        got,
        vec![("README.md".to_string(), 1), ("src/lib.rs".to_string(), 1)]
    );
    assert_eq!(hits[1].line, "pub fn hello() {}");
    let req = SearchRequest {
        root: "src".into(),
        case_insensitive: true,
        ..search_req("HELLO")
    };
    let got: Vec<_> = host
        .search(req)
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.path)
        .collect();
    assert_eq!(got, vec![PathBuf::from("lib.rs"), PathBuf::from("main.rs")]);
}

#[tokio::test]
async fn search_glob_and_cap_limit_results() {
    let f = Fixture::new();
    tree(&f);
    let host = f.host(Grants::default());
    let req = SearchRequest {
        glob: Some("*.md".into()),
        ..search_req("hello")
    };
    assert_eq!(host.search(req).await.unwrap().len(), 1);
    f.write("many.txt", &"match\n".repeat(50));
    let req = SearchRequest {
        max_results: 7,
        ..search_req("match")
    };
    assert_eq!(host.search(req).await.unwrap().len(), 7);
}

#[tokio::test]
async fn invalid_regex_is_invalid_and_names_the_problem() {
    let f = Fixture::new();
    let r = f.host(Grants::default()).search(search_req("a(b")).await;
    match r {
        Err(HostError::Invalid(msg)) => assert!(msg.contains("a(b"), "{msg}"),
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[tokio::test]
async fn binary_files_are_skipped() {
    let f = Fixture::new();
    std::fs::write(f.ws().join("blob.bin"), b"needle\x00\x01\x02needle").unwrap();
    f.write("text.txt", "needle\n");
    let hits = f
        .host(Grants::default())
        .search(search_req("needle"))
        .await
        .unwrap();
    let got: Vec<_> = hits.into_iter().map(|h| h.path).collect();
    assert_eq!(got, vec![PathBuf::from("text.txt")]);
}
