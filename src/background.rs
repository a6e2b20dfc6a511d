//! The end of `tackle run` or `tackle chat` with background tasks (`spawn`) still open: wait
//! for each to post its result into the session (Ctrl-C cancels them, and says so), or with
//! `--no-wait` cancel them at once and say which. Either way every task has written its
//! result (`completed` or `failed`) into the session before this returns, so nothing is lost
//! when the process exits.

use crate::render::render;
use crate::runtime::Runtime;
use crate::term;
use tackle_agent::tree::OpenTask;

/// `json` renders the tasks' events as JSON lines, as the turn before did.
pub async fn finish(rt: &Runtime, no_wait: bool, json: bool, quiet: bool) {
    let open = rt.tree.open_tasks();
    if open.is_empty() {
        return;
    }
    // The turn's renderer is gone; the tasks' own events (their tool calls and the line each
    // posts when it ends) need one while we wait, or a task that ends now ends unseen.
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let renderer = tokio::spawn(render(rx, json, quiet));
    rt.tree.set_front_end(Some(tx));
    wait(rt, &open, no_wait, quiet).await;
    // The renderer ends when its last sender (the tree's) is gone.
    rt.tree.set_front_end(None);
    let _ = renderer.await;
}

async fn wait(rt: &Runtime, open: &[OpenTask], no_wait: bool, quiet: bool) {
    if no_wait {
        rt.tree.cancel_tasks();
        say_cancelled(open, "--no-wait");
    } else if !quiet {
        term::err_line(&format!(
            "waiting for {} background task{} ({}) (Ctrl-C cancels)…",
            open.len(),
            if open.len() == 1 { "" } else { "s" },
            names(open)
        ));
    }
    tokio::select! {
        () = rt.tree.wait_tasks() => {
            if !no_wait && !quiet {
                term::err_line("background tasks finished; their results are in the session");
            }
        }
        _ = tokio::signal::ctrl_c() => {
            // Only those still running are cancelled; the others already posted a result.
            let still = rt.tree.open_tasks();
            rt.tree.cancel_tasks();
            // Each cancelled task still posts that it failed; wait for those notes.
            rt.tree.wait_tasks().await;
            say_cancelled(&still, "Ctrl-C");
        }
    }
}

fn names(tasks: &[OpenTask]) -> String {
    tasks
        .iter()
        .map(|t| format!("'{}'", t.label))
        .collect::<Vec<_>>()
        .join(", ")
}

fn say_cancelled(tasks: &[OpenTask], why: &str) {
    for t in tasks {
        term::err_line(&format!(
            "background task '{}' ({}) cancelled ({why}); the session records it as failed",
            t.label, t.id
        ));
    }
}
