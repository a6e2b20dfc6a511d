//! A write of an edited copy never replaces a file that changed after it was read.

mod common;

use common::Fixture;
use tackle_protocol::{Grants, HostError, ReadRequest, WriteRequest};

fn edit_of(path: &str, data: &str, read: &tackle_protocol::FileContent) -> WriteRequest {
    WriteRequest {
        path: path.into(),
        data: data.as_bytes().to_vec(),
        create_dirs: false,
        expected: read.version,
    }
}

fn leftovers(f: &Fixture) -> Vec<String> {
    std::fs::read_dir(f.ws())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect()
}

#[tokio::test]
async fn an_unchanged_file_takes_the_edit() {
    let f = Fixture::new();
    f.write("a.txt", "one\n");
    let host = f.host(Grants::default());
    let read = host.read(ReadRequest::whole("a.txt")).await.unwrap();
    assert!(read.version.and_then(|v| v.digest).is_some());
    host.write(edit_of("a.txt", "ONE\n", &read)).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(f.ws().join("a.txt")).unwrap(),
        "ONE\n"
    );
}

#[tokio::test]
async fn a_same_size_rewrite_in_place_since_the_read_is_a_conflict() {
    let f = Fixture::new();
    f.write("a.txt", "one\n");
    let host = f.host(Grants::default());
    let read = host.read(ReadRequest::whole("a.txt")).await.unwrap();
    // Same length, same inode, within the same clock tick as the read: only the content
    // tells the two apart.
    std::fs::write(f.ws().join("a.txt"), "two\n").unwrap();
    let err = host
        .write(edit_of("a.txt", "ONE\n", &read))
        .await
        .unwrap_err();
    assert!(matches!(err, HostError::Conflict { .. }), "{err:?}");
    assert!(err.to_string().contains("changed since read"), "{err}");
    assert_eq!(
        std::fs::read_to_string(f.ws().join("a.txt")).unwrap(),
        "two\n"
    );
    assert!(leftovers(&f).is_empty(), "{:?}", leftovers(&f));
}

#[tokio::test]
async fn a_file_replaced_or_removed_since_the_read_is_a_conflict() {
    let f = Fixture::new();
    f.write("a.txt", "one\n");
    f.write("b.txt", "one\n");
    let host = f.host(Grants::default());
    let read_a = host.read(ReadRequest::whole("a.txt")).await.unwrap();
    let read_b = host.read(ReadRequest::whole("b.txt")).await.unwrap();
    // a.txt: replaced by another file with the very same content (a new inode).
    std::fs::write(f.ws().join("new"), "one\n").unwrap();
    std::fs::rename(f.ws().join("new"), f.ws().join("a.txt")).unwrap();
    std::fs::remove_file(f.ws().join("b.txt")).unwrap();
    for (name, read) in [("a.txt", &read_a), ("b.txt", &read_b)] {
        let err = host.write(edit_of(name, "ONE\n", read)).await.unwrap_err();
        assert!(matches!(err, HostError::Conflict { .. }), "{name}: {err:?}");
    }
    assert_eq!(
        std::fs::read_to_string(f.ws().join("a.txt")).unwrap(),
        "one\n"
    );
    assert!(!f.ws().join("b.txt").exists(), "a removed file came back");
}

#[tokio::test]
async fn a_tool_result_says_what_to_do() {
    let err: tackle_protocol::ToolError = HostError::Conflict {
        path: "/ws/a.txt".into(),
    }
    .into();
    assert_eq!(err.kind, tackle_protocol::ErrorKind::Failed);
    assert!(err.message.contains("re-read and retry"), "{}", err.message);
}

#[tokio::test]
async fn two_spellings_of_one_file_have_one_canonical_name() {
    let f = Fixture::new();
    f.write("d/f.txt", "x");
    std::os::unix::fs::symlink(f.ws().join("d"), f.ws().join("l")).unwrap();
    let host = f.host(Grants::default());
    let direct = host.canonical(&f.ws().join("d/f.txt"));
    assert_eq!(direct, host.canonical(&f.ws().join("l/f.txt")));
    assert_eq!(direct, host.canonical(&f.ws().join("l/../d/./f.txt")));
    // Not there yet: the existing part resolved, the rest kept.
    assert_eq!(
        host.canonical(&f.ws().join("l/new.txt")),
        direct.with_file_name("new.txt")
    );
}
