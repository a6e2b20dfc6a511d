//! Compaction: summarise a session's history through the model and start the context from the
//! summary (a Summary entry in the store). Reached by the `compact` tool through
//! [`AgentServices`] and by the chat front end's `/compact`.
//!
//! A summary is a model request. Asked for by an agent (the `compact` tool, through the tree's
//! [`TreeNode`](crate::TreeNode)) it is claimed from the tree's iteration pool first, like a
//! tool turn: a model could otherwise ask for any number of them in one turn. `/compact` is the
//! operator's own command between turns, outside any turn's pool, and is not counted.

use crate::session::Session;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tackle_llm::{complete, ChatRequest, Provider};
use tackle_protocol::message::{Message, Role};
use tackle_protocol::{AgentServices, ToolContext, ToolError};
use tackle_store::{Entry, EntryKind, SessionId, Store};

const SUMMARY_PROMPT: &str = "Summarise the conversation above for your own later use: the user's goals, decisions made, facts learned (with file names, commands, URLs), work done, and what remains. Be concise and specific. Reply with the summary only.";

/// Summaries written by the `compact` tool mid-turn, waiting for the loop to adopt them.
pub struct Compactor {
    provider: Arc<dyn Provider>,
    model: String,
    store: Option<Store>,
    pending: Mutex<HashMap<String, String>>,
}

impl Compactor {
    /// A compactor that asks `provider` for summaries with `model`; the `compact` tool reads
    /// and writes sessions in `store` (`None`: the tool fails, `/compact` still works).
    pub fn new(provider: Arc<dyn Provider>, model: String, store: Option<Store>) -> Self {
        Self {
            provider,
            model,
            store,
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// Summarise `history` with the model.
    pub async fn summarise(&self, history: &[Message]) -> Result<String, ToolError> {
        let mut messages: Vec<Message> = history
            .iter()
            .filter(|m| m.role != Role::System)
            .cloned()
            .collect();
        if messages.is_empty() {
            return Err(ToolError::failed("there is nothing to compact yet"));
        }
        messages.push(Message::user(SUMMARY_PROMPT));
        let mut req = ChatRequest::new(self.model.clone(), messages);
        req.stream = false;
        let done = complete(self.provider.as_ref(), req)
            .await
            .map_err(|e| ToolError::failed(format!("compaction failed: {e}")))?;
        let text = done.text.trim().to_string();
        if text.is_empty() {
            return Err(ToolError::failed("the model returned an empty summary"));
        }
        Ok(text)
    }

    /// `/compact`: summarise a session and start its context from the summary.
    pub async fn compact_session(&self, session: &mut Session) -> Result<String, ToolError> {
        let summary = self.summarise(&session.context()).await?;
        session
            .compact_to(summary.clone())
            .await
            .map_err(|e| ToolError::failed(format!("could not save the summary: {e}")))?;
        Ok(summary)
    }

    /// A summary the `compact` tool wrote for this session, for the loop to adopt.
    pub fn take_pending(&self, session_id: &str) -> Option<String> {
        self.pending
            .lock()
            .ok()
            .and_then(|mut p| p.remove(session_id))
    }
}

#[async_trait]
impl AgentServices for Compactor {
    async fn compact(&self, cx: &ToolContext) -> Result<String, ToolError> {
        let Some(store) = &self.store else {
            return Err(ToolError::failed(
                "this session is not stored, so it cannot be compacted",
            ));
        };
        let id = SessionId(cx.session_id.clone());
        let entries = store
            .entries_since_last_summary(&id)
            .await
            .map_err(|e| ToolError::failed(format!("cannot read the session: {e}")))?;
        let history: Vec<Message> = entries
            .into_iter()
            .filter_map(|e| match e.kind {
                EntryKind::Summary => e
                    .content
                    .get("text")
                    .and_then(|t| t.as_str())
                    .map(|t| Message::user(format!("(Earlier summary)\n{t}"))),
                EntryKind::User | EntryKind::Assistant | EntryKind::ToolResult => {
                    serde_json::from_value(e.content).ok()
                }
                _ => None,
            })
            .collect();
        let summary = self.summarise(&history).await?;
        store
            .append(
                &id,
                Entry::new(EntryKind::Summary, serde_json::json!({"text": summary})),
            )
            .await
            .map_err(|e| ToolError::failed(format!("could not save the summary: {e}")))?;
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(cx.session_id.clone(), summary.clone());
        }
        Ok(summary)
    }
}
