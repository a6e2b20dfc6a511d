//! `find_skills` and `install_skill` end to end: the real host (HTTP client, body caps) and the
//! real skill directories on disk, against a registry on 127.0.0.1 serving zip archives built
//! here. Every refused archive must leave nothing behind.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tackle_host::{DiskSkillDirs, HostConfig, NativeHostProvider};
use tackle_protocol::{
    CallScope, ErrorKind, Grants, HostProvider, NetworkGrant, Tool, ToolCatalog, ToolContext,
    ToolError, ToolOutput, ToolSpec,
};
use tackle_tools::skills::{extension, SkillDir, SkillsSettings, MARKER};
use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};
use zip::write::SimpleFileOptions;

struct AllTools;

impl ToolCatalog for AllTools {
    fn spec(&self, name: &str) -> Option<ToolSpec> {
        Some(ToolSpec::new(name, "", "test"))
    }
    fn suggest(&self, _name: &str) -> Vec<String> {
        Vec::new()
    }
}

struct Setup {
    dir: tempfile::TempDir,
    tools: Vec<Arc<dyn Tool>>,
    cx: ToolContext,
}

impl Setup {
    fn skills(&self) -> PathBuf {
        self.dir.path().join("skills")
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    async fn call(&self, tool: &str, args: Value) -> Result<ToolOutput, ToolError> {
        let t = self
            .tools
            .iter()
            .find(|t| t.spec().name == tool)
            .unwrap_or_else(|| panic!("no tool {tool}"));
        t.call(args, &self.cx).await
    }

    /// Nothing in the skills dir (not even a temporary directory) and nothing in the state dir.
    fn assert_nothing_written(&self) {
        assert_eq!(entries(&self.skills()), Vec::<String>::new());
        assert_eq!(entries(&self.state()), Vec::<String>::new());
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|r| {
            r.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn setup_with(server: &MockServer, max_http_bytes: Option<u64>) -> Setup {
    setup_granted(server, max_http_bytes, Grants::default())
}

fn setup_granted(server: &MockServer, max_http_bytes: Option<u64>, grants: Grants) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let mut config = HostConfig::new(&state);
    config.operator_hosts = vec![server.uri()];
    if let Some(max) = max_http_bytes {
        config.max_http_bytes = max;
    }
    let provider = NativeHostProvider::new(config);
    let scope = CallScope {
        tool: "install_skill".into(),
        session_id: "skills".into(),
        agent: "default".into(),
        workspace: dir.path().to_path_buf(),
        grants,
        cancel: Default::default(),
        approved: false,
    };
    let cx =
        ToolContext::new(&scope, "test", provider.scoped(&scope)).with_catalog(Arc::new(AllTools));
    let mut settings = SkillsSettings::new(Arc::new(DiskSkillDirs));
    settings.dirs = vec![SkillDir {
        label: "skills".into(),
        path: dir.path().join("skills"),
    }];
    settings.registry_url = server.uri();
    settings.registry_configured = true;
    Setup {
        tools: extension(settings).tools(),
        dir,
        cx,
    }
}

fn setup(server: &MockServer) -> Setup {
    setup_with(server, None)
}

const SKILL_MD: &str = "---\nname: pdf-forms\ndescription: Fill PDF forms\n---\nINSTALLED-BODY: use the form filler.\n";

/// A deflated zip of `entries` (name, content, unix mode).
fn zip_of(entries: &[(&str, &[u8], u32)]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, data, mode) in entries {
        let opts = SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(*mode);
        w.start_file(*name, opts).unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

fn good_zip() -> Vec<u8> {
    zip_of(&[
        ("SKILL.md", SKILL_MD.as_bytes(), 0o644),
        ("scripts/fill.sh", b"#!/bin/sh\necho never run\n", 0o755),
    ])
}

fn sha(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

async fn serve(server: &MockServer, slug: &str, body: Vec<u8>, published: Option<&str>) {
    let mut resp = ResponseTemplate::new(200)
        .insert_header("content-type", "application/zip")
        .set_body_bytes(body);
    if let Some(h) = published {
        resp = resp.insert_header("x-skill-sha256", h);
    }
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/download/{slug}")))
        .respond_with(resp)
        .mount(server)
        .await;
}

#[tokio::test]
async fn a_verified_install_is_in_the_catalogue_at_once_and_nothing_is_executable() {
    let server = MockServer::start().await;
    let zip = good_zip();
    serve(&server, "pdf-forms", zip.clone(), Some(&sha(&zip))).await;
    let s = setup(&server);
    let before = s.call("skill_list", json!({})).await.unwrap();
    assert_eq!(before.content, "No skills are available.");
    let out = s
        .call("install_skill", json!({"slug": "pdf-forms"}))
        .await
        .unwrap();
    assert!(out.content.contains("verified"), "{}", out.content);
    assert!(!out.content.contains("UNVERIFIED"), "{}", out.content);
    let list = s.call("skill_list", json!({})).await.unwrap();
    assert_eq!(list.content, "1. pdf-forms — Fill PDF forms\n");
    let shown = s
        .call("skill_show", json!({"name": "pdf-forms"}))
        .await
        .unwrap();
    assert!(
        shown.content.contains("INSTALLED-BODY"),
        "{}",
        shown.content
    );
    let installed = s.skills().join("pdf-forms");
    assert_eq!(entries(&s.skills()), ["pdf-forms"]);
    assert_eq!(entries(&installed), [MARKER, "SKILL.md", "scripts"]);
    let marker: Value =
        serde_json::from_slice(&std::fs::read(installed.join(MARKER)).unwrap()).unwrap();
    assert_eq!(marker["sha256"], sha(&zip));
    assert_eq!(marker["verified"], true);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(installed.join("scripts/fill.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0, "installed files are never executable");
}

#[tokio::test]
async fn an_install_without_any_sha256_says_it_is_unverified_and_a_reinstall_replaces_it() {
    let server = MockServer::start().await;
    serve(&server, "pdf-forms", good_zip(), None).await;
    let s = setup(&server);
    let out = s
        .call("install_skill", json!({"slug": "pdf-forms"}))
        .await
        .unwrap();
    assert!(out.content.contains("UNVERIFIED"), "{}", out.content);
    let again = s
        .call("install_skill", json!({"slug": "pdf-forms"}))
        .await
        .unwrap();
    assert!(again.content.contains("replacing"), "{}", again.content);
    assert_eq!(entries(&s.skills()), ["pdf-forms"]);
}

async fn refused(zip: Vec<u8>, want: &str) {
    let server = MockServer::start().await;
    serve(&server, "evil", zip, None).await;
    let s = setup(&server);
    let err = s
        .call("install_skill", json!({"slug": "evil"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Failed, "{err}");
    assert!(err.message.contains(want), "{want}: {err}");
    assert!(err.message.contains("nothing was installed"), "{err}");
    s.assert_nothing_written();
}

#[tokio::test]
async fn a_zip_slip_archive_is_refused_and_nothing_is_written() {
    refused(
        zip_of(&[
            ("SKILL.md", SKILL_MD.as_bytes(), 0o644),
            ("../../escaped.md", b"x", 0o644),
        ]),
        "`..`",
    )
    .await;
    refused(
        zip_of(&[
            ("SKILL.md", SKILL_MD.as_bytes(), 0o644),
            ("/tmp/absolute.md", b"x", 0o644),
        ]),
        "absolute",
    )
    .await;
    refused(
        zip_of(&[
            ("SKILL.md", SKILL_MD.as_bytes(), 0o644),
            ("..\\windows.md", b"x", 0o644),
        ]),
        "backslash",
    )
    .await;
}

#[tokio::test]
async fn a_symlink_entry_is_refused_and_nothing_is_written() {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    w.start_file("SKILL.md", SimpleFileOptions::default())
        .unwrap();
    w.write_all(SKILL_MD.as_bytes()).unwrap();
    w.add_symlink("notes", "/etc/passwd", SimpleFileOptions::default())
        .unwrap();
    refused(w.finish().unwrap().into_inner(), "symbolic link").await;
}

/// Rewrite every declared uncompressed size (local and central headers) to 1 GiB.
fn declare_one_gigabyte(mut zip: Vec<u8>) -> Vec<u8> {
    let gib = (1u32 << 30).to_le_bytes();
    let mut i = 0;
    while i + 4 <= zip.len() {
        let sig = zip.get(i..i + 4).map(|s| s.to_vec()).unwrap_or_default();
        let at = match sig.as_slice() {
            [0x50, 0x4b, 0x03, 0x04] => Some(i + 22),
            [0x50, 0x4b, 0x01, 0x02] => Some(i + 24),
            _ => None,
        };
        if let Some(at) = at {
            zip[at..at + 4].copy_from_slice(&gib);
        }
        i += 1;
    }
    zip
}

#[tokio::test]
async fn an_entry_declaring_one_gigabyte_is_refused_before_inflating() {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let stored = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    w.start_file("SKILL.md", stored).unwrap();
    w.write_all(SKILL_MD.as_bytes()).unwrap();
    let zip = declare_one_gigabyte(w.finish().unwrap().into_inner());
    refused(zip, "1073741824 bytes").await;
}

#[tokio::test]
async fn too_many_entries_are_refused() {
    let names: Vec<String> = (0..501).map(|i| format!("f{i}.txt")).collect();
    let mut entries: Vec<(&str, &[u8], u32)> = vec![("SKILL.md", SKILL_MD.as_bytes(), 0o644)];
    entries.extend(names.iter().map(|n| (n.as_str(), &b"x"[..], 0o644)));
    refused(zip_of(&entries), "entries").await;
}

#[tokio::test]
async fn a_wrong_sha256_is_refused_and_nothing_is_written() {
    let server = MockServer::start().await;
    let zip = good_zip();
    serve(&server, "pinned", zip.clone(), None).await;
    serve(&server, "published", zip.clone(), Some(&"0".repeat(64))).await;
    serve(&server, "both", zip.clone(), Some(&sha(&zip))).await;
    let s = setup(&server);
    let wrong = "a".repeat(64);
    let err = s
        .call("install_skill", json!({"slug": "pinned", "sha256": wrong}))
        .await
        .unwrap_err();
    assert!(err.message.contains("not the expected"), "{err}");
    let err = s
        .call("install_skill", json!({"slug": "published"}))
        .await
        .unwrap_err();
    assert!(err.message.contains("not the expected"), "{err}");
    let err = s
        .call("install_skill", json!({"slug": "both", "sha256": wrong}))
        .await
        .unwrap_err();
    assert!(
        err.message
            .contains("differs from the one the registry publishes"),
        "{err}"
    );
    s.assert_nothing_written();
    // The right pin installs.
    let ok = s
        .call(
            "install_skill",
            json!({"slug": "pinned", "sha256": sha(&zip).to_uppercase()}),
        )
        .await
        .unwrap();
    assert!(ok.content.contains("verified"), "{}", ok.content);
}

#[tokio::test]
async fn a_download_over_the_size_cap_is_refused_while_streaming() {
    let server = MockServer::start().await;
    serve(&server, "huge", vec![b'z'; 64 * 1024], None).await;
    let s = setup_with(&server, Some(16 * 1024));
    let err = s
        .call("install_skill", json!({"slug": "huge"}))
        .await
        .unwrap_err();
    assert!(
        err.message.contains("larger than the download limit"),
        "{err}"
    );
    s.assert_nothing_written();
}

#[tokio::test]
async fn a_hand_made_skill_of_the_same_name_is_never_replaced() {
    let server = MockServer::start().await;
    serve(&server, "mine", good_zip(), None).await;
    let s = setup(&server);
    std::fs::create_dir_all(s.skills().join("mine")).unwrap();
    std::fs::write(
        s.skills().join("mine/SKILL.md"),
        "---\nname: mine\n---\nMINE",
    )
    .unwrap();
    let err = s
        .call("install_skill", json!({"slug": "mine"}))
        .await
        .unwrap_err();
    assert!(
        err.message.contains("not installed from a registry"),
        "{err}"
    );
    assert_eq!(entries(&s.skills()), ["mine"]);
    assert_eq!(
        std::fs::read_to_string(s.skills().join("mine/SKILL.md")).unwrap(),
        "---\nname: mine\n---\nMINE"
    );
}

#[tokio::test]
async fn an_unknown_slug_is_not_found() {
    let server = MockServer::start().await;
    let s = setup(&server);
    let err = s
        .call("install_skill", json!({"slug": "nope"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound, "{err}");
    s.assert_nothing_written();
}

#[tokio::test]
async fn find_skills_shows_flags_and_digests_and_caches_the_answer() {
    let server = MockServer::start().await;
    let hits = json!([
        {"slug": "pdf-forms", "display_name": "PDF forms", "summary": "Fill forms", "version": "1.2.0", "sha256": "ab".repeat(32)},
        {"slug": "shady", "display_name": "Shady", "summary": "Hmm", "version": 3, "is_suspicious": true},
        {"slug": "../bad", "display_name": "Bad slug"}
    ]);
    Mock::given(method("GET"))
        .and(path("/api/v1/search"))
        .and(query_param("q", "pdf forms"))
        .and(query_param("limit", "5"))
        .respond_with(ResponseTemplate::new(200).set_body_json(hits))
        .expect(1)
        .mount(&server)
        .await;
    let s = setup(&server);
    let args = json!({"query": "pdf forms", "limit": 5});
    let out = s.call("find_skills", args.clone()).await.unwrap();
    assert!(
        out.content.contains(&format!(
            "1. PDF forms — slug: pdf-forms, version: 1.2.0, sha256: {}",
            "ab".repeat(32)
        )),
        "{}",
        out.content
    );
    assert!(
        out.content
            .contains("2. Shady [SUSPICIOUS] — slug: shady, version: 3, sha256: not published"),
        "{}",
        out.content
    );
    assert!(!out.content.contains("Bad slug"), "{}", out.content);
    let again = s.call("find_skills", args).await.unwrap();
    assert_eq!(again.content, out.content);
    // `expect(1)` is checked when the server drops: the second answer came from the cache.
}

#[tokio::test]
async fn more_than_five_redirects_are_refused() {
    let server = MockServer::start().await;
    let hop = |n: usize| format!("{}/hop/{n}", server.uri());
    Mock::given(method("GET"))
        .and(path("/api/v1/download/far"))
        .respond_with(ResponseTemplate::new(302).insert_header("location", hop(1)))
        .mount(&server)
        .await;
    for n in 1..6 {
        Mock::given(method("GET"))
            .and(path(format!("/hop/{n}")))
            .respond_with(ResponseTemplate::new(302).insert_header("location", hop(n + 1)))
            .mount(&server)
            .await;
    }
    Mock::given(method("GET"))
        .and(path("/hop/6"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(good_zip()))
        .mount(&server)
        .await;
    // Redirects leave the operator's URL, so they are checked like the model's: loopback
    // must be granted for the hops to be followed at all.
    let grants = Grants {
        network: Some(NetworkGrant {
            endpoints: Vec::new(),
            allow_private: true,
        }),
        ..Grants::default()
    };
    let s = setup_granted(&server, None, grants);
    let err = s
        .call("install_skill", json!({"slug": "far"}))
        .await
        .unwrap_err();
    assert!(err.message.contains("redirected 6 times"), "{err}");
    s.assert_nothing_written();
}
