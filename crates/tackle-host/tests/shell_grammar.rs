//! Shell lines run in the grammar the rules analysed (bash, no start-up files), and under rules
//! they are also checked as bash itself reads them back, so a parser disagreement cannot hide
//! a command. Each attack is run for real: it holds only if the victim file survives.

mod common;

use common::{exists, is_denied, sh, Fixture};
use tackle_host::{bash_path, check_shell_line};
use tackle_protocol::{CallScope, Grants, HostProvider, OpaqueMode, ShellGrant, Verdict};

fn shell_grant(allow: &[&str], deny: &[&str], opaque: OpaqueMode) -> ShellGrant {
    ShellGrant {
        allow: allow.iter().map(|w| w.to_string()).collect(),
        deny: deny.iter().map(|w| w.to_string()).collect(),
        opaque,
    }
}

fn grants(shell: ShellGrant) -> Grants {
    Grants {
        shell: Some(shell),
        ..Grants::default()
    }
}

#[tokio::test]
async fn lines_run_in_bash_whatever_bin_sh_is() {
    if bash_path().is_none() {
        eprintln!("skipped: bash is not installed");
        return;
    }
    let f = Fixture::new();
    let out = f
        .host(Grants::default())
        .exec(sh(
            "[[ abc == a* ]] && echo \"bash $BASH_VERSION\"; echo $(( 6 * 7 ))",
        ))
        .await
        .unwrap();
    assert!(
        out.stdout.starts_with("bash 5") || out.stdout.starts_with("bash 4"),
        "{out:?}"
    );
    assert!(out.stdout.contains("42"), "{out:?}");
}

#[tokio::test]
async fn start_up_variables_never_reach_bash() {
    // SAFETY (edition 2021: safe fn): nextest runs each test in its own process.
    let f = Fixture::new();
    let hook = f.write("hook.sh", "touch startup-ran\n");
    std::env::set_var("BASH_ENV", &hook);
    std::env::set_var("ENV", &hook);
    std::env::set_var("BASH_FUNC_ls%%", "() { touch function-ran; }");
    let mut config = f.config();
    config.env_passthrough = vec!["BASH_*".into(), "ENV".into()];
    let out = f
        .host_with(config, Grants::default())
        .exec(sh("ls >/dev/null; env"))
        .await
        .unwrap();
    assert!(!exists(&f.ws().join("startup-ran")), "{out:?}");
    assert!(!exists(&f.ws().join("function-ran")), "{out:?}");
    assert!(!out.stdout.contains("BASH_ENV"), "{}", out.stdout);
    let mut req = sh("true");
    req.env = vec![("BASH_ENV".into(), hook.display().to_string())];
    let r = f.host(Grants::default()).exec(req).await;
    assert!(
        matches!(r, Err(tackle_protocol::HostError::Invalid(_))),
        "{r:?}"
    );
}

/// Lines that brush-parser and bash read differently around here-documents: bash runs
/// `rm victim` (or something the analyser did not see) in each.
const DISAGREEMENTS: &[&str] = &[
    "f() { if false; then cat <<< '$(rm victim)'; else cat <<'EOF'; fi; }; ( cat <<< \"$(rm victim)\" )\nEOF\n",
    "echo $(cat <<EOF\nhi\nEOF)\nrm victim",
    "echo $(cat <<'EOF'\nEOF)\nEOF\n); rm victim",
    "echo $(cat <<'EOF'\nEOF)\nrm victim\nEOF\n)",
    "echo $(cat <<EOF\nhi\nEOF)\nrm victim\nEOF\n)",
    "cat <<EOF; echo $(rm victim)\nhi\nEOF",
    "cat <<EOF; echo \"$(rm victim)\"\nhi\nEOF",
    "cat <<EOF && cat <<< \"$(rm victim)\"\nhi\nEOF",
    "( cat <<'EOF' ); echo $(rm victim)\nEOF",
    "echo $(rm victim <<'EOF'\n$(\nEOF\n)",
    "echo $(cat <<''\n$(rm victim)\n\n)",
    "echo \"$(cat <<\"\"\nx\n$(rm victim)\n\n)\"",
    "cat <<EOF\nE\\\nOF\nrm victim\nEOF",
    "cat <<EOF\nhi\nEOF\\\n\nrm victim\nEOF",
    "echo `cat <<\\EOF\nEOF\\\n\nrm victim\nEOF\n`",
    "echo \"$(cat <<EOF\nEOF\\\n$(echo rm victim)\nEOF\n)\"",
    "if cat <<EOF; then if ls; then echo $(rm victim); fi; fi\nEOF\n",
    "if false; then if cat <<EOF; then ls; fi; else ! cat <<< \"$(rm victim)\"; fi\nEOF\n",
];

