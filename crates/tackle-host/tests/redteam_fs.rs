//! Adversarial file-system requests: traversal, links swapped in, `/proc` aliases, odd bytes.
//! Every case must end in a denial or an error, never in bytes from outside the grant.

mod common;

use common::{exists, is_denied, Fixture};
use std::os::unix::fs::symlink;
use std::path::PathBuf;
use tackle_protocol::{
    FsGrant, Grants, HostError, ListRequest, ReadRequest, SearchRequest, WriteRequest,
};

const SECRET: &str = "TOP-SECRET-OUTSIDE";

fn write_req(path: impl Into<PathBuf>, create_dirs: bool) -> WriteRequest {
    WriteRequest {
        expected: None,
        path: path.into(),
        data: b"payload".to_vec(),
        create_dirs,
    }
}

fn list_req(path: &str, glob: Option<&str>) -> ListRequest {
    ListRequest {
        path: path.into(),
        max_depth: None,
        include_hidden: true,
        respect_gitignore: false,
        glob: glob.map(String::from),
        max_entries: 1000,
    }
}

fn search_req(root: &str, glob: Option<&str>) -> SearchRequest {
    SearchRequest {
        root: root.into(),
        pattern: SECRET.into(),
        case_insensitive: false,
        glob: glob.map(String::from),
        include_hidden: true,
        max_results: 100,
    }
}

/// A workspace plus an outside directory holding `secret.txt`.
fn fixture() -> (Fixture, PathBuf) {
    let f = Fixture::new();
    let secret = f.outside().join("secret.txt");
    std::fs::write(&secret, SECRET).unwrap();
    (f, secret)
}

fn leaked<T: std::fmt::Debug>(r: &Result<T, HostError>) -> bool {
    format!("{r:?}").contains(SECRET) || format!("{r:?}").contains(&hex(SECRET))
}

/// `Vec<u8>` debug output is a list of numbers; look for those too.
fn hex(s: &str) -> String {
    format!("{:?}", s.as_bytes())
        .trim_matches(['[', ']'])
        .to_string()
}

#[tokio::test]
async fn proc_self_root_and_cwd_aliases_do_not_reach_outside_files() {
    let (f, secret) = fixture();
    let host = f.host(Grants::default());
    let via_root = PathBuf::from("/proc/self/root").join(secret.strip_prefix("/").unwrap());
    let r = host.read(ReadRequest::whole(via_root)).await;
    assert!(is_denied(&r) && !leaked(&r), "{r:?}");
    let r = host
        .read(ReadRequest::whole("/proc/self/cwd/Cargo.toml"))
        .await;
    assert!(r.is_err(), "{r:?}");
    let r = host.read(ReadRequest::whole("/proc/self/environ")).await;
    assert!(r.is_err(), "{r:?}");
}

#[tokio::test]
async fn dot_dot_traversal_in_every_position_is_denied() {
    let (f, secret) = fixture();
    let host = f.host(Grants::default());
    let outside_name = f
        .outside()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    f.write("sub/file.txt", "x");
    for p in [
        format!("../{outside_name}/secret.txt"),
        format!("sub/../../{outside_name}/secret.txt"),
        format!("sub/file.txt/../../../{outside_name}/secret.txt"),
        format!("missing/../../{outside_name}/secret.txt"),
        format!("{}/../{outside_name}/secret.txt", f.ws().display()),
        format!("./././../{outside_name}/./secret.txt"),
        secret.display().to_string(),
    ] {
        let r = host.read(ReadRequest::whole(&p)).await;
        assert!(r.is_err() && !leaked(&r), "{p}: {r:?}");
    }
}

#[tokio::test]
async fn a_chain_of_links_leaving_in_the_middle_of_the_path_is_denied() {
    let (f, _) = fixture();
    let ws = f.ws();
    symlink(ws.join("b"), ws.join("a")).unwrap();
    symlink(f.outside(), ws.join("b")).unwrap();
    let host = f.host(Grants::default());
    let r = host.read(ReadRequest::whole("a/secret.txt")).await;
    assert!(is_denied(&r) && !leaked(&r), "{r:?}");
    // `a/..` is the real parent of the link's target (as the kernel resolves it), which
    // holds no `a`: an error either way, never the secret.
    let r = host.read(ReadRequest::whole("a/../a/secret.txt")).await;
    assert!(r.is_err() && !leaked(&r), "{r:?}");
}

