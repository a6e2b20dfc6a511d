//! Adversarial shell lines that the corpus format cannot hold (NUL bytes, invisible
//! characters), and limits on how much work a hostile line can cause.

use std::time::{Duration, Instant};
use tackle_policy::shell::{check_shell, commands};
use tackle_protocol::ShellGrant;

fn grant(allow: &[&str], deny: &[&str]) -> ShellGrant {
    ShellGrant {
        allow: allow.iter().map(|s| s.to_string()).collect(),
        deny: deny.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

#[test]
fn a_nul_byte_anywhere_denies_the_line_even_without_rules() {
    for line in ["r\0m x", "ls\0; rm x", "echo 'a\0b'"] {
        let d = check_shell(line, &grant(&[], &[]));
        assert!(d.is_denied(), "{line:?}");
        assert!(d.why.contains("NUL"), "{}", d.why);
    }
}

#[test]
fn invisible_characters_in_a_command_name_deny_when_rules_exist() {
    let deny_rm = grant(&[], &["rm"]);
    for line in [
        "r\u{200b}m x",
        "r\u{200d}m x",
        "\u{202e}mr x",
        "rm\u{feff} x",
        "r\u{00a0}m x",
        "rm\r x",
    ] {
        let d = check_shell(line, &deny_rm);
        assert!(d.is_denied(), "{line:?}");
    }
    // Without rules nothing is checked, and plain non-ASCII names are just unknown programs.
    assert!(check_shell("r\u{200b}m x", &grant(&[], &[])).is_allowed());
    assert!(check_shell("ｒｍ x", &grant(&[], &["rm"])).is_allowed());
    assert!(check_shell("ｒｍ x", &grant(&["ls"], &[])).is_denied());
}

#[test]
fn candidates_are_checked_by_deny_rules_but_not_by_allow_rules() {
    // `RUST_LOG=debug` is not a command, so an allow list need not cover `debug`...
    assert!(check_shell("RUST_LOG=debug cargo test", &grant(&["cargo"], &[])).is_allowed());
    // ...but a value that names a denied program is denied.
    assert!(check_shell("RUSTC_WRAPPER=rm cargo build", &grant(&[], &["rm"])).is_denied());
    assert!(check_shell("X='rm -rf /'", &grant(&[], &["rm -rf"])).is_denied());
}

#[test]
fn candidates_are_not_listed_as_commands() {
    let found = commands("RUST_LOG=debug cargo test").unwrap_or_default();
    assert_eq!(found, vec![vec!["cargo".to_string(), "test".to_string()]]);
}

#[test]
fn nested_launchers_stay_cheap() {
    let lines = [
        format!("{}rm x", "valgrind ".repeat(2000)),
        format!("{}rm x", "firejail --quiet numactl -N 0 ".repeat(500)),
        format!("{}rm x", "X=1 env A=b ".repeat(2000)),
    ];
    for line in &lines {
        let start = Instant::now();
        let d = check_shell(line, &grant(&[], &["rm"]));
        assert!(d.is_denied(), "{}", d.why);
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
    }
}

#[test]
fn a_very_long_line_is_denied_and_a_long_ordinary_one_is_quick() {
    let long = format!("echo {}; rm x", "a".repeat(300 * 1024));
    let d = check_shell(&long, &grant(&[], &[]));
    assert!(d.is_denied());
    assert!(d.why.contains("longer than"), "{}", d.why);
    let many = "X='a b c' Y=\"$Z\" ls; ".repeat(5000);
    let start = Instant::now();
    assert!(check_shell(&many, &grant(&["ls"], &["rm"])).is_allowed());
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_value_nested_too_deep_is_still_denied() {
    let line = format!("X='{}rm x'", "eval ".repeat(40));
    let d = check_shell(&line, &grant(&[], &["ls"]));
    assert!(d.is_denied());
    assert!(d.why.contains("deep"), "{}", d.why);
}

#[test]
fn many_quoted_funsub_markers_and_here_documents_stay_cheap() {
    // Each `${ ` marker is placed against the literal spans of the line's tokens: a line full
    // of them (and of here-documents, whose bodies are located in the source) must not cost
    // quadratic time.
    let quoted = "echo 'const s = \"${ x }\";'; ".repeat(4000);
    let bodies = "cat <<'E'\n${ x }\nE\n".repeat(2000);
    let deny_rm = grant(&[], &["rm"]);
    let started = Instant::now();
    let d = check_shell(&quoted, &deny_rm);
    assert!(d.is_allowed(), "{}", d.why);
    let d = check_shell(&bodies, &deny_rm);
    assert!(d.is_allowed(), "{}", d.why);
    // One marker outside the quotes still refuses the whole line.
    let tail = format!("{quoted}echo ${{ rm x; }}");
    assert!(check_shell(&tail, &deny_rm).is_denied());
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn arithmetic_on_counts_is_allowed_and_on_other_output_is_not() {
    let g = grant(&["wc", "echo", "cat"], &["rm"]);
    assert!(check_shell("n=$(wc -l < f); echo $((n + 1))", &g).is_allowed());
    for line in [
        "n=$(cat f); echo $((n + 1))",
        "n=$(wc -l f); echo $((n + 1))",
        "echo $(( $(cat f) * 2 ))",
    ] {
        let d = check_shell(line, &g);
        assert!(d.is_denied(), "{line}");
        assert!(d.why.contains("evaluates"), "{}", d.why);
    }
}
