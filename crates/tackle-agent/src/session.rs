//! A conversation: its messages in memory, mirrored to the append-only store when there is one.

use crate::session_approvals::SessionApprovals;
use std::sync::Arc;
use tackle_protocol::message::{Message, Role};
use tackle_store::{Entry, EntryKind, SessionId, Store, StoreError};

/// A conversation's messages, mirrored to the store (when there is one) so it can be resumed;
/// with its per-session approvals, origin and taint.
pub struct Session {
    id: SessionId,
    store: Option<Store>,
    /// The summary the context starts from (the latest Summary entry), if any.
    summary: Option<String>,
    messages: Vec<Message>,
    /// "Allow for the session" answers given in this session (not stored: a resumed session
    /// asks again).
    approvals: Arc<SessionApprovals>,
    /// The chat channel and chat this session's turns come from (`channels:`), which its
    /// calls carry ([`Session::set_origin`]); `None`: a terminal, the API, a schedule.
    origin: Option<(String, String)>,
    /// The taint count last written to the store: the taint is kept as it grows, with the
    /// results that brought it, so a resumed session starts as tainted as it ended.
    taint_kept: usize,
}

impl Session {
    /// The session's approvals, carried by each of its calls.
    pub fn approvals(&self) -> &Arc<SessionApprovals> {
        &self.approvals
    }

    /// The turns of this session come from chat `chat_id` of channel `channel`: its tool
    /// calls carry both (a `message` with no chat id answers there).
    pub fn set_origin(&mut self, channel: &str, chat_id: &str) {
        self.origin = Some((channel.to_string(), chat_id.to_string()));
    }

    /// The channel and chat set by [`Session::set_origin`].
    pub fn origin(&self) -> Option<(&str, &str)> {
        self.origin
            .as_ref()
            .map(|(c, id)| (c.as_str(), id.as_str()))
    }

    /// A session that lives only in memory.
    pub fn ephemeral(id: impl Into<String>) -> Self {
        Self {
            id: SessionId(id.into()),
            store: None,
            summary: None,
            messages: Vec::new(),
            approvals: Arc::default(),
            origin: None,
            taint_kept: 0,
        }
    }

    /// A new stored session for `agent`.
    pub async fn create(store: Store, agent: &str) -> Result<Self, StoreError> {
        let id = store.create_session(agent).await?;
        Ok(Self {
            id,
            store: Some(store),
            summary: None,
            messages: Vec::new(),
            approvals: Arc::default(),
            origin: None,
            taint_kept: 0,
        })
    }

    /// A new stored session for `agent`, started by the agent of session `parent` and
    /// linked to it (its path in the tree is `path`), with `task` as its first user message:
    /// one write to the store, so run it with [`crate::AgentLoop::run_started_turn`].
    pub async fn create_child(
        store: Store,
        agent: &str,
        parent: &str,
        path: &str,
        task: &str,
    ) -> Result<Self, StoreError> {
        let message = Message::user(task);
        let first = store
            .create_child_session(
                agent,
                &SessionId(parent.to_string()),
                path,
                Entry::message(&message),
            )
            .await?;
        Ok(Self {
            id: first.session_id,
            store: Some(store),
            summary: None,
            messages: vec![message],
            approvals: Arc::default(),
            origin: None,
            taint_kept: 0,
        })
    }

    /// Resume a stored session (created if the id is new), from its latest summary on.
    pub async fn resume(store: Store, id: &str, agent: &str) -> Result<Self, StoreError> {
        let id = SessionId(id.to_string());
        store.ensure_session(&id, agent).await?;
        let mut summary = None;
        let mut messages = Vec::new();
        for stored in store.entries_since_last_summary(&id).await? {
            match stored.kind {
                EntryKind::Summary => {
                    summary = stored
                        .content
                        .get("text")
                        .and_then(|v| v.as_str())
                        .map(str::to_string);
                    messages.clear();
                }
                EntryKind::User | EntryKind::Assistant | EntryKind::ToolResult => {
                    if let Ok(m) = serde_json::from_value::<Message>(stored.content.clone()) {
                        messages.push(m);
                    }
                }
                _ => {}
            }
        }
        let approvals = Arc::<SessionApprovals>::default();
        let mut taint_kept = 0;
        if let Some(kept) = store.session_taint(id.as_str()).await? {
            taint_kept = usize::try_from(kept.count).unwrap_or(usize::MAX);
            approvals.taint().restore(kept.sources, taint_kept);
        }
        for off in store.session_disabled_extensions(id.as_str()).await? {
            approvals.extensions().disable(&off);
        }
        Ok(Self {
            id,
            store: Some(store),
            summary,
            messages: close_unanswered_calls(messages),
            approvals,
            origin: None,
            taint_kept,
        })
    }

    /// The session's id, as `--session` takes it.
    pub fn id(&self) -> &str {
        self.id.as_str()
    }

    /// The messages since the latest summary (which [`Session::context`] puts first).
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The messages the model sees: the summary (as a system note) and everything after it.
    pub fn context(&self) -> Vec<Message> {
        let mut out = Vec::with_capacity(self.messages.len() + 1);
        if let Some(summary) = &self.summary {
            out.push(Message::system(format!(
                "Summary of the conversation so far:\n{summary}"
            )));
        }
        out.extend(self.messages.iter().cloned());
        out
    }

