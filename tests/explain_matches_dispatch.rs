//! `--explain` and the call itself read one plan, so they must reach the same decision: for
//! generated calls under generated configs, a call `--explain` denies exits 3, one it says
//! asks exits 4 when no one can approve, and one it allows is neither denied nor held.

mod common;

use common::{run, Sandbox};
use proptest::prelude::*;
use serde_json::Value;

const CONFIGS: &[&str] = &[
    "",
    "security:\n  tool_policies:\n    shell:\n      grants:\n        shell:\n          allow: [echo, ls, cat]\n          deny: [rm]\n",
    "security:\n  tool_policies:\n    shell:\n      grants:\n        shell:\n          opaque: ask\n",
    "security:\n  auto_approved_tools: [shell, write_file, read_file, list_files]\n",
    "security:\n  tool_policies:\n    shell:\n      approval: never\n    read_file:\n      approval: always\n",
    "security:\n  tool_policies:\n    read_file:\n      grants:\n        fs:\n          allow_read: [\"/etc\", \".\"]\n    write_file:\n      approval: never\n",
];

const CALLS: &[(&str, &str)] = &[
    ("shell", r#"{"command":"echo hi"}"#),
    ("shell", r#"{"command":"rm -f victim.txt"}"#),
    ("shell", r#"{"command":"ls; cat notes.txt"}"#),
    ("shell", r#"{"command":"eval \"$X\""}"#),
    ("shell", r#"{"command":"sudo ls"}"#),
    ("shell", r#"{"command":"echo $(rm victim.txt)"}"#),
    ("shell", r#"{"command":"bash -c 'rm -f victim.txt'"}"#),
    ("shell", r#"{"command":"cat ~/.ssh/id_rsa"}"#),
    ("read_file", r#"{"path":"notes.txt"}"#),
    ("read_file", r#"{"path":"/etc/hostname"}"#),
    ("read_file", r#"{"path":"../outside.txt"}"#),
    ("read_file", r#"{"path":"~/secret.txt"}"#),
    ("write_file", r#"{"path":"out.txt","content":"x"}"#),
    ("write_file", r#"{"path":"../escape.txt","content":"x"}"#),
    ("list_files", r#"{"path":"."}"#),
    ("list_files", r#"{"path":"/etc"}"#),
    ("web_fetch", r#"{"url":"http://127.0.0.1:9/"}"#),
    ("web_fetch", r#"{"url":"http://[::ffff:10.0.0.1]/"}"#),
    ("calculate", r#"{"expression":"1+1"}"#),
];

fn cases() -> u32 {
    std::env::var("TACKLE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .map_or(40, |n| n.clamp(1, 400))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn explain_and_dispatch_agree(config in 0..CONFIGS.len(), call in 0..CALLS.len()) {
        let sb = Sandbox::new();
        std::fs::write(sb.workspace().join("notes.txt"), "notes\n").unwrap();
        std::fs::write(sb.workspace().join("victim.txt"), "keep\n").unwrap();
        std::fs::write(sb.dir.path().join("outside.txt"), "outside\n").unwrap();
        std::fs::write(sb.home().join("secret.txt"), "secret\n").unwrap();
        let cfg = sb.config(CONFIGS[config]);
        let (tool, args) = CALLS[call];
        let explained = run(sb.tackle(&cfg, &["tools", "call", tool, args, "--explain", "--json"]));
        let x: Value = serde_json::from_str(&explained.stdout).unwrap();
        let verdict = x["decision"]["verdict"].as_str().unwrap_or_default().to_string();
        // `--explain` exits as the decision would: 3 for a denial, else 0 (nothing ran).
        prop_assert_eq!(explained.code, if verdict == "deny" { 3 } else { 0 }, "{}", explained);
        let called = run(sb.tackle(&cfg, &["tools", "call", tool, args, "--json"]));
        let label = format!("config {config}, {tool} {args}: explain said {verdict}\n{called}");
        match verdict.as_str() {
            "deny" => prop_assert_eq!(called.code, 3, "{}", label),
            "ask" => prop_assert_eq!(called.code, 4, "{}", label),
            "allow" => prop_assert!(called.code != 3 && called.code != 4, "{}", label),
            other => prop_assert!(false, "unknown verdict {other:?}\n{}", label),
        }
        if verdict != "allow" {
            let victim = std::fs::read_to_string(sb.workspace().join("victim.txt")).unwrap_or_default();
            prop_assert_eq!(victim, "keep\n", "{}", label);
        }
    }
}
