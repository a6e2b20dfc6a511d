//! Property tests: the guards never panic, redaction hides what it finds, and attenuation only
//! narrows. `TACKLE_FUZZ_CASES=100000 cargo nextest run -p tackle-policy --test properties`
//! runs a longer fuzzing pass (the default is 256 cases per property).

use proptest::prelude::*;
use std::path::Path;
use tackle_policy::grants::attenuate;
use tackle_policy::{net, path, secrets::SecretRedactor, shell};
use tackle_protocol::{Endpoint, FsGrant, Grants, NetworkGrant, ShellGrant};

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

/// Shell-looking text: words, quotes, operators and expansions in random order.
fn shellish() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("rm"),
        Just("ls"),
        Just("git"),
        Just("push"),
        Just("-rf"),
        Just(" "),
        Just(";"),
        Just("|"),
        Just("&&"),
        Just("||"),
        Just("&"),
        Just("\n"),
        Just("("),
        Just(")"),
        Just("{"),
        Just("}"),
        Just("$("),
        Just("`"),
        Just("'"),
        Just("\""),
        Just("\\"),
        Just("$"),
        Just("${"),
        Just("<("),
        Just(">"),
        Just("<<"),
        Just("EOF"),
        Just("if"),
        Just("then"),
        Just("fi"),
        Just("for"),
        Just("do"),
        Just("done"),
        Just("env"),
        Just("sudo"),
        Just("sh -c"),
        Just("eval"),
        Just("xargs"),
        Just("find -exec"),
        Just("*"),
        Just("="),
        Just("$(("),
        Just("$'\\x72'"),
        Just("é"),
        Just("\u{0}"),
    ];
    prop::collection::vec(token, 0..40).prop_map(|t| t.concat())
}

