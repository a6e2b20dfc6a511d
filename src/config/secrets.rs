//! The credentials of a loaded config, for the output redactor (docs/architecture.md, "The
//! call pipeline"): every field typed [`Secret`] (found by type, so a new credential field
//! cannot be left off a list), and every value `${…}` put into one. `Bearer ${TOKEN}` makes
//! both `Bearer tok…` and `tok…` secrets, so a tool that prints the bare token (`printenv`, an
//! echo server, an error quoting the header) shows `[redacted secret]`.
//!
//! Values shorter than [`MIN_EXACT_LEN`] are not searched for in output (they would redact
//! ordinary words); a credential field that short gets a start-up warning instead.

use super::interpolate::Substitution;
use tackle_policy::secrets::MIN_EXACT_LEN;
use tackle_protocol::config::{Config, Secret};

/// The credential values of `config`, and the values interpolated into them (`substituted`
/// is what [`super::interpolate`] did). Blank values are left out.
pub fn collect(
    config: &Config,
    substituted: &[Substitution],
    warnings: &mut Vec<String>,
) -> Vec<Secret> {
    let found = config.secrets();
    let mut out = Vec::new();
    for f in &found {
        let value = f.value.trim();
        if value.is_empty() {
            continue;
        }
        // A value left short by an unset variable was warned about already.
        let unset = substituted
            .iter()
            .any(|s| s.path == f.path && s.inserted.is_empty());
        if value.chars().count() < MIN_EXACT_LEN && names_a_credential(&f.path) && !unset {
            warnings.push(format!(
                "{}: the credential is shorter than {MIN_EXACT_LEN} characters, so tool output \
                 is not searched for it and a tool that prints it is not redacted",
                f.path
            ));
        }
        out.push(Secret::new(value));
    }
    for s in substituted {
        // By path, and by value for a key read under another name (a serde alias).
        let into_secret = found
            .iter()
            .any(|f| f.path == s.path || (!f.value.trim().is_empty() && f.value == s.result));
        if into_secret {
            out.extend(
                s.inserted
                    .iter()
                    .map(|v| v.trim())
                    .filter(|v| !v.is_empty())
                    .map(Secret::new),
            );
        }
    }
    out
}

/// Whether the last part of a config path names a credential (`api_key`, `GITHUB_TOKEN`,
/// `Authorization`), as opposed to another entry of a map of credentials (`Accept`).
fn names_a_credential(path: &str) -> bool {
    tackle_protocol::env::names_a_credential(path.rsplit('.').next().unwrap_or(path))
}

#[cfg(test)]
mod tests {
    fn load(yaml: &str, env: &[(&str, &str)]) -> (Vec<String>, Vec<String>) {
        let lookup = |k: &str| {
            env.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        };
        let (_, warnings, secrets) =
            super::super::parse_with_secrets(yaml, "test.yaml", &lookup, &[])
                .unwrap_or_else(|e| panic!("{e}"));
        let secrets = secrets.iter().map(|s| s.expose().to_string()).collect();
        (secrets, warnings)
    }

    #[test]
    fn a_token_interpolated_into_a_header_is_a_secret_on_its_own() {
        let yaml = r#"
mcp_servers:
  gh:
    url: "http://127.0.0.1:1/mcp"
    headers:
      Authorization: "Bearer ${GH_TOKEN}"
channels:
  hook:
    type: webhook
    url: "http://127.0.0.1:1/hooks/${HOOK_ID}/send"
"#;
        let (secrets, _) = load(
            yaml,
            &[
                ("GH_TOKEN", "ghtok-1234567890"),
                ("HOOK_ID", "hook-98765432"),
            ],
        );
        for want in [
            "Bearer ghtok-1234567890",
            "ghtok-1234567890",
            "http://127.0.0.1:1/hooks/hook-98765432/send",
            "hook-98765432",
        ] {
            assert!(secrets.iter().any(|s| s == want), "{want} in {secrets:?}");
        }
    }

    #[test]
    fn transcribe_and_service_keys_are_secrets_and_other_interpolations_are_not() {
        let yaml = r#"
transcribe:
  api_key: "${STT_KEY}"
  model: "${STT_MODEL}"
services:
  r8r:
    token: "tok ${R8R}"
workspace: "${WS_DIR}"
"#;
        let (secrets, _) = load(
            yaml,
            &[
                ("STT_KEY", "stt-key-abcdef123"),
                ("STT_MODEL", "whisper-large-v3"),
                ("R8R", "r8r-token-555555"),
                ("WS_DIR", "/tmp/workspace-dir"),
            ],
        );
        assert!(secrets.iter().any(|s| s == "stt-key-abcdef123"));
        assert!(secrets.iter().any(|s| s == "r8r-token-555555"));
        assert!(
            !secrets.iter().any(|s| s.contains("whisper")),
            "{secrets:?}"
        );
        assert!(
            !secrets.iter().any(|s| s.contains("workspace")),
            "{secrets:?}"
        );
    }

    #[test]
    fn a_short_credential_is_warned_about_without_its_value() {
        let yaml = "backends:\n  - name: b\n    type: openai\n    api_key: \"abc12\"\n";
        let (_, warnings) = load(yaml, &[]);
        let warning = warnings
            .iter()
            .find(|w| w.contains("backends[0].api_key"))
            .unwrap_or_else(|| panic!("{warnings:?}"));
        assert!(!warning.contains("abc12"), "{warning}");
    }
}
