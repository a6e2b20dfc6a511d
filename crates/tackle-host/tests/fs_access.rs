//! Reads and writes through the host: canonical paths, grants, atomicity, links.

mod common;

use common::{exists, is_denied, Fixture};
use std::os::unix::fs::{symlink, PermissionsExt};
use tackle_protocol::{Capability, FsGrant, Grants, HostError, ReadRequest, Verdict, WriteRequest};

fn write_req(path: impl Into<std::path::PathBuf>, data: &str, create_dirs: bool) -> WriteRequest {
    WriteRequest {
        expected: None,
        path: path.into(),
        data: data.as_bytes().to_vec(),
        create_dirs,
    }
}

#[tokio::test]
async fn reads_a_workspace_file_by_relative_path() {
    let f = Fixture::new();
    f.write("notes/a.txt", "hello");
    let got = f
        .host(Grants::default())
        .read(ReadRequest::whole("notes/a.txt"))
        .await
        .unwrap();
    assert_eq!(got.bytes, b"hello");
    assert_eq!(got.total_size, 5);
    assert_eq!(got.path, f.ws().join("notes/a.txt"));
}

#[tokio::test]
async fn read_honours_offset_and_byte_cap() {
    let f = Fixture::new();
    f.write("a.txt", "0123456789");
    let req = ReadRequest {
        path: "a.txt".into(),
        offset: 3,
        max_bytes: Some(4),
    };
    let got = f.host(Grants::default()).read(req).await.unwrap();
    assert_eq!(got.bytes, b"3456");
    assert_eq!(got.total_size, 10);
}

#[tokio::test]
async fn read_outside_the_workspace_is_denied() {
    let f = Fixture::new();
    let secret = f.outside().join("secret.txt");
    std::fs::write(&secret, "s").unwrap();
    let host = f.host(Grants::default());
    assert!(is_denied(&host.read(ReadRequest::whole(&secret)).await));
    assert!(is_denied(
        &host
            .read(ReadRequest::whole("../../../../../../etc/passwd"))
            .await
    ));
}

#[tokio::test]
async fn read_through_a_link_that_leaves_the_workspace_is_denied() {
    let f = Fixture::new();
    std::fs::write(f.outside().join("secret.txt"), "s").unwrap();
    symlink(f.outside().join("secret.txt"), f.ws().join("innocent.txt")).unwrap();
    symlink(f.outside(), f.ws().join("dirlink")).unwrap();
    let host = f.host(Grants::default());
    assert!(is_denied(
        &host.read(ReadRequest::whole("innocent.txt")).await
    ));
    assert!(is_denied(
        &host.read(ReadRequest::whole("dirlink/secret.txt")).await
    ));
}

#[tokio::test]
async fn read_of_a_missing_file_is_not_found_and_a_directory_is_invalid() {
    let f = Fixture::new();
    std::fs::create_dir(f.ws().join("d")).unwrap();
    let host = f.host(Grants::default());
    assert!(matches!(
        host.read(ReadRequest::whole("nope.txt")).await,
        Err(HostError::NotFound { .. })
    ));
    assert!(matches!(
        host.read(ReadRequest::whole("d")).await,
        Err(HostError::Invalid(_))
    ));
}

#[tokio::test]
async fn write_creates_a_file_and_then_replaces_it() {
    let f = Fixture::new();
    let host = f.host(Grants::default());
    let first = host
        .write(write_req("new.txt", "one", false))
        .await
        .unwrap();
    assert!(first.created);
    assert_eq!(first.bytes_written, 3);
    let second = host
        .write(write_req("new.txt", "two!", false))
        .await
        .unwrap();
    assert!(!second.created);
    assert_eq!(
        std::fs::read_to_string(f.ws().join("new.txt")).unwrap(),
        "two!"
    );
}

