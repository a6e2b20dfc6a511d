//! A tree of agents only ever narrows: for every grant kind at once, whatever a child's
//! attenuated grants allow, its parent allows (and, for a peer, its own config too), down a
//! chain of any depth. The red-team cases try to widen through each kind by name.

use proptest::prelude::*;
use std::path::Path;
use tackle_policy::grants::{attenuate, intersect};
use tackle_policy::{net, path, shell};
use tackle_protocol::{Endpoint, FsGrant, Grants, NetworkGrant, OpaqueMode, ShellGrant};

fn config() -> ProptestConfig {
    let cases = std::env::var("TACKLE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// One thing a call could try, checked the way the host checks it.
#[derive(Debug, Clone)]
enum Probe {
    Shell(String),
    Fs(&'static str, bool),
    Net(&'static str, String),
}

fn allows(g: &Grants, probe: &Probe) -> bool {
    match probe {
        Probe::Shell(line) => {
            shell::check_shell(line, &g.shell.clone().unwrap_or_default()).is_allowed()
        }
        Probe::Fs(target, write) => {
            let roots = path::roots(g.fs.as_ref(), Path::new("/w"), Some(Path::new("/h")));
            let access = if *write {
                path::Access::Write
            } else {
                path::Access::Read
            };
            path::check_path(Path::new(target), access, &roots).is_allowed()
        }
        Probe::Net(method, url) => {
            net::check_url(method, url, &g.network.clone().unwrap_or_default()).is_ok()
        }
    }
}

fn probe() -> impl Strategy<Value = Probe> {
    let word = prop_oneof![
        Just("git"),
        Just("ls"),
        Just("rm"),
        Just("push"),
        Just("status"),
        Just("-la"),
        Just("$(rm)"),
        Just(";"),
        Just("sudo")
    ];
    let line = prop::collection::vec(word, 1..4).prop_map(|w| Probe::Shell(w.join(" ")));
    let target = prop_oneof![
        Just("/w"),
        Just("/w/a"),
        Just("/w/a/x"),
        Just("/w/ab"),
        Just("/h/a"),
        Just("/h"),
        Just("/x"),
        Just("/")
    ];
    let fs = (target, any::<bool>()).prop_map(|(t, w)| Probe::Fs(t, w));
    let host = prop_oneof![
        Just("example.com"),
        Just("a.example.com"),
        Just("other.org"),
        Just("localhost"),
        Just("127.0.0.1")
    ];
    let path = prop_oneof![Just("/"), Just("/v1"), Just("/v1/x"), Just("/v2/y")];
    let method = prop_oneof![Just("GET"), Just("POST")];
    let net = (host, path, method).prop_map(|(h, p, m)| Probe::Net(m, format!("https://{h}{p}")));
    prop_oneof![line, fs, net]
}

fn rule() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("git"),
        Just("ls"),
        Just("rm"),
        Just("git push"),
        Just("git status"),
        Just("ls -la"),
        Just("sudo")
    ]
    .prop_map(String::from)
}

fn shell_grant() -> impl Strategy<Value = ShellGrant> {
    (
        prop::collection::vec(rule(), 0..3),
        prop::collection::vec(rule(), 0..2),
        any::<bool>(),
    )
        .prop_map(|(allow, deny, ask)| ShellGrant {
            allow,
            deny,
            opaque: if ask {
                OpaqueMode::Ask
            } else {
                OpaqueMode::Deny
            },
        })
}

fn fs_grant() -> impl Strategy<Value = FsGrant> {
    let entry = prop_oneof![
        Just("/w"),
        Just("/w/a"),
        Just("/w/ab"),
        Just("/h"),
        Just("~"),
        Just("~/a"),
        Just("."),
        Just("a"),
        Just("../x"),
        Just("/"),
        Just("/w/a/../b")
    ]
    .prop_map(String::from);
    (
        prop::collection::vec(entry.clone(), 0..3),
        prop::collection::vec(entry, 0..3),
    )
        .prop_map(|(allow_read, allow_write)| FsGrant {
            allow_read,
            allow_write,
        })
}

fn network_grant() -> impl Strategy<Value = NetworkGrant> {
    let host = prop_oneof![
        Just("example.com"),
        Just("*.example.com"),
        Just("a.example.com"),
        Just("*"),
        Just("other.org"),
        Just("localhost")
    ];
    let prefix = prop::option::of(prop_oneof![Just("/v1"), Just("/v1/x"), Just("/v2")]);
    let methods = prop::option::of(prop_oneof![Just(vec!["GET"]), Just(vec!["POST"])]);
    let endpoint = (host, prefix, methods).prop_map(|(h, p, m)| Endpoint {
        host: h.to_string(),
        path_prefix: p.map(String::from),
        methods: m.map(|m| m.into_iter().map(String::from).collect()),
    });
    (prop::collection::vec(endpoint, 0..3), any::<bool>()).prop_map(|(endpoints, allow_private)| {
        NetworkGrant {
            endpoints,
            allow_private,
        }
    })
}

fn grants() -> impl Strategy<Value = Grants> {
    (
        prop::option::of(shell_grant()),
        prop::option::of(network_grant()),
        prop::option::of(fs_grant()),
    )
        .prop_map(|(shell, network, fs)| Grants { shell, network, fs })
}

proptest! {
    #![proptest_config(config())]

    /// Every kind at once: the child's result allows nothing its parent does not.
    #[test]
    fn attenuated_child_is_within_its_parent(p in grants(), c in grants(), probe in probe()) {
        let a = attenuate(&p, &c);
        if allows(&a, &probe) {
            prop_assert!(allows(&p, &probe), "parent denies {:?}; attenuated {:?}", probe, a);
        }
    }

    /// A peer's own grants narrowed to its caller's are within both, a kind one side leaves
    /// unset counting as that kind's default on that side.
    #[test]
    fn intersected_peer_is_within_both(a in grants(), b in grants(), probe in probe()) {
        let i = intersect(&a, &b);
        if allows(&i, &probe) {
            prop_assert!(allows(&a, &probe), "first denies {:?}; intersection {:?}", probe, i);
            prop_assert!(allows(&b, &probe), "second denies {:?}; intersection {:?}", probe, i);
        }
    }

    /// Down a chain (root → child → grandchild), the leaf stays within the root.
    #[test]
    fn a_chain_stays_within_its_root(
        chain in prop::collection::vec(grants(), 2..5), probe in probe(),
    ) {
        let root = chain[0].clone();
        let leaf = chain.iter().skip(1).fold(root.clone(), |acc, g| intersect(&acc, g));
        if allows(&leaf, &probe) {
            prop_assert!(allows(&root, &probe), "root denies {:?}; leaf {:?}", probe, leaf);
        }
    }
}

fn shell_of(allow: &[&str], deny: &[&str]) -> Grants {
    Grants {
        shell: Some(ShellGrant {
            allow: allow.iter().map(|s| s.to_string()).collect(),
            deny: deny.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }),
        ..Grants::default()
    }
}

#[test]
fn a_child_cannot_drop_its_parents_shell_deny_list() {
    let parent = shell_of(&[], &["rm", "sudo"]);
    let child = shell_of(&[], &[]);
    for g in [attenuate(&parent, &child), intersect(&parent, &child)] {
        let deny = g.shell.clone().unwrap_or_default().deny;
        assert!(deny.contains(&"rm".to_string()) && deny.contains(&"sudo".to_string()));
        assert!(!allows(&g, &Probe::Shell("rm -rf /w".into())));
    }
}

#[test]
fn a_child_cannot_add_to_its_parents_shell_allow_list() {
    let parent = shell_of(&["git"], &[]);
    let child = shell_of(&["git", "rm", "curl"], &[]);
    for g in [attenuate(&parent, &child), intersect(&parent, &child)] {
        assert!(allows(&g, &Probe::Shell("git status".into())));
        assert!(!allows(&g, &Probe::Shell("rm x".into())));
        assert!(!allows(&g, &Probe::Shell("curl x".into())));
    }
}

#[test]
fn a_child_cannot_loosen_the_opaque_rule() {
    let mut parent = shell_of(&["ls"], &[]);
    let mut child = shell_of(&["ls"], &[]);
    if let Some(s) = parent.shell.as_mut() {
        s.opaque = OpaqueMode::Deny;
    }
    if let Some(s) = child.shell.as_mut() {
        s.opaque = OpaqueMode::Ask;
    }
    let g = intersect(&parent, &child);
    assert_eq!(g.shell.unwrap_or_default().opaque, OpaqueMode::Deny);
}

#[test]
fn a_child_cannot_widen_network_endpoints_or_reach_private_hosts() {
    let parent = Grants {
        network: Some(NetworkGrant {
            endpoints: vec![Endpoint {
                host: "api.example.com".into(),
                path_prefix: Some("/v1".into()),
                methods: Some(vec!["GET".into()]),
            }],
            allow_private: false,
        }),
        ..Grants::default()
    };
    let child = Grants {
        network: Some(NetworkGrant {
            endpoints: vec![Endpoint {
                host: "*".into(),
                path_prefix: None,
                methods: None,
            }],
            allow_private: true,
        }),
        ..Grants::default()
    };
    let g = intersect(&parent, &child);
    let net = g.network.clone().unwrap_or_default();
    assert!(!net.allow_private);
    assert!(allows(
        &g,
        &Probe::Net("GET", "https://api.example.com/v1/x".into())
    ));
    assert!(!allows(
        &g,
        &Probe::Net("POST", "https://api.example.com/v1/x".into())
    ));
    assert!(!allows(
        &g,
        &Probe::Net("GET", "https://api.example.com/v2".into())
    ));
    assert!(!allows(&g, &Probe::Net("GET", "https://other.org/".into())));
    assert!(!allows(&g, &Probe::Net("GET", "http://127.0.0.1/".into())));
}

#[test]
fn a_child_cannot_widen_fs_paths_by_root_home_or_climbing() {
    let parent = Grants {
        fs: Some(FsGrant {
            allow_read: vec!["/w/a".into()],
            allow_write: vec!["/w/a".into()],
        }),
        ..Grants::default()
    };
    for wider in ["/", "~", "/w", "../x", "/w/a/../../etc"] {
        let child = Grants {
            fs: Some(FsGrant {
                allow_read: vec![wider.into()],
                allow_write: vec![wider.into()],
            }),
            ..Grants::default()
        };
        for g in [attenuate(&parent, &child), intersect(&parent, &child)] {
            assert!(!allows(&g, &Probe::Fs("/x", false)), "{wider}: {g:?}");
            assert!(!allows(&g, &Probe::Fs("/h", false)), "{wider}: {g:?}");
            assert!(!allows(&g, &Probe::Fs("/w/b", true)), "{wider}: {g:?}");
        }
    }
}

#[test]
fn a_peer_that_sets_no_fs_grant_keeps_the_workspace_default() {
    // Its caller may read `/`, the peer's own config says nothing: the workspace only.
    let caller = Grants {
        fs: Some(FsGrant {
            allow_read: vec!["/".into()],
            allow_write: vec![],
        }),
        ..Grants::default()
    };
    let g = intersect(&caller, &Grants::default());
    assert!(allows(&g, &Probe::Fs("/w/a", false)));
    assert!(!allows(&g, &Probe::Fs("/x", false)));
}
