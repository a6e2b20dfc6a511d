//! The end of `tackle run` with background tasks (`spawn`) still open: wait for each to post
//! its result into the session (Ctrl-C cancels them), or with `--no-wait` cancel them at once
//! and say which.

use crate::runtime::Runtime;

pub async fn finish(rt: &Runtime, no_wait: bool, quiet: bool) {
    let open = rt.tree.open_tasks();
    if open.is_empty() {
        return;
    }
    if no_wait {
        rt.tree.cancel_tasks();
        for t in &open {
            eprintln!(
                "background task '{}' ({}) cancelled (--no-wait)",
                t.label, t.id
            );
        }
    } else if !quiet {
        eprintln!(
            "waiting for {} background task{} (Ctrl-C cancels)…",
            open.len(),
            if open.len() == 1 { "" } else { "s" }
        );
    }
    tokio::select! {
        () = rt.tree.wait_tasks() => {}
        _ = tokio::signal::ctrl_c() => {
            rt.tree.cancel_tasks();
            // Each cancelled task still posts that it failed; wait for those notes.
            rt.tree.wait_tasks().await;
        }
    }
}
