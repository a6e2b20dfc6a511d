//! The honeytokens check (docs/decisions/0034-honeytokens.md): whether decoy credentials are
//! planted, and whether any call has tried to send one out (read from the trip log, which
//! names the decoy and never holds its value).

use super::Check;
use std::path::Path;
use tackle_protocol::config::Config;

/// Where the decoys are, for the operator (never their values).
const PLANTED: &str = "decoy AWS, GitHub and OpenAI keys in every command's environment, a decoy ~/.aws/credentials in the sandbox's home";

pub(super) fn check(config: &Config, state_dir: &Path) -> Check {
    const NAME: &str = "honeytokens";
    if !config.security.honeytokens {
        return Check::ok(
            NAME,
            "off (security.honeytokens: true plants decoy credentials that stop a session sending them)",
        );
    }
    let trips = tackle_agent::honeytoken::trips(state_dir);
    let Some(last) = trips.last else {
        return Check::ok(NAME, format!("on ({PLANTED}); none tripped"));
    };
    let frozen = match trips.frozen.len() {
        0 => "no session frozen".to_string(),
        n => format!(
            "{n} session{} frozen ({}; `tackle sessions unfreeze ID`)",
            if n == 1 { "" } else { "s" },
            trips.frozen.join(", ")
        ),
    };
    Check::warn(
        NAME,
        format!(
            "on; {} tripped, last at {} (`{}` carried the decoy {}, session {}); {frozen}; {PLANTED}",
            trips.tripped,
            last.at,
            last.tool,
            last.token,
            if last.session.is_empty() {
                "none"
            } else {
                &last.session
            },
        ),
    )
}