fn grant() -> ShellGrant {
    ShellGrant {
        allow: vec!["git".into(), "ls".into()],
        deny: vec!["rm".into(), "git push".into()],
        ..Default::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn shell_analyser_never_panics_on_any_text(line in any::<String>()) {
        let _ = shell::check_shell(&line, &grant());
        let _ = shell::commands(&line);
        let _ = shell::check_argv(&[line.clone(), "-c".into(), line], &grant());
    }

    /// Inside arithmetic the analyser reads variable names character by character; any text
    /// there (letters outside ASCII once made it loop until memory ran out) ends in a decision.
    #[test]
    fn shell_analyser_ends_on_any_text_inside_arithmetic(inner in any::<String>()) {
        for line in [
            format!("echo $(({inner}))"),
            format!("echo $[{inner}]"),
            format!("(( {inner} ))"),
            format!("for (( {inner}; ; )); do :; done"),
            format!("a[{inner}]=1"),
        ] {
            let d = shell::check_shell(&line, &grant());
            prop_assert!(!d.why.is_empty());
        }
    }

    #[test]
    fn shell_analyser_never_panics_on_shell_like_text(line in shellish()) {
        let d = shell::check_shell(&line, &grant());
        prop_assert!(!d.why.is_empty());
        let _ = shell::commands(&line);
    }

    /// A here-document operator with no word after it is a syntax error to bash; the
    /// tokenizer once looped on some of them inside `$(…)`, allocating until memory ran out.
    #[test]
    fn here_document_operators_without_a_word_are_refused(
        before in shellish(),
        dash in prop_oneof![Just(""), Just("-")],
        blank in prop_oneof![Just(""), Just(" "), Just("\t"), Just("  ")],
        next in prop_oneof![Just("("), Just(")"), Just(";"), Just("|"), Just("&"), Just("\n"), Just("")],
        after in shellish(),
        // Input ending inside a construct is what made the tokenizer loop.
        open in prop_oneof![Just(""), Just("${"), Just("$("), Just("$(("), Just("`")],
    ) {
        let line = format!("echo $({before}cat <<{dash}{blank}{next} {after}{open}");
        let d = shell::check_shell(&line, &ShellGrant::default());
        prop_assert!(d.is_denied(), "{:?} was not refused: {}", line, d.why);
        let _ = shell::commands(&line);
    }

    #[test]
    fn url_guard_never_panics(url in any::<String>(), host in "[a-z0-9.:\\[\\]%@-]{0,30}", method in "[A-Za-z]{0,8}") {
        let g = NetworkGrant { endpoints: vec![Endpoint { host: "*.example.com".into(), path_prefix: Some("/v1".into()), methods: Some(vec!["GET".into()]) }], allow_private: false };
        let _ = net::check_url(&method, &url, &g);
        let _ = net::check_url(&method, &format!("http://{host}/x"), &g);
        let _ = net::check_url(&method, &format!("https://{host}/v1/{url}"), &NetworkGrant::default());
    }

    #[test]
    fn every_ip_gets_a_decision_and_blocked_ones_are_denied(bits in any::<u128>(), v4 in any::<u32>()) {
        for ip in [std::net::IpAddr::V6(bits.into()), std::net::IpAddr::V4(v4.into())] {
            let d = net::check_ip(ip, false);
            prop_assert_eq!(d.is_denied(), net::blocked_range(ip).is_some());
        }
    }

    #[test]
    fn redactor_hides_every_token_it_knows(
        before in any::<String>(),
        after in any::<String>(),
        secret in prop_oneof![
            "sk-[A-Za-z0-9]{24,40}",
            "sk-ant-[A-Za-z0-9_-]{24,40}",
            "gh[pousr]_[A-Za-z0-9]{36}",
            "github_pat_[A-Za-z0-9_]{30,60}",
            "AKIA[A-Z0-9]{16}",
            "xox[abprs]-[A-Za-z0-9-]{12,30}",
            "AIza[0-9A-Za-z_-]{35}",
            "sk_live_[0-9A-Za-z]{16,30}",
            "eyJ[A-Za-z0-9_-]{8,20}\\.eyJ[A-Za-z0-9_-]{8,20}\\.[A-Za-z0-9_-]{8,40}",
        ],
    ) {
        let text = format!("{before} {secret}\n{after}");
        let out = redactor().redact(&text);
        prop_assert!(std::str::from_utf8(out.as_bytes()).is_ok());
        prop_assert!(!out.contains(&secret), "{} survived in {:?}", secret, out);
    }

    #[test]
    fn redactor_never_panics_on_any_text(text in any::<String>()) {
        let out = redactor().redact(&text);
        prop_assert!(out.len() <= text.len() + 64 * text.len().max(1));
    }

    #[test]
    fn shell_attenuation_only_narrows(
        p_allow in prop::collection::vec(rule(), 0..3), p_deny in prop::collection::vec(rule(), 0..2),
        c_allow in prop::collection::vec(rule(), 0..3), c_deny in prop::collection::vec(rule(), 0..2),
        p_set in any::<bool>(), c_set in any::<bool>(),
        line in prop::collection::vec(prop_oneof![Just("git"), Just("ls"), Just("rm"), Just("push"), Just("status"), Just("-la")], 1..4),
    ) {
        let p = Grants { shell: p_set.then_some(ShellGrant { allow: p_allow, deny: p_deny, ..Default::default() }), ..Grants::default() };
        let c = Grants { shell: c_set.then_some(ShellGrant { allow: c_allow, deny: c_deny, ..Default::default() }), ..Grants::default() };
        let a = attenuate(&p, &c);
        // A kind the child leaves unset is inherited from the parent.
        let c = Grants { shell: c.shell.or(p.shell.clone()), ..c };
        let line = line.join(" ");
        let allowed = |g: &Grants| shell::check_shell(&line, &g.shell.clone().unwrap_or_default()).is_allowed();
        if allowed(&a) {
            prop_assert!(allowed(&p), "parent denies {:?} but attenuated {:?} allows", line, a);
            prop_assert!(allowed(&c), "child denies {:?} but attenuated {:?} allows", line, a);
        }
    }

    #[test]
    fn fs_attenuation_only_narrows(
        p in prop::option::of(fs_grant()), c in prop::option::of(fs_grant()),
        target in prop_oneof![Just("/w"), Just("/w/a"), Just("/w/a/x"), Just("/w/ab"), Just("/h/a"), Just("/h"), Just("/x"), Just("/w/b"), Just("/")],
        write in any::<bool>(),
    ) {
        let pg = Grants { fs: p, ..Grants::default() };
        let cg = Grants { fs: c, ..Grants::default() };
        let a = attenuate(&pg, &cg);
        let cg = Grants { fs: cg.fs.or(pg.fs.clone()), ..cg };
        let access = if write { path::Access::Write } else { path::Access::Read };
        let allowed = |g: &Grants| {
            let roots = path::roots(g.fs.as_ref(), Path::new("/w"), Some(Path::new("/h")));
            path::check_path(Path::new(target), access, &roots).is_allowed()
        };
        if allowed(&a) {
            prop_assert!(allowed(&pg), "parent {:?} denies {} but attenuated {:?} allows", pg.fs, target, a.fs);
            prop_assert!(allowed(&cg), "child {:?} denies {} but attenuated {:?} allows", cg.fs, target, a.fs);
        }
    }

    #[test]
    fn network_attenuation_only_narrows(
        p in prop::option::of(network_grant()), c in prop::option::of(network_grant()),
        host in prop_oneof![Just("example.com"), Just("a.example.com"), Just("b.a.example.com"), Just("other.org"), Just("localhost"), Just("127.0.0.1")],
        path in prop_oneof![Just("/"), Just("/v1"), Just("/v1/x"), Just("/v10"), Just("/v2/y")],
        method in prop_oneof![Just("GET"), Just("POST"), Just("get")],
    ) {
        let pg = Grants { network: p, ..Grants::default() };
        let cg = Grants { network: c, ..Grants::default() };
        let a = attenuate(&pg, &cg);
        let cg = Grants { network: cg.network.or(pg.network.clone()), ..cg };
        let url = format!("https://{host}{path}");
        let allowed = |g: &Grants| net::check_url(method, &url, &g.network.clone().unwrap_or_default()).is_ok();
        if allowed(&a) {
            prop_assert!(allowed(&pg), "parent denies {} but attenuated {:?} allows", url, a.network);
            prop_assert!(allowed(&cg), "child denies {} but attenuated {:?} allows", url, a.network);
        }
    }
}

/// One redactor for all cases: building one compiles every pattern.
fn redactor() -> &'static SecretRedactor {
    static R: std::sync::OnceLock<SecretRedactor> = std::sync::OnceLock::new();
    R.get_or_init(|| SecretRedactor::new(vec!["Exact-Config-Secret-42".into()]))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: config().cases.min(64), ..config() })]

    /// Exact config secrets need their own redactor per case, so fewer cases run.
    #[test]
    fn redactor_hides_exact_config_secrets(
        before in any::<String>(), after in any::<String>(), secret in "[A-Za-z0-9!#%&*+=?^_~-]{8,30}",
        extra in prop::collection::vec(any::<String>(), 0..3),
    ) {
        let mut extras = extra;
        extras.push(secret.clone());
        let red = SecretRedactor::new(extras);
        let text = format!("{before}{secret}{after}");
        let out = red.redact(&text);
        prop_assert!(!out.contains(&secret), "{} survived in {:?}", secret, out);
    }
}

fn rule() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("git"),
        Just("ls"),
        Just("rm"),
        Just("git push"),
        Just("git status"),
        Just("ls -la"),
        Just("/bin/ls")
    ]
    .prop_map(String::from)
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
        Just("a/b"),
        Just("../x"),
        Just("/"),
        Just("/w/a/../b"),
        Just("~root"),
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
        Just("*.a.example.com"),
        Just("*"),
        Just("other.org"),
        Just("localhost")
    ];
    let prefix = prop::option::of(prop_oneof![Just("/v1"), Just("/v1/x"), Just("/v2")]);
    let methods = prop::option::of(prop_oneof![
        Just(vec!["GET"]),
        Just(vec!["POST"]),
        Just(vec!["get", "POST"])
    ]);
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
