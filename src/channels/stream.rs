//! A streamed answer in a chat: sent with its first words, edited as it grows (at most once
//! per [`EDIT_EVERY`], since the platforms rate-limit edits), and finally made the whole
//! answer, split into more messages where it is longer than one may be.

use super::{Channel, Sent};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a streamed answer's message is edited at most.
pub const EDIT_EVERY: Duration = Duration::from_secs(1);

pub struct Streamed {
    channel: Arc<dyn Channel>,
    chat: String,
    /// The message being grown and the text it shows now.
    shown: Option<(Sent, String)>,
    /// Everything streamed since the message was started.
    text: String,
    last_edit: Instant,
}

impl Streamed {
    pub fn new(channel: Arc<dyn Channel>, chat: &str) -> Self {
        Self {
            channel,
            chat: chat.to_string(),
            shown: None,
            text: String::new(),
            last_edit: Instant::now(),
        }
    }

    /// More of the answer: the message is started with the first words.
    pub async fn push(&mut self, piece: &str) {
        self.text.push_str(piece);
        if self.shown.is_none() && !self.text.trim().is_empty() {
            let first = cut(&self.text, self.channel.max_len());
            // A send that failed is tried again with the next words, or the final answer.
            if let Ok(sent) = self.channel.send(&self.chat, &first).await {
                self.shown = Some((sent, first));
                self.last_edit = Instant::now();
            }
        }
    }

    /// Edits the message to what has streamed, if it changed and the last edit is old enough.
    pub async fn tick(&mut self) {
        if self.last_edit.elapsed() >= EDIT_EVERY {
            self.show().await;
        }
    }

    async fn show(&mut self) {
        let now = cut(&self.text, self.channel.max_len());
        if let Some((sent, shows)) = &mut self.shown {
            if *shows != now && self.channel.edit(sent, &now).await.is_ok() {
                *shows = now;
            }
            self.last_edit = Instant::now();
        }
    }

    /// A tool call starts: what the model said so far stays as it is, and what it says next
    /// is a new message, below any approval asked meanwhile.
    pub async fn close(&mut self) {
        self.show().await;
        self.shown = None;
        self.text.clear();
    }

    /// The whole answer: the streamed message becomes its first part (or the first part is
    /// sent), the rest follow.
    pub async fn finish(self, reply: &str) -> Result<(), String> {
        let mut parts = split(reply, self.channel.max_len()).into_iter();
        let first = parts.next().unwrap_or_default();
        match &self.shown {
            Some((_, shows)) if *shows == first => {}
            Some((sent, _)) => self
                .channel
                .edit(sent, &first)
                .await
                .map_err(|e| format!("the answer could not be shown: {e}"))?,
            None => {
                self.channel
                    .send(&self.chat, &first)
                    .await
                    .map_err(|e| format!("the answer could not be sent: {e}"))?;
            }
        }
        for part in parts {
            self.channel
                .send(&self.chat, &part)
                .await
                .map_err(|e| format!("the rest of the answer could not be sent: {e}"))?;
        }
        Ok(())
    }
}

/// At most `max` characters of `text`, marked when cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `text` in pieces of at most `max` characters, broken at a line end where one is near.
pub fn split(text: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut parts = Vec::new();
    let mut rest: Vec<char> = text.chars().collect();
    while rest.len() > max {
        let at = rest[..max]
            .iter()
            .rposition(|c| *c == '\n')
            .filter(|i| *i >= max / 2)
            .map_or(max, |i| i + 1);
        parts.push(rest[..at].iter().collect());
        rest.drain(..at);
    }
    if !rest.is_empty() || parts.is_empty() {
        parts.push(rest.into_iter().collect());
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_answers_are_split_within_the_limit_and_lose_nothing() {
        let text = format!("{}\n{}", "a".repeat(30), "é".repeat(50));
        let parts = split(&text, 40);
        assert!(parts.iter().all(|p| p.chars().count() <= 40), "{parts:?}");
        assert_eq!(parts.concat(), text);
        assert_eq!(parts[0], format!("{}\n", "a".repeat(30)));
        assert_eq!(split("", 10), vec![String::new()]);
        assert_eq!(cut("ééé", 2), "é…");
    }
}
