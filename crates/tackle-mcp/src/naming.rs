//! Registry names for MCP tools: `<server>__<tool>`, valid for every provider.
//!
//! Providers accept `^[a-zA-Z0-9_-]{1,64}$`. MCP servers name tools freely (dots, slashes,
//! unicode, long names), so names are mapped once, deterministically: the same server and
//! tool always give the same registry name, across runs and machines, so prompt caches and
//! `security.tool_policies` entries keep working.

use tackle_protocol::ToolName;

/// Separator between the server and the tool (the Claude Code `mcp__server__tool` convention).
pub const SEPARATOR: &str = "__";

/// Length of the hash suffix that keeps shortened names apart (`_` + 8 hex digits).
const HASH_SUFFIX_LEN: usize = 9;

/// The registry name of `tool` on `server`.
///
/// Characters outside `[A-Za-z0-9_-]` become `_`; a name longer than 64 bytes keeps its
/// start and ends in `_` plus 8 hex digits of a stable hash of the *original* pair, so two
/// long names that share a prefix stay distinct.
pub fn registry_name(server: &str, tool: &str) -> String {
    let full = format!("{}{SEPARATOR}{}", sanitize(server), sanitize(tool));
    if full.len() <= ToolName::MAX_LEN {
        return full;
    }
    let hash = fnv1a64(format!("{server}\u{0}{tool}").as_bytes());
    // Sanitized names are ASCII, so any byte index is a char boundary.
    let keep = ToolName::MAX_LEN - HASH_SUFFIX_LEN;
    let prefix = full.get(..keep).unwrap_or(&full);
    format!("{prefix}_{:08x}", (hash & 0xffff_ffff) as u32)
}

/// The prefix every tool of `server` starts with, for `Extension::unavailable`.
pub fn server_prefix(server: &str) -> String {
    format!("{}{SEPARATOR}", sanitize(server))
}

fn sanitize(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() {
        "_".to_string()
    } else {
        out
    }
}

/// FNV-1a, 64 bit: tiny, dependency-free and stable forever (std's hasher is not).
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_joined_with_a_double_underscore() {
        assert_eq!(
            registry_name("time", "get_current_time"),
            "time__get_current_time"
        );
        assert_eq!(
            registry_name("everything", "get-sum"),
            "everything__get-sum"
        );
    }

    #[test]
    fn dots_slashes_spaces_and_unicode_become_underscores() {
        assert_eq!(
            registry_name("git.hub", "repo/list files"),
            "git_hub__repo_list_files"
        );
        assert_eq!(registry_name("s", "héllo"), "s__h_llo");
        assert_eq!(registry_name("", ""), "____");
    }

    #[test]
    fn every_mapped_name_is_valid_for_every_provider() {
        let long = "x".repeat(200);
        let cases = [
            ("a", "b"),
            ("é", "ü/ö"),
            ("srv", long.as_str()),
            (long.as_str(), "t"),
        ];
        for (server, tool) in cases {
            let name = registry_name(server, tool);
            assert!(ToolName::parse(&name).is_ok(), "{name}");
        }
    }

    #[test]
    fn long_names_sharing_a_prefix_stay_distinct_and_stable() {
        let a = registry_name("srv", &format!("{}_alpha", "t".repeat(80)));
        let b = registry_name("srv", &format!("{}_beta", "t".repeat(80)));
        assert_ne!(a, b);
        assert_eq!(a.len(), 64);
        assert_eq!(
            a,
            registry_name("srv", &format!("{}_alpha", "t".repeat(80)))
        );
    }

    #[test]
    fn the_hash_is_the_published_fnv1a_value() {
        // Known FNV-1a 64 test vector: a changed hash would rename users' tools.
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
