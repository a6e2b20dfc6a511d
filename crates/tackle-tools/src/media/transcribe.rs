//! `transcribe {file_path}`: speech to text through an OpenAI-compatible
//! `POST {api_base}/audio/transcriptions` (multipart: the audio as `file`, and `model`).
//!
//! The audio leaves the machine, so the call asks for approval unless auto-approved. The file is
//! read through the host (fs grants); the request goes through the host to the configured
//! `api_base`, which is an operator-written destination when `transcribe.api_base` is set
//! (docs/architecture.md, "Grants"). The API key travels only in the `Authorization` header: it is scrubbed from
//! anything the server sends back, and never part of a result, an error or the audit log.

use super::file;
use super::multipart::{self, Field};
use crate::web::net::{self, Secrets};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tackle_protocol::config::TranscribeConfig;
use tackle_protocol::{
    ApprovalMode, Capability, HttpRequest, Risk, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

/// The largest audio file sent: the OpenAI API's own limit.
pub(crate) const MAX_AUDIO_BYTES: u64 = 25 * 1024 * 1024;
/// A transcript of 25 MiB of audio is far below this; a larger answer is not a transcript.
const MAX_REPLY_BYTES: u64 = 4 * 1024 * 1024;

/// Audio types by file extension (lower case), as the API accepts them.
const AUDIO_TYPES: &[(&str, &str)] = &[
    ("mp3", "audio/mpeg"),
    ("mpeg", "audio/mpeg"),
    ("mpga", "audio/mpeg"),
    ("mp4", "audio/mp4"),
    ("m4a", "audio/mp4"),
    ("wav", "audio/wav"),
    ("webm", "audio/webm"),
    ("ogg", "audio/ogg"),
];

pub(crate) struct Transcribe {
    config: TranscribeConfig,
}

impl Transcribe {
    pub(crate) fn new(config: TranscribeConfig) -> Self {
        Self { config }
    }

    fn endpoint(&self) -> String {
        let base = self
            .config
            .api_base
            .as_deref()
            .unwrap_or(TranscribeConfig::DEFAULT_API_BASE);
        format!("{}/audio/transcriptions", base.trim_end_matches('/'))
    }

    fn model(&self) -> &str {
        self.config
            .model
            .as_deref()
            .filter(|m| !m.trim().is_empty())
            .unwrap_or(TranscribeConfig::DEFAULT_MODEL)
    }

    /// One request, upload included.
    fn request_timeout(&self) -> Duration {
        Duration::from_secs(
            self.config
                .timeout_secs
                .unwrap_or(TranscribeConfig::DEFAULT_TIMEOUT_SECS)
                .max(1),
        )
    }

    fn api_key(&self) -> Option<&str> {
        self.config.api_key.as_deref().filter(|k| !k.is_empty())
    }
}

/// Arguments of `transcribe`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The audio file, relative to the workspace (no `..`): mp3, mpeg, mpga, mp4, m4a, wav,
    /// webm or ogg, at most 25 MiB.
    file_path: String,
}

/// The audio's path inside the workspace and its media type, or why it is refused.
fn check_path(raw: &str) -> Result<(PathBuf, &'static str), ToolError> {
    let path = file::relative_path(raw, "file_path")?;
    let ext = file::extension_of(&path);
    let mime = AUDIO_TYPES
        .iter()
        .find(|(e, _)| *e == ext)
        .map(|(_, m)| *m)
        .ok_or_else(|| {
            let known: Vec<&str> = AUDIO_TYPES.iter().map(|(e, _)| *e).collect();
            ToolError::invalid_arguments(format!(
                "`{}` is not a supported audio file; use one of: {}",
                tackle_protocol::text::preview(raw, 200),
                known.join(", ")
            ))
        })?;
    Ok((path, mime))
}

/// The whole file through the host, refused by its size before it is read.
async fn read_audio(cx: &ToolContext, path: &Path, shown: &str) -> Result<Vec<u8>, ToolError> {
    let cap = file::Cap {
        bytes: MAX_AUDIO_BYTES,
        label: "25 MiB",
        verb: "transcribe sends",
    };
    let data = file::read_capped(cx, path, shown, &cap).await?;
    if data.is_empty() {
        return Err(ToolError::failed(format!(
            "{shown} is empty: no audio to send"
        )));
    }
    Ok(data)
}

/// The server's own words for an error (`{"error": {"message": …}}`), short.
fn error_message(body: &[u8]) -> String {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let message = parsed
        .as_ref()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.get("error"))
                .or_else(|| v.get("message"))
                .or_else(|| v.get("detail"))
        })
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_string());
    tackle_protocol::text::preview(&message, 300)
}

