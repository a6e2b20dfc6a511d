//! One user turn with its renderer and Ctrl-C handling, shared by `run` and `chat`.

use crate::render::render;
use crate::runtime::Runtime;
use crate::term;
use std::sync::Arc;
use tackle_agent::{LoopError, Session, TurnOutcome};
use tackle_protocol::Approver;
use tokio_util::sync::CancellationToken;

/// Run `input` to the end of the turn, rendering events as they come; Ctrl-C cancels the turn
/// (in-flight tools included) instead of killing the process, and at an approval prompt it
/// also denies the call being asked about. With `json`, the first line is the session
/// (`{"event":"session","id":…}`), so a script can resume it. `quiet` (`-q`) leaves out the
/// tool-call lines.
pub async fn run_rendered(
    rt: &Runtime,
    session: &mut Session,
    input: &str,
    approver: Arc<dyn Approver>,
    json: bool,
    quiet: bool,
) -> Result<TurnOutcome, LoopError> {
    if json {
        term::out_line(&serde_json::json!({"event": "session", "id": session.id()}).to_string());
    }
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let renderer = tokio::spawn(render(rx, json, quiet));
    let cancel = CancellationToken::new();
    let turn = term::turn_started(&cancel);
    let on_ctrl_c = cancel.clone();
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    rt.tree.set_front_end(Some(tx.clone()));
    let outcome = rt
        .agent_loop
        .run_turn(session, input, approver, &tx, &cancel)
        .await;
    // The renderer ends when every sender is gone, the tree's included.
    rt.tree.set_front_end(None);
    drop(tx);
    let _ = renderer.await;
    ctrl_c.abort();
    drop(turn);
    outcome
}
