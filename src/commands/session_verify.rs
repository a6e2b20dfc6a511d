//! `tackle sessions verify ID` and `tackle sessions rotate-key AGENT`: the signatures each
//! agent puts on its session entries (docs/decisions/0036-signed-session-entries.md).

use crate::cli::Global;
use crate::commands::sessions::store_error;
use crate::exit;
use anyhow::{anyhow, Result};
use tackle_protocol::config::Config;
use tackle_protocol::text::preview;
use tackle_store::{KeyAnchor, SessionId, Store, StoreError};

/// A key as people read it: enough of the public key to tell two apart.
fn short(key: &str) -> String {
    format!("{}…", key.get(..16).unwrap_or(key))
}

/// Exit 0 when every entry verifies, else 1 (as `tackle audit verify`), naming each entry that
/// fails and why.
pub async fn verify(store: &Store, id: &SessionId, json: bool, global: &Global) -> Result<i32> {
    let v = store
        .verify_session(id)
        .await
        .map_err(|e| store_error(id, e))?;
    let code = if v.ok() { exit::OK } else { exit::FAILED };
    if json {
        let failures: Vec<_> = v
            .failures
            .iter()
            .map(|f| {
                serde_json::json!({
                    "entry": f.entry,
                    "problem": f.problem.to_string(),
                    "detail": f.problem,
                })
            })
            .collect();
        outln!(
            "{}",
            serde_json::json!({
                "ok": v.ok(),
                "session": v.session,
                "agent": v.agent,
                "entries": v.entries,
                "signed": v.signed,
                "unsigned_legacy": v.unsigned_legacy,
                "anchor": v.anchor,
                "keys": v.keys,
                "unproven_rotation": v.unproven_rotation,
                "failures": failures,
            })
        )?;
        return Ok(code);
    }
    let name = preview(v.session.as_str(), 200);
    if !v.ok() {
        eprintln!(
            "session {name} does not verify: {} of {} entries fail",
            v.failures.len(),
            v.entries
        );
        for f in &v.failures {
            eprintln!("  entry {}: {}", f.entry, f.problem);
        }
    } else {
        outln!(
            "session {name} verifies: {} entries, {} signed by agent {} with {} key{}",
            v.entries,
            v.signed,
            preview(&v.agent, 60),
            v.keys.len(),
            if v.keys.len() == 1 { "" } else { "s" }
        )?;
    }
    if !global.quiet {
        if v.unsigned_legacy > 0 {
            eprintln!(
                "note: {} entries are unsigned (older than signing) and not covered",
                v.unsigned_legacy
            );
        }
        match v.anchor {
            KeyAnchor::KeyFile => {}
            KeyAnchor::Shared => eprintln!(
                "note: sessions are shared; checked against this daemon's key file and the {} key(s) the daemons recorded in the shared database",
                v.keys.len()
            ),
            KeyAnchor::Recorded => eprintln!(
                "note: no key file for agent {}; checked against the key the database records ({})",
                preview(&v.agent, 60),
                v.keys.first().map(|k| short(k)).unwrap_or_default()
            ),
            KeyAnchor::None => eprintln!(
                "note: agent {} has no identity key yet",
                preview(&v.agent, 60)
            ),
        }
        if let Some((old, new)) = &v.unproven_rotation {
            eprintln!(
                "note: the change from key {} to {} is not signed by both (was the key file lost?); entries of the older keys are not trusted",
                short(old),
                short(new)
            );
        }
    }
    Ok(code)
}

/// A new identity key for `agent`, recorded as its old key's successor.
pub async fn rotate(config: &Config, store: &Store, agent: &str, json: bool) -> Result<i32> {
    // `default` with no agents configured is the built-in default agent.
    let builtin = agent == "default" && config.agents.is_empty();
    if config.agent(Some(agent)).is_none() && !builtin {
        return Err(exit::unknown_agent(config, agent));
    }
    let r = store.rotate_agent_key(agent).await.map_err(|e| match e {
        e @ StoreError::InvalidId(_) => anyhow::Error::new(e),
        other => anyhow!(
            "cannot rotate the key of agent {}: {other}",
            preview(agent, 60)
        ),
    })?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&r)?)?;
        return Ok(exit::OK);
    }
    outln!(
        "agent {}: new identity key {} (succeeds {}, signed by both); its entries signed by the old key still verify",
        preview(&r.agent, 60),
        r.new_key,
        short(&r.old_key)
    )?;
    Ok(exit::OK)
}