#[tokio::test]
async fn writes_that_create_parents_through_a_linked_directory_create_nothing_outside() {
    let (f, _) = fixture();
    symlink(f.outside(), f.ws().join("out")).unwrap();
    let host = f.host(Grants::default());
    let r = host.write(write_req("out/new/deep/file.txt", true)).await;
    assert!(is_denied(&r), "{r:?}");
    assert!(!exists(&f.outside().join("new")));
    let r = host.write(write_req("out/secret.txt", false)).await;
    assert!(is_denied(&r), "{r:?}");
    assert_eq!(
        std::fs::read_to_string(f.outside().join("secret.txt")).unwrap(),
        SECRET
    );
}

#[tokio::test]
async fn a_link_whose_target_appears_later_never_opens_the_outside_file() {
    let (f, _) = fixture();
    let later = f.outside().join("later.txt");
    symlink(&later, f.ws().join("later")).unwrap();
    let host = f.host(Grants::default());
    let r = host.write(write_req("later", false)).await;
    assert!(is_denied(&r), "{r:?}");
    assert!(!exists(&later));
    std::fs::write(&later, SECRET).unwrap();
    let r = host.read(ReadRequest::whole("later")).await;
    assert!(is_denied(&r) && !leaked(&r), "{r:?}");
}

#[tokio::test]
async fn writing_to_a_hard_link_replaces_it_and_leaves_the_outside_file_untouched() {
    let (f, secret) = fixture();
    if std::fs::hard_link(&secret, f.ws().join("hl")).is_err() {
        eprintln!("skipped: the workspace and the outside dir are on different file systems");
        return;
    }
    let host = f.host(Grants::default());
    host.write(write_req("hl", false)).await.unwrap();
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), SECRET);
    assert_eq!(std::fs::read(f.ws().join("hl")).unwrap(), b"payload");
}

#[tokio::test]
async fn nul_bytes_newlines_and_huge_paths_are_errors_not_panics() {
    let (f, _) = fixture();
    let host = f.host(Grants::default());
    let deep = "a/../".repeat(20_000) + "x";
    let long = "x".repeat(5_000);
    for p in ["ok\0/../../etc/passwd", "\0", "", ".", "a\nb", &deep, &long] {
        let r = host.read(ReadRequest::whole(p)).await;
        assert!(r.is_err() && !leaked(&r), "{:?}: {r:?}", p.get(..40));
        let r = host.write(write_req(p, true)).await;
        if p.is_empty() || p == "." || p == "\0" || p.starts_with("ok\0") {
            assert!(r.is_err(), "{:?}: {r:?}", p.get(..40));
        }
    }
}

#[tokio::test]
async fn device_and_fifo_paths_are_refused_without_hanging() {
    let (f, _) = fixture();
    let grants = Grants {
        fs: Some(FsGrant {
            allow_read: vec![".".into(), "/dev".into()],
            allow_write: vec![".".into()],
        }),
        ..Grants::default()
    };
    let host = f.host(grants);
    let r = host.read(ReadRequest::whole("/dev/zero")).await;
    assert!(matches!(r, Err(HostError::Invalid(_))), "{r:?}");
    let r = host.write(write_req("/dev/null", false)).await;
    assert!(is_denied(&r), "{r:?}");
    let fifo = f.ws().join("fifo");
    let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: a valid C string; mkfifo has no other preconditions.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        eprintln!("skipped: mkfifo is not available here");
        return;
    }
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        host.read(ReadRequest::whole("fifo")),
    )
    .await;
    assert!(matches!(read, Ok(Err(HostError::Invalid(_)))), "{read:?}");
}

