//! The grants a call runs under, in words, for the approval prompt: what a "yes" lets the call
//! do (README, "Shell grants" and "The sandbox"), one line per kind of grant.

use tackle_protocol::grants::{Endpoint, Grants, OpaqueMode};

/// Names shown of one list before the rest is counted.
const SHOWN_NAMES: usize = 8;

/// One line each for commands, files and the network.
pub fn describe(grants: &Grants) -> Vec<String> {
    let mut lines = Vec::new();
    lines.push(match &grants.shell {
        None => "commands: any (inside the sandbox)".to_string(),
        Some(shell) => {
            let mut line = if shell.allow.is_empty() {
                "commands: any".to_string()
            } else {
                format!("commands: only {}", list(&shell.allow))
            };
            if !shell.deny.is_empty() {
                line.push_str(&format!("; never {}", list(&shell.deny)));
            }
            if shell.opaque == OpaqueMode::Ask {
                line.push_str("; a line it cannot read through is asked about");
            }
            line
        }
    });
    lines.push(match &grants.fs {
        None => "files: the workspace only".to_string(),
        Some(fs) => {
            let mut line = "files: the workspace".to_string();
            if !fs.allow_read.is_empty() {
                line.push_str(&format!("; also read {}", list(&fs.allow_read)));
            }
            if !fs.allow_write.is_empty() {
                line.push_str(&format!("; also write {}", list(&fs.allow_write)));
            }
            line
        }
    });
    lines.push(match &grants.network {
        None => "network: none for commands; web tools reach public hosts only".to_string(),
        Some(net) => {
            let mut line = if net.endpoints.is_empty() {
                "network: any public host".to_string()
            } else {
                let hosts: Vec<String> = net.endpoints.iter().map(endpoint).collect();
                format!("network: only {}", list(&hosts))
            };
            if net.allow_private {
                line.push_str("; private and local addresses too");
            }
            line
        }
    });
    lines
}

fn endpoint(e: &Endpoint) -> String {
    let mut s = e.host.clone();
    if let Some(prefix) = &e.path_prefix {
        s.push_str(prefix);
    }
    if let Some(methods) = &e.methods {
        s.push_str(&format!(" ({})", methods.join(", ")));
    }
    s
}

/// `a`, `b` and `c`, each in backquotes, with a count past [`SHOWN_NAMES`].
fn list(items: &[String]) -> String {
    let mut shown: Vec<String> = items
        .iter()
        .take(SHOWN_NAMES)
        .map(|i| format!("`{i}`"))
        .collect();
    if items.len() > SHOWN_NAMES {
        shown.push(format!("{} more", items.len() - SHOWN_NAMES));
    }
    match shown.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => shown.join(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tackle_protocol::grants::{FsGrant, NetworkGrant, ShellGrant};

    #[test]
    fn no_grants_say_what_the_defaults_allow() {
        let lines = describe(&Grants::default());
        assert_eq!(
            lines,
            vec![
                "commands: any (inside the sandbox)",
                "files: the workspace only",
                "network: none for commands; web tools reach public hosts only",
            ]
        );
    }

    #[test]
    fn grants_are_words_not_json() {
        let grants = Grants {
            shell: Some(ShellGrant {
                allow: vec!["git".into(), "ls".into()],
                deny: vec!["git push".into()],
                opaque: OpaqueMode::Deny,
            }),
            network: Some(NetworkGrant {
                endpoints: vec![Endpoint {
                    host: "api.github.com".into(),
                    path_prefix: None,
                    methods: Some(vec!["GET".into()]),
                }],
                allow_private: false,
            }),
            fs: Some(FsGrant {
                allow_read: vec!["/data".into()],
                allow_write: vec![],
            }),
        };
        let text = describe(&grants).join("\n");
        assert!(
            text.contains("commands: only `git` and `ls`; never `git push`"),
            "{text}"
        );
        assert!(
            text.contains("files: the workspace; also read `/data`"),
            "{text}"
        );
        assert!(
            text.contains("network: only `api.github.com (GET)`"),
            "{text}"
        );
        assert!(!text.contains('{'), "{text}");
    }
}