    /// Append a message, persisting it first so nothing shown is lost.
    pub async fn push(&mut self, message: Message) -> Result<(), StoreError> {
        if let Some(store) = &self.store {
            let kind = match message.role {
                Role::User => EntryKind::User,
                Role::Assistant => EntryKind::Assistant,
                Role::Tool => EntryKind::ToolResult,
                Role::System => EntryKind::System,
            };
            // Serialising a Message cannot fail: every key is a string.
            let content = serde_json::to_value(&message).unwrap_or_default();
            store.append(&self.id, Entry::new(kind, content)).await?;
        }
        self.messages.push(message);
        self.keep_taint().await
    }

    /// Marks the session as having read untrusted content from `source` (an inbound message
    /// from someone who is not an operator), and keeps that.
    pub async fn taint_with(&mut self, source: String) -> Result<(), StoreError> {
        self.approvals
            .taint()
            .record(&tackle_protocol::Provenance::Untrusted(source));
        self.keep_taint().await
    }

    /// Writes the taint to the store when it grew since it was last written.
    async fn keep_taint(&mut self) -> Result<(), StoreError> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        let (sources, count) = self.approvals.taint().snapshot();
        if count <= self.taint_kept {
            return Ok(());
        }
        let record = tackle_store::TaintRecord {
            sources,
            count: u64::try_from(count).unwrap_or(u64::MAX),
        };
        store.set_session_taint(self.id.as_str(), record).await?;
        self.taint_kept = count;
        Ok(())
    }

    /// Switches `extension` off (`on` false) or back on for this session, and keeps the
    /// change with it so the session's next turn, here or in another process, starts so.
    /// False when it was already so.
    pub async fn switch_extension(&self, extension: &str, on: bool) -> Result<bool, StoreError> {
        let extensions = self.approvals.extensions();
        let changed = if on {
            extensions.enable(extension)
        } else {
            extensions.disable(extension)
        };
        if changed {
            self.keep_extensions().await?;
        }
        Ok(changed)
    }

    /// Replaces the extensions off in this session with `off`, and keeps them.
    pub async fn set_disabled_extensions(&self, off: &[String]) -> Result<(), StoreError> {
        let extensions = self.approvals.extensions();
        for name in extensions.disabled() {
            extensions.enable(&name);
        }
        for name in off {
            extensions.disable(name);
        }
        self.keep_extensions().await
    }

    async fn keep_extensions(&self) -> Result<(), StoreError> {
        match &self.store {
            Some(store) => {
                store
                    .set_session_disabled_extensions(
                        self.id.as_str(),
                        self.approvals.extensions().disabled(),
                    )
                    .await
            }
            None => Ok(()),
        }
    }

    /// Add a message already in the store (a background result written while the session
    /// was idle) to the context, without writing it again.
    pub fn remember(&mut self, message: Message) {
        self.messages.push(message);
    }

    /// Adopt a summary already stored (by the `compact` tool) without writing it again.
    pub fn adopt_summary(&mut self, summary: String) {
        self.summary = Some(summary);
        self.messages.clear();
    }

    /// Start the context from `summary`: older messages stay in the store, out of the model's view.
    pub async fn compact_to(&mut self, summary: String) -> Result<(), StoreError> {
        if let Some(store) = &self.store {
            store
                .append(
                    &self.id,
                    Entry::new(EntryKind::Summary, serde_json::json!({"text": summary})),
                )
                .await?;
        }
        self.summary = Some(summary);
        self.messages.clear();
        Ok(())
    }
}

/// The result a call gets in a resumed context when none was stored for it.
const UNANSWERED_CALL: &str =
    "interrupted: the process running this call ended before its result was recorded";

/// Gives every tool call with no stored result (its process was killed while it ran or
/// waited for approval) an error result, after the results that were stored: providers refuse
/// a conversation with a call left unanswered, so the session could not go on. In the context
/// only; the store keeps what was written.
fn close_unanswered_calls(messages: Vec<Message>) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    let mut open: Vec<String> = Vec::new();
    for m in messages {
        if m.role != Role::Tool {
            for id in open.drain(..) {
                out.push(Message::tool_result(id, UNANSWERED_CALL, true));
            }
        }
        match m.role {
            Role::Assistant => open = m.tool_calls.iter().map(|c| c.id.clone()).collect(),
            Role::Tool => open.retain(|id| m.tool_call_id.as_deref() != Some(id.as_str())),
            _ => {}
        }
        out.push(m);
    }
    for id in open {
        out.push(Message::tool_result(id, UNANSWERED_CALL, true));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tackle_protocol::ToolCall;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "shell".into(),
            arguments: serde_json::json!({}),
        }
    }

    #[test]
    fn a_call_left_without_a_result_by_a_killed_process_gets_one_on_resume() {
        let stored = vec![
            Message::user("one"),
            Message::assistant("", vec![call("a"), call("b")]),
            Message::tool_result("a", "done", false),
            Message::user("two"),
            Message::assistant("", vec![call("c")]),
        ];
        let out = close_unanswered_calls(stored);
        let shape: Vec<(Role, Option<&str>)> = out
            .iter()
            .map(|m| (m.role, m.tool_call_id.as_deref()))
            .collect();
        assert_eq!(
            shape,
            vec![
                (Role::User, None),
                (Role::Assistant, None),
                (Role::Tool, Some("a")),
                (Role::Tool, Some("b")),
                (Role::User, None),
                (Role::Assistant, None),
                (Role::Tool, Some("c")),
            ]
        );
        assert!(out[3].is_error && out[3].content == UNANSWERED_CALL);
        assert!(!out[2].is_error);
    }

    #[test]
    fn a_whole_history_is_untouched() {
        let stored = vec![
            Message::user("one"),
            Message::assistant("", vec![call("a")]),
            Message::tool_result("a", "done", false),
            Message::assistant("fine", vec![]),
        ];
        assert_eq!(close_unanswered_calls(stored.clone()), stored);
    }
}
