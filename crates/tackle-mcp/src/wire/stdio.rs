//! The stdio transport of `mcp serve`. The SDK's own drops a line that is not JSON without a
//! word, so a person typing into a server started by hand sees nothing happen. JSON-RPC 2.0
//! answers such a line with a parse error whose id is null; this transport does that, and
//! answers JSON that is no JSON-RPC message with an invalid-request error.
//!
//! Each line is parsed once, straight into the SDK's message type, so valid traffic costs what
//! it costs in the SDK's transport. Outgoing messages are written as the SDK writes them (one
//! JSON object and `\n`, flushed), through one lock that the replies to junk share, so a
//! reply never lands inside another message.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest line read (as in the SDK's transport): a peer that never sends a newline must
/// not grow the buffer without bound.
const MAX_LINE: usize = 16 * 1024 * 1024;
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// JSON-RPC 2.0's replies to input that carries no readable id.
const PARSE_ERROR: &[u8] =
    b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error: the line is not JSON\"}}\n";
const INVALID_REQUEST: &[u8] =
    b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"Invalid request: the line is not a JSON-RPC message\"}}\n";
const TOO_LONG: &[u8] =
    b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"Invalid request: the line is longer than 16 MiB\"}}\n";

type Writer<W> = Arc<Mutex<Option<W>>>;
type Reply = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What one line of input is: a message, nothing to answer (`None`: blank, or a notification
/// the SDK has no type for), or junk with the reply it gets.
type Line = Result<Option<RxJsonRpcMessage<RoleServer>>, &'static [u8]>;

/// How a bounded line read ended.
enum Read {
    Line,
    TooLong,
    Eof,
}

pub(crate) struct CheckedStdio<R, W> {
    read: BufReader<R>,
    /// The line being read; a cancelled `receive` leaves its partial bytes here.
    line: Vec<u8>,
    /// Dropping the rest of a line that was too long.
    discarding: bool,
    write: Writer<W>,
    /// A reply to junk not yet written: kept here so a cancelled `receive` does not lose it,
    /// and so input is not read faster than the replies to it can be written.
    replying: Option<Reply>,
}

impl<R, W> CheckedStdio<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub(crate) fn new(read: R, write: W) -> Self {
        Self {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            write: Arc::new(Mutex::new(Some(write))),
            replying: None,
        }
    }

    /// Read one `\n`-terminated line into `self.line`, never past [`MAX_LINE`]. Cancel-safe:
    /// bytes are moved from the reader's buffer to `self.line` with no await in between.
    async fn read_line(&mut self) -> io::Result<Read> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                return Ok(Read::Eof);
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let ends = newline.is_some();
            let outcome = if self.discarding {
                self.discarding = !ends;
                None
            } else if self.line.len().saturating_add(take) > MAX_LINE {
                self.line.clear();
                self.discarding = !ends;
                Some(Read::TooLong)
            } else {
                self.line.extend_from_slice(&available[..take]);
                ends.then_some(Read::Line)
            };
            self.read.consume(take);
            if let Some(outcome) = outcome {
                return Ok(outcome);
            }
        }
    }
}

/// Parse one line (without its `\n`) once, into the SDK's message type.
fn classify(line: &[u8]) -> Line {
    let line = line.strip_prefix(UTF8_BOM).unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(message) => Ok(Some(message)),
        Err(e) if e.is_data() => match serde_json::from_slice::<serde_json::Value>(line) {
            // A notification is never answered, even a malformed one (as in the SDK).
            Ok(v) if v.get("method").is_some() && v.get("id").is_none() => Ok(None),
            _ => Err(INVALID_REQUEST),
        },
        Err(_) => Err(PARSE_ERROR),
    }
}