#[tokio::test]
async fn write_keeps_the_permissions_of_the_file_it_replaces_and_leaves_no_temp_file() {
    let f = Fixture::new();
    let p = f.write("script.sh", "old");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o751)).unwrap();
    f.host(Grants::default())
        .write(write_req("script.sh", "new", false))
        .await
        .unwrap();
    let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o751);
    let names: Vec<_> = std::fs::read_dir(f.ws())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("script.sh")]);
}

#[tokio::test]
async fn write_creates_missing_directories_only_when_asked() {
    let f = Fixture::new();
    let host = f.host(Grants::default());
    let r = host.write(write_req("a/b/c.txt", "x", false)).await;
    assert!(matches!(r, Err(HostError::NotFound { .. })), "{r:?}");
    assert!(!exists(&f.ws().join("a")));
    host.write(write_req("a/b/c.txt", "x", true)).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(f.ws().join("a/b/c.txt")).unwrap(),
        "x"
    );
}

#[tokio::test]
async fn write_outside_the_grant_is_denied_and_creates_no_directory() {
    let f = Fixture::new();
    let target = f.outside().join("made/here.txt");
    let r = f
        .host(Grants::default())
        .write(write_req(&target, "x", true))
        .await;
    assert!(is_denied(&r), "{r:?}");
    assert!(!exists(&f.outside().join("made")));
}

#[tokio::test]
async fn write_through_a_linked_directory_that_leaves_the_grant_is_denied() {
    let f = Fixture::new();
    symlink(f.outside(), f.ws().join("out")).unwrap();
    let r = f
        .host(Grants::default())
        .write(write_req("out/evil.txt", "x", false))
        .await;
    assert!(is_denied(&r), "{r:?}");
    assert!(!exists(&f.outside().join("evil.txt")));
}

#[tokio::test]
async fn write_to_a_file_link_pointing_outside_is_denied_and_the_target_is_untouched() {
    let f = Fixture::new();
    let victim = f.outside().join("victim.txt");
    std::fs::write(&victim, "original").unwrap();
    symlink(&victim, f.ws().join("link.txt")).unwrap();
    let r = f
        .host(Grants::default())
        .write(write_req("link.txt", "pwned", false))
        .await;
    assert!(is_denied(&r), "{r:?}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "original");
}

#[tokio::test]
async fn write_through_a_dangling_link_is_refused() {
    let f = Fixture::new();
    let later = f.outside().join("later.txt");
    symlink(&later, f.ws().join("dangling.txt")).unwrap();
    let r = f
        .host(Grants::default())
        .write(write_req("dangling.txt", "x", false))
        .await;
    assert!(is_denied(&r), "{r:?}");
    assert!(!exists(&later));
}

#[tokio::test]
async fn allow_write_grant_opens_another_root() {
    let f = Fixture::new();
    let out = f.outside();
    let grants = Grants {
        fs: Some(FsGrant {
            allow_read: vec![out.display().to_string()],
            allow_write: vec![out.display().to_string()],
        }),
        ..Grants::default()
    };
    let host = f.host(grants);
    host.write(write_req(out.join("ok.txt"), "fine", false))
        .await
        .unwrap();
    assert_eq!(
        host.read(ReadRequest::whole(out.join("ok.txt")))
            .await
            .unwrap()
            .bytes,
        b"fine"
    );
}

#[tokio::test]
async fn check_explains_file_capabilities_without_touching_anything() {
    let f = Fixture::new();
    let host = f.host(Grants::default());
    let new_file = f.ws().join("deep/new/file.txt");
    let d = host
        .check(&Capability::FileWrite {
            path: new_file.clone(),
        })
        .await;
    assert_eq!(d.verdict, Verdict::Allow, "{d:?}");
    assert!(!exists(&f.ws().join("deep")));
    let d = host
        .check(&Capability::FileRead {
            path: f.outside().join("x"),
        })
        .await;
    assert_eq!(d.verdict, Verdict::Deny);
    assert!(!d.why.is_empty());
}
