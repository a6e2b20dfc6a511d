//! `transcribe` end to end: the real host (fs grants, operator-written destination, time limit)
//! in front of a local server that checks the request as the OpenAI API documents it.

use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tackle_host::{HostConfig, NativeHostProvider};
use tackle_protocol::config::TranscribeConfig;
use tackle_protocol::{CallScope, ErrorKind, Grants, HostProvider, Tool, ToolContext};
use tackle_tools::media::{extension, MediaSettings};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const KEY: &str = "sk-fake-transcribe-key-0123456789";
const AUDIO: &[u8] = b"ID3\x04\0\0\0\0\0\0fake mpeg frames \xff\xfb\x90\x64";

struct Setup {
    provider: NativeHostProvider,
    workspace: tempfile::TempDir,
    tool: Arc<dyn Tool>,
}

/// A workspace holding `talk.mp3`, and `transcribe` configured to send to `server`.
fn setup(server: &MockServer, timeout_secs: Option<u64>) -> Setup {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("talk.mp3"), AUDIO).unwrap();
    let api_base = format!("{}/v1", server.uri());
    let mut cfg = HostConfig::new(workspace.path().join(".state"));
    cfg.operator_hosts = vec![api_base.clone()];
    let settings = MediaSettings {
        transcribe: TranscribeConfig {
            api_base: Some(api_base),
            api_key: Some(KEY.into()),
            model: Some("whisper-large-v3-turbo".into()),
            timeout_secs,
        },
        ..MediaSettings::default()
    };
    let tool = extension(settings)
        .tools()
        .into_iter()
        .find(|t| t.spec().name == "transcribe")
        .unwrap();
    Setup {
        provider: NativeHostProvider::new(cfg),
        workspace,
        tool,
    }
}

impl Setup {
    /// A call under the default grants: no private addresses for the model's own URLs, so the
    /// local server is reachable only as the operator's destination.
    fn context(&self) -> ToolContext {
        let scope = CallScope {
            tool: "transcribe".into(),
            session_id: "media-e2e".into(),
            agent: "default".into(),
            workspace: self.workspace.path().canonicalize().unwrap(),
            grants: Grants::default(),
            cancel: Default::default(),
            approved: true,
        };
        ToolContext::new(&scope, "test", self.provider.scoped(&scope))
    }
}

/// The two parts the API documents: `file` (name and type by extension) and `model`.
fn multipart_as_documented(req: &Request) -> bool {
    let Some(ct) = req
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let Some(boundary) = ct.strip_prefix("multipart/form-data; boundary=") else {
        return false;
    };
    let body = &req.body;
    let file_head = "Content-Disposition: form-data; name=\"file\"; filename=\"talk.mp3\"\r\n\
                     Content-Type: audio/mpeg\r\n\r\n";
    let mut file_part = format!("--{boundary}\r\n{file_head}").into_bytes();
    file_part.extend_from_slice(AUDIO);
    file_part.extend_from_slice(b"\r\n");
    let model_part = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-large-v3-turbo\r\n"
    );
    let contains = |needle: &[u8]| body.windows(needle.len()).any(|w| w == needle);
    contains(&file_part)
        && contains(model_part.as_bytes())
        && body.ends_with(format!("--{boundary}--\r\n").as_bytes())
}

#[tokio::test]
async fn the_audio_is_posted_as_documented_and_the_text_comes_back() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/audio/transcriptions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .and(multipart_as_documented)
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            r#"{"text": "Hello from the fake server."}"#,
            "application/json",
        ))
        .expect(1)
        .mount(&server)
        .await;
    let s = setup(&server, None);
    let out = s
        .tool
        .call(json!({"file_path": "talk.mp3"}), &s.context())
        .await
        .unwrap();
    assert_eq!(out.content, "Transcription: Hello from the fake server.");
    let shown = format!("{} {:?}", out.content, out.structured);
    assert!(!shown.contains(KEY), "{shown}");
}

#[tokio::test]
async fn an_error_reply_fails_with_the_servers_words_but_never_the_key() {
    let server = MockServer::start().await;
    let echo = format!(
        r#"{{"error": {{"message": "quota exceeded for Bearer {KEY}", "type": "insufficient_quota"}}}}"#
    );
    Mock::given(method("POST"))
        .and(path("/v1/audio/transcriptions"))
        .respond_with(ResponseTemplate::new(429).set_body_raw(echo, "application/json"))
        .mount(&server)
        .await;
    let s = setup(&server, None);
    let err = s
        .tool
        .call(json!({"file_path": "talk.mp3"}), &s.context())
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Failed);
    assert!(err.message.contains("HTTP 429"), "{}", err.message);
    assert!(err.message.contains("quota exceeded"), "{}", err.message);
    assert!(!err.message.contains(KEY), "{}", err.message);
}

#[tokio::test]
async fn a_server_that_does_not_answer_in_time_is_a_timeout() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_delay(Duration::from_secs(5))
                .set_body_raw(r#"{"text": "late"}"#, "application/json"),
        )
        .mount(&server)
        .await;
    let s = setup(&server, Some(1));
    let started = std::time::Instant::now();
    let err = s
        .tool
        .call(json!({"file_path": "talk.mp3"}), &s.context())
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Timeout, "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(4));
    assert!(!err.message.contains(KEY));
}

#[tokio::test]
async fn files_outside_the_workspace_and_oversized_audio_are_refused_unsent() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .expect(0)
        .mount(&server)
        .await;
    let s = setup(&server, None);
    let big = std::fs::File::create(s.workspace.path().join("long.wav")).unwrap();
    big.set_len(25 * 1024 * 1024 + 1).unwrap();
    let err = s
        .tool
        .call(json!({"file_path": "long.wav"}), &s.context())
        .await
        .unwrap_err();
    assert!(err.message.contains("25 MiB"), "{}", err.message);
    let err = s
        .tool
        .call(json!({"file_path": "../talk.mp3"}), &s.context())
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArguments);
}