#[tokio::test]
async fn lines_the_parsers_read_differently_are_denied_and_the_victim_survives() {
    if bash_path().is_none() {
        eprintln!("skipped: bash is not installed");
        return;
    }
    let g = shell_grant(&[], &["rm"], OpaqueMode::Deny);
    let mut failures = Vec::new();
    for line in DISAGREEMENTS {
        let f = Fixture::new();
        f.write("victim", "keep");
        let d = check_shell_line(line, &g).await;
        let r = f.host(grants(g.clone())).exec(sh(line)).await;
        if !d.is_denied() || !is_denied(&r) || !exists(&f.ws().join("victim")) {
            failures.push(format!("{line:?}: {}", d.why));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn an_opaque_line_runs_only_when_a_person_approved_this_call() {
    if bash_path().is_none() {
        eprintln!("skipped: bash is not installed");
        return;
    }
    let line = "X=touch; $X made";
    let ask = shell_grant(&[], &["rm"], OpaqueMode::Ask);
    assert_eq!(check_shell_line(line, &ask).await.verdict, Verdict::Ask);
    let f = Fixture::new();
    // Not approved: refused at run time even if a tool forgot to plan the capability.
    let r = f.host(grants(ask.clone())).exec(sh(line)).await;
    assert!(is_denied(&r), "{r:?}");
    assert!(!exists(&f.ws().join("made")));
    let scope = CallScope {
        tool: "shell".into(),
        session_id: "s".into(),
        agent: "default".into(),
        workspace: f.ws(),
        grants: grants(ask),
        cancel: Default::default(),
        approved: true,
    };
    let host = tackle_host::NativeHostProvider::new(f.config()).scoped(&scope);
    host.exec(sh(line)).await.unwrap();
    assert!(exists(&f.ws().join("made")));
    // `deny` (the default) refuses it with the reason.
    let d = check_shell_line(line, &shell_grant(&[], &["rm"], OpaqueMode::Deny)).await;
    assert!(
        d.is_denied() && d.why.contains("cannot tell what this runs"),
        "{d:?}"
    );
}

#[tokio::test]
async fn ordinary_lines_still_run_under_rules() {
    if bash_path().is_none() {
        eprintln!("skipped: bash is not installed");
        return;
    }
    let allow = shell_grant(&["echo", "printf", "cat", "wc"], &["rm"], OpaqueMode::Deny);
    let deny = shell_grant(&[], &["rm"], OpaqueMode::Deny);
    let f = Fixture::new();
    f.write("a.txt", "one\ntwo\n");
    for (line, want) in [
        ("n=3; echo $((n*2))", "6"),
        (
            "printf '%s\\n' '${HOME} stays literal'",
            "${HOME} stays literal",
        ),
        ("cat <<'EOF' | wc -l\na\nb\nEOF", "2"),
        ("echo \"$(cat <<'EOF'\nmessage\nEOF\n)\"", "message"),
        ("for f in *.txt; do wc -l \"$f\"; done", "2 a.txt"),
    ] {
        // The allow list's decision; running under it needs the sandbox's start-up program
        // (the `tackle` binary), which the binary's own tests exercise.
        let decided = check_shell_line(line, &allow).await;
        assert_eq!(decided.verdict, Verdict::Allow, "{line:?}: {decided:?}");
        let out = f.host(grants(deny.clone())).exec(sh(line)).await;
        let out = out.unwrap_or_else(|e| panic!("{line:?}: {e:?}"));
        assert!(out.stdout.contains(want), "{line:?}: {out:?}");
    }
}

#[tokio::test]
async fn an_allow_list_that_cannot_be_made_true_refuses_the_command() {
    if bash_path().is_none() {
        eprintln!("skipped: bash is not installed");
        return;
    }
    let f = Fixture::new();
    let allow = shell_grant(&["echo"], &[], OpaqueMode::Deny);
    // No start-up program configured (`HostConfig::sandbox_init`).
    let out = f.host(grants(allow)).exec(sh("echo ran")).await;
    let namespaces = tackle_host::enforcement_report()
        .iter()
        .any(|e| e.protection == "namespaces" && e.enforced);
    if namespaces {
        assert!(is_denied(&out), "{out:?}");
        let err = out.expect_err("refused");
        assert!(
            err.to_string().contains("allow list cannot be enforced"),
            "{err}"
        );
    } else {
        eprintln!("no namespaces here: the allow list is the analyser's alone");
        assert!(out.is_ok_and(|o| o.stdout.contains("ran")));
    }
}
