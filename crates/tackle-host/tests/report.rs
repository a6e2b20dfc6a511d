//! What `tackle doctor` learns from the host, and what `check` says before anything runs.

mod common;

use common::Fixture;
use tackle_host::{enforcement_report, sandbox_status};
use tackle_protocol::{Capability, Grants, ShellGrant, Verdict};

#[test]
fn report_states_the_sandbox_exactly_as_probed() {
    let report = enforcement_report();
    let entry = |name: &str| report.iter().find(|e| e.protection == name).unwrap();
    let (sandbox, namespaces, landlock) =
        (entry("sandbox"), entry("namespaces"), entry("landlock"));
    // The sandbox is in force when either layer is; Landlock is reported as the kernel has it.
    assert_eq!(
        sandbox.enforced,
        namespaces.enforced || sandbox_status().is_enforced()
    );
    assert!(landlock.detail.contains(&sandbox_status().to_string()));
    assert!(
        !entry("seccomp").enforced || namespaces.enforced,
        "seccomp comes with namespaces"
    );
    for name in [
        "dns_pinning",
        "env_scrubbing",
        "fs_grants",
        "redirect_checks",
    ] {
        assert!(
            report.iter().any(|e| e.protection == name && e.enforced),
            "{name} missing"
        );
    }
}

#[tokio::test]
async fn check_runs_the_shell_analyser_and_url_guard_without_acting() {
    let f = Fixture::new();
    let grants = Grants {
        shell: Some(ShellGrant {
            allow: vec![],
            deny: vec!["rm".into()],
            ..Default::default()
        }),
        ..Grants::default()
    };
    let host = f.host(grants);
    let d = host
        .check(&Capability::Shell {
            command: "echo hi && rm -rf /".into(),
        })
        .await;
    assert_eq!(d.verdict, Verdict::Deny);
    let d = host
        .check(&Capability::Exec {
            program: "/bin/rm".into(),
            args: vec!["x".into()],
        })
        .await;
    assert_eq!(d.verdict, Verdict::Deny);
    let d = host
        .check(&Capability::Network {
            method: "GET".into(),
            url: "http://169.254.169.254/latest".into(),
        })
        .await;
    assert_eq!(d.verdict, Verdict::Deny);
}
