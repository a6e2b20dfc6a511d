//! A `multipart/form-data` body (RFC 7578) as bytes, for a request the host then sends.
//!
//! The encoding is reqwest's (boundary choice, quoting and escaping of names and file names),
//! used as a pure encoder: nothing here opens a connection. The host's request type carries a
//! byte body, so the finished body and its `Content-Type` go through `cx.host().http(..)`
//! like every other request.

use futures::StreamExt;
use reqwest::multipart::{Form, Part};

/// One part of a form.
pub(crate) enum Field {
    Text {
        name: &'static str,
        value: String,
    },
    File {
        name: &'static str,
        file_name: String,
        mime: &'static str,
        data: Vec<u8>,
    },
}

/// An encoded body and the `Content-Type` (with its boundary) to send it with.
pub(crate) struct Encoded {
    pub content_type: String,
    pub body: Vec<u8>,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum MultipartError {
    #[error("`{0}` is not a valid media type")]
    Mime(&'static str),
    #[error("could not encode the form: {0}")]
    Encode(String),
}

pub(crate) async fn encode(fields: Vec<Field>) -> Result<Encoded, MultipartError> {
    let mut form = Form::new();
    for field in fields {
        form = match field {
            Field::Text { name, value } => form.text(name, value),
            Field::File {
                name,
                file_name,
                mime,
                data,
            } => {
                let part = Part::bytes(data)
                    .file_name(file_name)
                    .mime_str(mime)
                    .map_err(|_| MultipartError::Mime(mime))?;
                form.part(name, part)
            }
        };
    }
    let content_type = format!("multipart/form-data; boundary={}", form.boundary());
    // Every part is in memory, so the stream yields its chunks without waiting on anything.
    let mut stream = form.into_stream();
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| MultipartError::Encode(e.to_string()))?;
        body.extend_from_slice(&chunk);
    }
    Ok(Encoded { content_type, body })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn parts_carry_their_names_file_name_and_type() {
        let enc = encode(vec![
            Field::File {
                name: "file",
                file_name: "a \"b\".mp3".into(),
                mime: "audio/mpeg",
                data: b"ID3\0\x01".to_vec(),
            },
            Field::Text {
                name: "model",
                value: "whisper-1".into(),
            },
        ])
        .await
        .unwrap();
        let boundary = enc
            .content_type
            .strip_prefix("multipart/form-data; boundary=")
            .unwrap();
        let text = String::from_utf8_lossy(&enc.body);
        assert!(text.starts_with(&format!("--{boundary}\r\n")), "{text}");
        assert!(text.ends_with(&format!("--{boundary}--\r\n")), "{text}");
        assert!(text.contains("Content-Disposition: form-data; name=\"file\"; filename=\"a \\\"b\\\".mp3\"\r\nContent-Type: audio/mpeg\r\n\r\nID3"), "{text}");
        assert!(
            text.contains("name=\"model\"\r\n\r\nwhisper-1\r\n"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_bad_media_type_is_an_error() {
        let err = encode(vec![Field::File {
            name: "file",
            file_name: "x".into(),
            mime: "not a type",
            data: Vec::new(),
        }])
        .await;
        assert!(matches!(err, Err(MultipartError::Mime(_))));
    }
}