#[tokio::test]
async fn list_and_search_never_surface_what_links_and_globs_point_at_outside() {
    let (f, _) = fixture();
    f.write("inside.txt", "nothing here");
    symlink(f.outside(), f.ws().join("dirlink")).unwrap();
    symlink(f.outside().join("secret.txt"), f.ws().join("filelink")).unwrap();
    let host = f.host(Grants::default());
    for glob in [
        None,
        Some("../../*"),
        Some("**/*"),
        Some("**/secret.txt"),
        Some("/**"),
    ] {
        let got = host.list(list_req(".", glob)).await.unwrap();
        let names: Vec<String> = got.iter().map(|e| e.path.display().to_string()).collect();
        assert!(
            names
                .iter()
                .all(|n| !n.contains("secret") && !n.starts_with("dirlink/")),
            "{glob:?}: {names:?}"
        );
        let hits = host.search(search_req(".", glob)).await.unwrap();
        assert!(hits.is_empty(), "{glob:?}: {hits:?}");
    }
    for root in ["/", "..", "dirlink", "filelink", "/proc/self/root"] {
        let r = host.search(search_req(root, None)).await;
        assert!(is_denied(&r) && !leaked(&r), "{root}: {r:?}");
        let r = host.list(list_req(root, None)).await;
        assert!(is_denied(&r), "{root}: {r:?}");
    }
}

#[tokio::test]
async fn a_sibling_sharing_a_name_prefix_with_a_root_is_outside() {
    let (f, _) = fixture();
    let ws = f.ws();
    let sibling = PathBuf::from(format!("{}x", ws.display()));
    std::fs::create_dir_all(&sibling).unwrap();
    std::fs::write(sibling.join("s.txt"), SECRET).unwrap();
    let r = f
        .host(Grants::default())
        .read(ReadRequest::whole(sibling.join("s.txt")))
        .await;
    std::fs::remove_dir_all(&sibling).unwrap();
    assert!(is_denied(&r) && !leaked(&r), "{r:?}");
}

#[tokio::test]
async fn unicode_normalisation_variants_are_different_directories() {
    let (f, _) = fixture();
    let nfc = f.outside().join("caf\u{e9}");
    let nfd = f.outside().join("cafe\u{301}");
    std::fs::create_dir_all(&nfc).unwrap();
    std::fs::create_dir_all(&nfd).unwrap();
    std::fs::write(nfd.join("s.txt"), SECRET).unwrap();
    let grants = Grants {
        fs: Some(FsGrant {
            allow_read: vec![nfc.display().to_string()],
            allow_write: Vec::new(),
        }),
        ..Grants::default()
    };
    let r = f
        .host(grants)
        .read(ReadRequest::whole(nfd.join("s.txt")))
        .await;
    assert!(is_denied(&r) && !leaked(&r), "{r:?}");
}

#[tokio::test]
async fn tilde_forms_never_reach_another_users_home() {
    let (f, _) = fixture();
    let host = f.host(Grants::default());
    for p in ["~root/.bashrc", "~/../../etc/passwd", "~", "~/"] {
        let r = host.read(ReadRequest::whole(p)).await;
        assert!(r.is_err(), "{p}: {r:?}");
    }
}

#[tokio::test]
async fn a_write_never_builds_a_directory_tree_past_the_path_length_limit() {
    let (f, _) = fixture();
    let host = f.host(Grants::default());
    // Each level is created relative to its parent, so only an explicit limit stops a
    // tree too deep for other tools (and `remove_dir_all`) to handle.
    let deep = "d/".repeat(3_000) + "file.txt";
    let r = host.write(write_req(&deep, true)).await;
    assert!(
        matches!(r, Err(HostError::Invalid(_))),
        "{:?}",
        r.map(|w| w.bytes_written)
    );
    assert!(!exists(&f.ws().join("d")));
}

#[tokio::test]
async fn a_host_scoped_to_a_relative_workspace_opens_nothing() {
    use tackle_host::NativeHostProvider;
    use tackle_protocol::{CallScope, HostProvider};
    let (f, secret) = fixture();
    for ws in [".", "", "relative/ws"] {
        let scope = CallScope {
            tool: "test".into(),
            session_id: "sess-rel".into(),
            agent: "default".into(),
            workspace: PathBuf::from(ws),
            grants: Grants::default(),
            cancel: f.cancel.clone(),
            approved: false,
        };
        let host = NativeHostProvider::new(f.config()).scoped(&scope);
        let r = host.read(ReadRequest::whole(&secret)).await;
        assert!(r.is_err() && !leaked(&r), "{ws:?}: {r:?}");
        let r = host
            .write(write_req(f.outside().join("new.txt"), false))
            .await;
        assert!(r.is_err(), "{ws:?}: {r:?}");
        assert!(!exists(&f.outside().join("new.txt")));
    }
}