#[async_trait]
impl Tool for Transcribe {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "transcribe",
            "Transcribe speech in an audio file in the workspace to text (mp3, mp4, m4a, wav, \
             webm, ogg; at most 25 MiB). The audio is sent to the configured speech-to-text \
             server.",
            "media",
        )
        .parameters(crate::args::schema::<Args>())
        .risk(Risk::Medium)
        .approval(ApprovalMode::UnlessAutoApproved)
    }

    fn planned_capabilities(&self, args: &Value, cx: &ToolContext) -> Vec<Capability> {
        // The destination is the operator's `api_base` (or the default public one, which the
        // host checks like any URL), not the model's: only the file read is planned.
        let raw = args.get("file_path").and_then(Value::as_str).unwrap_or(".");
        vec![Capability::FileRead {
            path: cx.host().workspace().join(raw),
        }]
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.request_timeout() + Duration::from_secs(10))
    }

    fn provenance(&self, args: &Value) -> tackle_protocol::Provenance {
        // A document or recording someone else made: its words are theirs.
        let path = args
            .get("file_path")
            .and_then(Value::as_str)
            .unwrap_or("a file");
        tackle_protocol::Provenance::Untrusted(format!(
            "the recording {}",
            tackle_protocol::text::preview(path, 200)
        ))
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        let (rel, mime) = check_path(&args.file_path)?;
        let configured = self.config.api_base.is_some();
        let key = self.api_key();
        if key.is_none() && !configured {
            return Err(ToolError::failed(
                "transcribe needs a speech-to-text server: set `transcribe.api_key` (and \
                 `transcribe.api_base` for a server other than OpenAI's) in the config",
            ));
        }
        let shown = rel.display().to_string();
        let data = read_audio(cx, &cx.host().workspace().join(&rel), &shown).await?;
        let bytes = data.len();
        let file_name = rel
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "audio".to_string());
        let form = multipart::encode(vec![
            Field::File {
                name: "file",
                file_name,
                mime,
                data,
            },
            Field::Text {
                name: "model",
                value: self.model().to_string(),
            },
        ])
        .await
        .map_err(|e| ToolError::failed(e.to_string()))?;

        let mut headers = vec![
            ("Content-Type".to_string(), form.content_type),
            ("Accept".to_string(), "application/json".to_string()),
        ];
        if let Some(key) = key {
            headers.push(("Authorization".to_string(), format!("Bearer {key}")));
        }
        let secrets = Secrets::from_headers(&headers);
        let scrub = |e: ToolError| secrets.scrub_error(e);
        let resp = net::send(
            cx,
            HttpRequest {
                method: "POST".into(),
                url: self.endpoint(),
                headers,
                body: Some(form.body),
                max_bytes: MAX_REPLY_BYTES,
                timeout: self.request_timeout(),
                // The key is never replayed to a destination the operator did not write.
                follow_redirects: false,
                operator_configured: configured,
            },
        )
        .await
        .map_err(scrub)?;
        if resp.status >= 400 || !(200..300).contains(&resp.status) {
            return Err(scrub(ToolError::failed(format!(
                "the transcription server answered HTTP {}: {}",
                resp.status,
                error_message(&resp.body)
            ))));
        }
        let reply: Value = serde_json::from_slice(&resp.body).map_err(|e| {
            scrub(ToolError::failed(format!(
                "the transcription server's answer is not JSON ({e}): {}",
                tackle_protocol::text::preview(&String::from_utf8_lossy(&resp.body), 200)
            )))
        })?;
        let Some(text) = reply.get("text").and_then(Value::as_str) else {
            return Err(ToolError::failed(
                "the transcription server's answer has no `text`",
            ));
        };
        let text = secrets.scrub(text.trim());
        let structured = json!({
            "file_path": shown,
            "model": self.model(),
            "bytes": bytes,
            "text": text,
        });
        let content = if text.is_empty() {
            format!("No speech was recognised in {shown}.")
        } else {
            format!("Transcription: {text}")
        };
        Ok(ToolOutput::text(content).with_structured(structured))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::{http_json, MockHost};
    use std::sync::Arc;
    use tackle_protocol::ErrorKind;

    const KEY: &str = "sk-test-0123456789abcdef";

    fn tool(api_base: Option<&str>) -> Transcribe {
        Transcribe::new(TranscribeConfig {
            api_base: api_base.map(str::to_string),
            api_key: Some(KEY.into()),
            model: Some("whisper-large-v3-turbo".into()),
            timeout_secs: None,
        })
    }

    #[test]
    fn paths_must_be_relative_audio_files() {
        for bad in ["", "/etc/a.mp3", "../a.mp3", "a/../../b.wav", "~/a.ogg"] {
            let err = check_path(bad).unwrap_err();
            assert_eq!(err.kind, ErrorKind::InvalidArguments, "{bad}");
        }
        let err = check_path("notes.txt").unwrap_err();
        assert!(err.message.contains("mp3, mpeg"), "{}", err.message);
        assert_eq!(check_path("a/b.MP3").unwrap().1, "audio/mpeg");
        assert_eq!(check_path("./v.m4a").unwrap().1, "audio/mp4");
        assert_eq!(check_path("x.webm").unwrap().1, "audio/webm");
    }

    #[tokio::test]
    async fn the_audio_goes_as_multipart_with_the_key_and_the_text_comes_back() {
        let host = Arc::new(MockHost::new().with_file("talk.wav", b"RIFF....WAVE".to_vec()));
        host.reply_http(Ok(http_json(200, r#"{"text": " Hello there. "}"#)));
        let out = tool(Some("http://127.0.0.1:9/v1/"))
            .call(json!({"file_path": "talk.wav"}), &host.context())
            .await
            .unwrap();
        assert_eq!(out.content, "Transcription: Hello there.");
        let sent = &host.http_requests()[0];
        assert_eq!(sent.method, "POST");
        assert_eq!(sent.url, "http://127.0.0.1:9/v1/audio/transcriptions");
        assert!(sent.operator_configured && !sent.follow_redirects);
        assert_eq!(sent.timeout, Duration::from_secs(60));
        let auth = sent.headers.iter().find(|(k, _)| k == "Authorization");
        assert_eq!(
            auth.map(|(_, v)| v.as_str()),
            Some(&*format!("Bearer {KEY}"))
        );
        let body = String::from_utf8_lossy(sent.body.as_deref().unwrap_or_default());
        assert!(
            body.contains("filename=\"talk.wav\"\r\nContent-Type: audio/wav"),
            "{body}"
        );
        assert!(body.contains("whisper-large-v3-turbo"), "{body}");
        assert!(!out.content.contains(KEY));
    }

    #[tokio::test]
    async fn no_speech_is_a_success_that_says_so() {
        let host = Arc::new(MockHost::new().with_file("quiet.mp3", b"ID3".to_vec()));
        host.reply_http(Ok(http_json(200, r#"{"text": ""}"#)));
        let out = tool(None)
            .call(json!({"file_path": "quiet.mp3"}), &host.context())
            .await
            .unwrap();
        assert_eq!(out.content, "No speech was recognised in quiet.mp3.");
        let sent = &host.http_requests()[0];
        assert_eq!(sent.url, "https://api.openai.com/v1/audio/transcriptions");
        assert!(!sent.operator_configured);
    }

    #[tokio::test]
    async fn an_http_error_fails_without_echoing_the_key() {
        let host = Arc::new(MockHost::new().with_file("a.ogg", b"OggS".to_vec()));
        let echo = format!(r#"{{"error": {{"message": "bad key Bearer {KEY}"}}}}"#);
        host.reply_http(Ok(http_json(401, &echo)));
        let err = tool(Some("http://127.0.0.1:9/v1"))
            .call(json!({"file_path": "a.ogg"}), &host.context())
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Failed);
        assert!(err.message.contains("HTTP 401"), "{}", err.message);
        assert!(!err.message.contains(KEY), "{}", err.message);
    }

    #[tokio::test]
    async fn without_a_key_or_a_server_nothing_is_read_or_sent() {
        let host = Arc::new(MockHost::new().with_file("a.ogg", b"OggS".to_vec()));
        let err = Transcribe::new(TranscribeConfig::default())
            .call(json!({"file_path": "a.ogg"}), &host.context())
            .await
            .unwrap_err();
        assert!(
            err.message.contains("transcribe.api_key"),
            "{}",
            err.message
        );
        assert!(host.http_requests().is_empty());
    }

    #[tokio::test]
    async fn an_empty_file_is_refused_before_sending() {
        let host = Arc::new(MockHost::new().with_file("a.wav", Vec::new()));
        let err = tool(Some("http://127.0.0.1:9/v1"))
            .call(json!({"file_path": "a.wav"}), &host.context())
            .await
            .unwrap_err();
        assert!(err.message.contains("empty"), "{}", err.message);
        assert!(host.http_requests().is_empty());
    }

    #[test]
    fn the_schema_is_derived_from_the_arguments() {
        let spec = tool(None).spec();
        assert_eq!(spec.parameters["required"], json!(["file_path"]));
        assert_eq!(spec.parameters["properties"]["file_path"]["type"], "string");
    }
}
