//! A child's tool calls, relayed to the tree's front end as [`AgentEvent::Child`]: the root's
//! renderer shows them under the `spawn_*` line that started the child instead of only the
//! spawn's own `✓`. Only tool-call events go up; the child's text is its result, which the
//! parent's model reads.

use super::Tree;
use crate::events::{AgentEvent, EventSink};
use std::sync::Arc;
use tokio::task::JoinHandle;

/// The sink a child's loop writes its events to, and the task relaying them; await the task
/// after dropping the sink, so every call of the child is shown before the spawn's result.
pub(super) fn child_events(
    tree: &Arc<Tree>,
    agent: &str,
    depth: usize,
) -> (EventSink, JoinHandle<()>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let tree = Arc::clone(tree);
    let agent = agent.to_string();
    let relay = tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            if matches!(
                event,
                AgentEvent::ToolCallStarted { .. } | AgentEvent::ToolCallFinished { .. }
            ) {
                tree.notify(AgentEvent::Child {
                    agent: agent.clone(),
                    depth,
                    call: Box::new(event),
                });
            }
        }
    });
    (tx, relay)
}
