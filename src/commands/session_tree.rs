//! `tackle sessions list --tree`: root sessions with the sessions of the agents they
//! started indented beneath them, each child named by its path in the tree.

use crate::commands::audit::short_time;
use crate::exit;
use anyhow::{anyhow, Result};
use serde_json::json;
use std::collections::{HashMap, HashSet};
use tackle_protocol::text::preview;
use tackle_store::{SessionId, SessionLink, SessionSummary, Store};

pub async fn list(store: &Store, json: bool) -> Result<i32> {
    let sessions = store
        .session_summaries()
        .await
        .map_err(|e| anyhow!("cannot read the sessions: {e}"))?;
    let links = store
        .session_links()
        .await
        .map_err(|e| anyhow!("cannot read the sessions: {e}"))?;
    let by_id: HashMap<&SessionId, &SessionSummary> = sessions.iter().map(|s| (&s.id, s)).collect();
    let mut children: HashMap<&SessionId, Vec<&SessionLink>> = HashMap::new();
    let linked: HashSet<&SessionId> = links.iter().map(|l| &l.id).collect();
    for l in &links {
        children.entry(&l.parent).or_default().push(l);
    }
    // Roots: sessions no agent started (and children whose parent was deleted).
    let roots: Vec<&SessionSummary> = sessions
        .iter()
        .filter(|s| {
            !linked.contains(&s.id)
                || links
                    .iter()
                    .any(|l| l.id == s.id && !by_id.contains_key(&l.parent))
        })
        .collect();
    let mut rows = Vec::new();
    let mut seen = HashSet::new();
    for root in roots {
        walk(root, None, 0, &by_id, &children, &mut seen, &mut rows);
    }
    if json {
        let out: Vec<_> = rows
            .iter()
            .map(|(depth, s, path)| json!({"depth": depth, "path": path, "session": s}))
            .collect();
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
        return Ok(exit::OK);
    }
    for (depth, s, path) in rows {
        let indent = "  ".repeat(depth);
        let who = path.unwrap_or_else(|| s.agent.clone());
        outln!(
            "{indent}{}  {}  {}  {}",
            preview(s.id.as_str(), 60),
            short_time(&s.updated_at),
            preview(&who, 80),
            s.first_user_message
                .as_deref()
                .map(|m| preview(m, 60))
                .unwrap_or_default()
        )?;
    }
    Ok(exit::OK)
}

type Row<'a> = (usize, &'a SessionSummary, Option<String>);

fn walk<'a>(
    s: &'a SessionSummary,
    path: Option<String>,
    depth: usize,
    by_id: &HashMap<&SessionId, &'a SessionSummary>,
    children: &HashMap<&SessionId, Vec<&SessionLink>>,
    seen: &mut HashSet<SessionId>,
    rows: &mut Vec<Row<'a>>,
) {
    // A cycle cannot be written by Tackle, but a hand-edited store must not loop forever.
    if !seen.insert(s.id.clone()) {
        return;
    }
    rows.push((depth, s, path));
    for link in children.get(&s.id).into_iter().flatten() {
        if let Some(child) = by_id.get(&link.id) {
            walk(
                child,
                Some(link.path.clone()),
                depth + 1,
                by_id,
                children,
                seen,
                rows,
            );
        }
    }
}