/// Write whole lines under the lock, so concurrent writers never interleave.
async fn write_line<W: AsyncWrite + Unpin>(
    write: &Mutex<Option<W>>,
    bytes: &[u8],
) -> io::Result<()> {
    let mut guard = write.lock().await;
    let Some(w) = guard.as_mut() else {
        return Err(io::Error::new(
            io::ErrorKind::NotConnected,
            "the transport is closed",
        ));
    };
    w.write_all(bytes).await?;
    w.flush().await
}

impl<R, W> Transport<RoleServer> for CheckedStdio<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let write = self.write.clone();
        // The SDK's framing: the message's JSON, then `\n`.
        let bytes = serde_json::to_vec(&item).map(|mut b| {
            b.push(b'\n');
            b
        });
        async move { write_line(&write, &bytes?).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if let Some(reply) = self.replying.as_mut() {
                reply.await;
                self.replying = None;
            }
            let line = match self.read_line().await {
                Ok(Read::Line) => {
                    let line = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
                    let line = classify(line);
                    self.line.clear();
                    line
                }
                Ok(Read::TooLong) => Err(TOO_LONG),
                Ok(Read::Eof) => return None,
                Err(e) => {
                    tracing::error!("reading stdin failed: {e}");
                    return None;
                }
            };
            match line {
                Ok(Some(message)) => return Some(message),
                Ok(None) => {}
                Err(reply) => {
                    let write = self.write.clone();
                    self.replying = Some(Box::pin(async move {
                        // A closed stdout ends the session through `receive` soon enough.
                        let _ = write_line(&write, reply).await;
                    }));
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        drop(self.write.lock().await.take());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    async fn answer_to(input: &[u8]) -> (Option<serde_json::Value>, Vec<String>) {
        let (mut client, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, client_out) = tokio::io::duplex(1 << 16);
        let mut t = CheckedStdio::new(server_in, server_out);
        client.write_all(input).await.unwrap();
        drop(client);
        let got = t.receive().await.map(|m| serde_json::to_value(&m).unwrap());
        t.close().await.unwrap();
        drop(t);
        let mut lines = Vec::new();
        let mut out = tokio::io::BufReader::new(client_out).lines();
        while let Some(l) = out.next_line().await.unwrap() {
            lines.push(l);
        }
        (got, lines)
    }

    #[tokio::test]
    async fn a_line_that_is_not_json_is_answered_with_a_parse_error() {
        let (got, replies) =
            answer_to(b"hello\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n").await;
        assert_eq!(got.unwrap()["method"], "ping");
        assert_eq!(replies.len(), 1, "{replies:?}");
        let reply: serde_json::Value = serde_json::from_str(&replies[0]).unwrap();
        assert_eq!(reply["id"], serde_json::Value::Null);
        assert!(reply.as_object().unwrap().contains_key("id"));
        assert_eq!(reply["error"]["code"], -32700);
    }

    #[tokio::test]
    async fn json_that_is_no_message_is_an_invalid_request_and_notifications_are_not_answered() {
        let (got, replies) = answer_to(
            b"[1,2]\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\",\"params\":7}\n\n",
        )
        .await;
        assert!(got.is_none());
        assert_eq!(replies.len(), 1, "{replies:?}");
        let reply: serde_json::Value = serde_json::from_str(&replies[0]).unwrap();
        assert_eq!(reply["error"]["code"], -32600);
    }

    #[tokio::test]
    async fn outgoing_messages_are_framed_as_the_sdk_frames_them() {
        let (_client, server_in) = tokio::io::duplex(64);
        let (server_out, client_out) = tokio::io::duplex(1 << 16);
        let mut t = CheckedStdio::new(server_in, server_out);
        let msg: TxJsonRpcMessage<RoleServer> = serde_json::from_str(
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
        )
        .unwrap();
        let expected = {
            let mut v = serde_json::to_vec(&msg).unwrap();
            v.push(b'\n');
            v
        };
        t.send(msg).await.unwrap();
        t.close().await.unwrap();
        drop(t);
        let mut out = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut tokio::io::BufReader::new(client_out), &mut out)
            .await
            .unwrap();
        assert_eq!(out, expected);
    }
}
