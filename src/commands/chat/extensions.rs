//! `/extensions`, `/disable EXT` and `/enable EXT` in `tackle chat`: an extension switched off
//! for this session only (tackle_agent::session_extensions). The model is not sent its tools
//! from the next request on, and the dispatcher refuses a call to one in this session; the
//! agent's config and other sessions are untouched, and `/clear` starts with all of them on.
//! The switch is kept with the session: `tackle chat --session ID` resumes with it.

use crate::runtime::Runtime;
use crate::term;
use std::collections::BTreeMap;
use tackle_agent::Session;
use tackle_protocol::text::preview;

/// The extensions with tools in this chat's registry, by name, each with its tools.
fn owners(rt: &Runtime) -> BTreeMap<String, Vec<String>> {
    let mut owners: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for spec in rt.app.dispatcher.registry().specs() {
        owners.entry(spec.owner).or_default().push(spec.name);
    }
    owners
}

/// `/extensions`: each extension, on or off in this session, and its tools.
pub(super) fn list(rt: &Runtime, session: &Session) {
    let owners = owners(rt);
    let width = owners.keys().map(String::len).max().unwrap_or(9).max(9);
    term::err_line(&format!("  {:<width$}  {:<8}  TOOLS", "EXTENSION", "STATE"));
    for (name, tools) in &owners {
        let state = if session.approvals().extensions().is_disabled(name) {
            "disabled"
        } else {
            "on"
        };
        term::err_line(&format!(
            "  {name:<width$}  {state:<8}  {}",
            preview(&tools.join(", "), 120)
        ));
    }
    term::err_line(
        "/disable EXT hides an extension's tools in this session; /enable EXT shows them again.",
    );
}

/// `/disable EXT` (`on` false: `/enable EXT`), kept with the session (a resumed chat starts
/// with it off).
pub(super) async fn switch(rt: &Runtime, session: &Session, arg: &str, on: bool) {
    let verb = if on { "enable" } else { "disable" };
    let name = arg.trim();
    if name.is_empty() {
        term::err_line(&format!("usage: /{verb} EXT (/extensions lists them)"));
        return;
    }
    let owners = owners(rt);
    let Some(tools) = owners.get(name) else {
        let near = tackle_protocol::suggest::nearest(name, owners.keys().map(String::as_str), 0.75);
        term::err_line(&format!(
            "no extension `{}` with tools here{}",
            preview(name, 40),
            match tackle_protocol::suggest::hint(&near) {
                h if h.is_empty() => "; /extensions lists them".to_string(),
                h => h,
            }
        ));
        return;
    };
    let changed = match session.switch_extension(name, on).await {
        Ok(changed) => changed,
        Err(e) => {
            term::err_line(&format!("cannot {verb} `{name}` for this session: {e}"));
            return;
        }
    };
    let tools = preview(&tools.join(", "), 160);
    term::err_line(&match (on, changed) {
        (false, true) => format!(
            "disabled `{name}` for this session: the model is no longer offered {tools}, and a call to one is refused"
        ),
        (false, false) => format!("`{name}` is already disabled for this session"),
        (true, true) => format!("enabled `{name}` again for this session: {tools}"),
        (true, false) => format!("`{name}` is not disabled in this session"),
    });
}
