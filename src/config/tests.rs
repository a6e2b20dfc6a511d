use super::*;
use tackle_protocol::config::{BackendType, ProfileMode, SearchBackendType};
use tackle_protocol::ApprovalMode;

fn no_env(_: &str) -> Option<String> {
    None
}

fn parse_ok(text: &str) -> Config {
    parse(text, "test.yaml", &no_env, &[])
        .map(|(c, _)| c)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn parse_err(text: &str) -> String {
    match parse(text, "test.yaml", &no_env, &[]) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

fn example_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("config.example.yaml")
}

/// The example with every commented-out block back in (`# key: …` → `key: …`; `##` notes
/// stay comments): the whole reference, which must parse too.
fn uncommented(text: &str) -> String {
    text.lines()
        .map(|l| l.strip_prefix("# ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

fn example_text() -> String {
    let text =
        std::fs::read_to_string(example_path()).expect("config.example.yaml at the project root");
    uncommented(&text)
}

#[test]
fn the_example_file_as_it_stands_loads_without_a_warning_or_a_backend() {
    let text =
        std::fs::read_to_string(example_path()).expect("config.example.yaml at the project root");
    let (c, warnings) =
        parse(&text, "config.example.yaml", &no_env, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert!(warnings.is_empty(), "{warnings:?}");
    // Nothing that needs a key, a server or another program is switched on.
    assert!(c.backends.is_empty() && c.mcp_servers.is_empty() && c.channels.is_empty());
    // Uncommenting brings every block back, and that parses too (the tests below).
    assert_ne!(uncommented(&text), text);
}

#[test]
fn every_key_of_the_example_file_parses_into_typed_fields() {
    let text = example_text();
    let env = |k: &str| (k == "OPENROUTER_API_KEY").then(|| "sk-or-test".to_string());
    let (c, warnings) = parse(&text, "example", &env, &[]).expect("example parses");
    assert_eq!(c.state_dir.as_deref(), Some("~/.local/state/tackle"));
    assert_eq!(c.workspace.as_deref(), Some("."));
    assert_eq!(c.backends.len(), 3);
    assert_eq!(c.backends[0].kind, BackendType::Openai);
    assert_eq!(c.backends[0].api_key.as_deref(), Some("sk-or-test"));
    assert_eq!(c.backends[1].kind, BackendType::Anthropic);
    assert_eq!(c.backends[2].models[0].name, "qwen2.5:7b");
    let default = &c.agents[0];
    assert_eq!(default.name, "default");
    assert_eq!(default.max_iterations, Some(25));
    assert_eq!(default.tool_profile.as_deref(), Some("compact"));
    assert_eq!(default.extensions.disable, ["services"]);
    assert_eq!(
        default.workers[0].tools,
        ["web_search", "web_fetch", "read_file", "calculate"]
    );
    let skim = &c.agents[1];
    assert_eq!(
        skim.grants.shell.as_ref().map(|s| s.allow.clone()),
        Some(vec!["ls".to_string(), "cat".to_string()])
    );
    assert_eq!(c.security.auto_approved_tools, ["write_file", "edit_file"]);
    assert_eq!(
        c.screenshot.chromium_path.as_deref(),
        Some(tackle_protocol::config::ScreenshotConfig::DEFAULT_CHROMIUM_PATH)
    );
    let e = parse_err("screenshot:\n  chrome: /opt/chrome\n");
    assert!(e.contains("chrome"), "{e}");
    let shell = &c.security.tool_policies["shell"];
    assert_eq!(shell.approval, Some(ApprovalMode::UnlessAutoApproved));
    let shell_grant = shell
        .grants
        .as_ref()
        .and_then(|g| g.shell.clone())
        .expect("shell grant");
    assert_eq!(shell_grant.deny, ["rm", "sudo"]);
    let net = c.security.tool_policies["web_fetch"]
        .grants
        .as_ref()
        .and_then(|g| g.network.clone())
        .expect("net");
    assert_eq!(net.endpoints[1].host, "*.example.com");
    assert_eq!(net.endpoints[1].path_prefix.as_deref(), Some("/v1"));
    assert_eq!(
        net.endpoints[0].methods.as_deref(),
        Some(&["GET".to_string()][..])
    );
    let fs = c.security.tool_policies["read_file"]
        .grants
        .as_ref()
        .and_then(|g| g.fs.clone())
        .expect("fs");
    assert_eq!(fs.allow_read, ["~/notes", "."]);
    assert_eq!(
        c.tool_profiles["compact"].tools.get("github.*"),
        Some(ProfileMode::Summary)
    );
    assert_eq!(
        c.tool_profiles["compact"].tools.get("shell"),
        Some(ProfileMode::Hidden)
    );
    assert_eq!(c.mcp_servers["time"].command.as_deref(), Some("uvx"));
    assert_eq!(
        c.mcp_servers["remote"].url.as_deref(),
        Some("https://mcp.example.com/mcp")
    );
    assert_eq!(c.web_search.backends[0].kind, SearchBackendType::Searxng);
    assert_eq!(c.web_search.backends.len(), 3);
    assert!(!c.tools.coding_tools);
    assert_eq!(c.tools.output_limit_bytes, 51_200);
    assert_eq!(c.plugins.dirs, ["~/.config/tackle/plugins"]);
    assert_eq!(c.skills.dirs.len(), 1);
    assert_eq!(c.skills.registry_url.as_deref(), Some("https://clawhub.ai"));
    let services = &c.services;
    let whatsapp = services.whatsapp.as_ref().expect("services.whatsapp");
    assert_eq!(whatsapp.phone_number_id, "1234567890");
    assert_eq!(
        services
            .gsheets
            .as_ref()
            .and_then(|g| g.service_account_file.as_deref()),
        Some("~/.config/tackle/google-service-account.json")
    );
    let stripe = services.stripe.as_ref().expect("services.stripe");
    assert_eq!(stripe.api_base.as_deref(), Some("https://api.stripe.com"));
    assert_eq!(stripe.currency.as_deref(), Some("usd"));
    assert_eq!(
        services.r8r.as_ref().map(|r| r.base()).as_deref(),
        Some("http://127.0.0.1:8090")
    );
    // Unset variables are reported, not fatal.
    assert!(
        warnings.iter().any(|w| w.contains("ANTHROPIC_API_KEY")),
        "{warnings:?}"
    );
}

#[test]
fn unknown_keys_are_errors_naming_their_path() {
    let e = parse_err("security:\n  tool_policies:\n    shell:\n      grants:\n        shell:\n          alow: [ls]\n");
    assert!(
        e.contains("security.tool_policies.shell.grants.shell"),
        "{e}"
    );
    assert!(e.contains("alow"), "{e}");
    let top = parse_err("bogus: 1\n");
    assert!(top.contains("bogus"), "{top}");
}

#[test]
fn wrong_types_are_errors_naming_their_path() {
    let e = parse_err("tools:\n  coding_tools: maybe\n");
    assert!(e.contains("tools.coding_tools"), "{e}");
    let e = parse_err("agents:\n  - name: a\n    max_iterations: lots\n");
    assert!(e.contains("agents[0].max_iterations"), "{e}");
    let e = parse_err("security:\n  tool_policies:\n    shell:\n      approval: sometimes\n");
    assert!(e.contains("security.tool_policies.shell.approval"), "{e}");
}

#[test]
fn invalid_yaml_is_reported_with_the_file() {
    let e = parse_err("agents: [\n");
    assert!(e.contains("test.yaml"), "{e}");
}

#[test]
fn variables_are_interpolated_inside_values_only() {
    let env = |k: &str| match k {
        "KEY" => Some("a: b\nc".to_string()),
        "HOST" => Some("localhost".to_string()),
        _ => None,
    };
    let text = "backends:\n  - name: x\n    type: openai\n    api_key: \"${KEY}\"\n    api_base: http://${HOST}:1/${MISSING:-v1}\n";
    let (c, _) = parse(text, "t", &env, &[]).unwrap();
    assert_eq!(c.backends[0].api_key.as_deref(), Some("a: b\nc"));
    assert_eq!(
        c.backends[0].api_base.as_deref(),
        Some("http://localhost:1/v1")
    );
}

#[test]
fn env_overrides_set_section_keys_with_natural_types() {
    let vars = vec![
        ("TACKLE_TOOLS_CODING_TOOLS".to_string(), "true".to_string()),
        (
            "TACKLE_TOOLS_OUTPUT_LIMIT_BYTES".to_string(),
            "1000".to_string(),
        ),
        ("TACKLE_STATE_DIR".to_string(), "/tmp/st".to_string()),
        ("TACKLE_CONFIG".to_string(), "/ignored".to_string()),
        ("UNRELATED".to_string(), "x".to_string()),
    ];
    let (c, _) = parse("tools:\n  coding_tools: false\n", "t", &no_env, &vars).unwrap();
    assert!(c.tools.coding_tools);
    assert_eq!(c.tools.output_limit_bytes, 1000);
    assert_eq!(c.state_dir.as_deref(), Some("/tmp/st"));
}

#[test]
fn env_override_of_an_unknown_key_is_an_error() {
    let vars = vec![("TACKLE_TOOLS_CODNG_TOOLS".to_string(), "true".to_string())];
    let e = parse("", "t", &no_env, &vars)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("tools") && e.contains("codng_tools"), "{e}");
}

#[test]
fn agents_must_name_existing_backends_and_profiles() {
    let e = parse_err("agents:\n  - name: a\n    backend: nope\n");
    assert!(e.contains("agents[0].backend") && e.contains("nope"), "{e}");
    let e = parse_err("agents:\n  - name: a\n    tool_profile: nope\n");
    assert!(e.contains("agents[0].tool_profile"), "{e}");
}

#[test]
fn bad_profile_and_serve_tools_patterns_are_load_errors_naming_them() {
    let e = parse_err("tool_profiles:\n  p:\n    tools:\n      \"web_[\": brief\n");
    assert!(
        e.contains("tool_profiles.p.tools") && e.contains("web_["),
        "{e}"
    );
    let e = parse_err("mcp:\n  serve_tools: [get_time, \"bad{\"]\n");
    assert!(
        e.contains("mcp.serve_tools[1]") && e.contains("bad{"),
        "{e}"
    );
    let e = parse_err("tool_profiles:\n  p:\n    tools:\n      shell: tiny\n");
    assert!(e.contains("tool_profiles") && e.contains("tiny"), "{e}");
}

#[test]
fn mcp_servers_need_exactly_one_transport() {
    let e = parse_err("mcp_servers:\n  x:\n    args: [a]\n");
    assert!(e.contains("mcp_servers.x"), "{e}");
    let e = parse_err("mcp_servers:\n  x:\n    command: a\n    url: http://b\n");
    assert!(e.contains("exactly one"), "{e}");
}

#[test]
fn search_order_is_flag_then_env_then_xdg() {
    let env = |k: &str| match k {
        "TACKLE_CONFIG" => Some("/env.yaml".to_string()),
        "XDG_CONFIG_HOME" => Some("/xdg".to_string()),
        "HOME" => Some("/home/u".to_string()),
        _ => None,
    };
    assert_eq!(
        locate(Some(Path::new("/flag.yaml")), &env),
        Some((PathBuf::from("/flag.yaml"), true))
    );
    assert_eq!(locate(None, &env), Some((PathBuf::from("/env.yaml"), true)));
    let xdg_only = |k: &str| (k == "XDG_CONFIG_HOME").then(|| "/xdg".to_string());
    assert_eq!(
        locate(None, &xdg_only),
        Some((PathBuf::from("/xdg/tackle/config.yaml"), false))
    );
    let home_only = |k: &str| (k == "HOME").then(|| "/home/u".to_string());
    assert_eq!(
        locate(None, &home_only),
        Some((PathBuf::from("/home/u/.config/tackle/config.yaml"), false))
    );
}

#[test]
fn an_empty_or_missing_default_file_gives_defaults() {
    let c = parse_ok("");
    assert!(c.agents.is_empty());
    assert_eq!(c.tools.output_limit_bytes, 51_200);
}

#[test]
fn an_invalid_env_override_is_blamed_on_its_variable() {
    let vars = vec![("TACKLE_TOOLS_TIMEOUT_SECS".to_string(), "soon".to_string())];
    let e = parse(
        "tools:\n  coding_tools: true\n",
        "/etc/t.yaml",
        &no_env,
        &vars,
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(
        e.starts_with("environment variable TACKLE_TOOLS_TIMEOUT_SECS: `tools.timeout_secs`:"),
        "{e}"
    );
    assert!(!e.contains("/etc/t.yaml"), "{e}");
    // An invalid value in the file itself is still the file's.
    let e = parse(
        "tools:\n  timeout_secs: soon\n",
        "/etc/t.yaml",
        &no_env,
        &[],
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(
        e.starts_with("/etc/t.yaml:2:3: `tools.timeout_secs`:"),
        "{e}"
    );
}

#[test]
fn a_config_file_that_cannot_be_read_names_the_file_and_the_cause_once() {
    let dir = std::env::temp_dir().join(format!("tackle-no-such-dir-{}", std::process::id()));
    let path = dir.join("config.yaml");
    let e = load(Some(&path), None, &no_env, &[]).err();
    let Some(e) = e else {
        panic!("a missing explicit file loaded");
    };
    let shown = format!("{:#}", anyhow::Error::new(e));
    assert!(shown.contains(&path.display().to_string()), "{shown}");
    assert_eq!(shown.matches("No such file").count(), 1, "{shown}");
}

#[test]
fn memory_banks_parse_and_need_names_with_one_spelling() {
    let c = parse_ok("memory_banks:\n  project-alpha:\n    read: [skim]\n    write: [default]\n");
    let bank = &c.memory_banks["project-alpha"];
    assert_eq!(
        (bank.read.as_slice(), bank.write.as_slice()),
        (&["skim".to_string()][..], &["default".to_string()][..])
    );
    for bad in ["Project", "self", "\"a b\"", "\"../x\""] {
        let e = parse_err(&format!("memory_banks:\n  {bad}:\n    read: [a]\n"));
        assert!(e.contains("memory_banks."), "{bad}: {e}");
    }
    let e = parse_err("memory_banks:\n  team:\n    admin: [a]\n");
    assert!(e.contains("admin"), "{e}");
}

#[test]
fn the_example_file_grants_project_alpha_and_keeps_pinned_memory_out_of_prompts() {
    let text = example_text();
    let env = |k: &str| (k == "OPENROUTER_API_KEY").then(|| "sk-or-test".to_string());
    let (c, _) = parse(&text, "config.example.yaml", &env, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.memory_banks["project-alpha"].write, ["default"]);
    assert!(c.agents.iter().all(|a| !a.inject_pinned_memory));
}

#[test]
fn profile_rules_keep_the_order_they_were_written_in() {
    // The order decides ties between equally long globs, so it must survive the file.
    let c = parse_ok(
        "tool_profiles:\n  lean:\n    tools:\n      \"z*\": summary\n      \"*b\": hidden\n      \"a*\": brief\n",
    );
    let order: Vec<&str> = c.tool_profiles["lean"]
        .tools
        .iter()
        .map(|(p, _)| p.as_str())
        .collect();
    assert_eq!(order, ["z*", "*b", "a*"]);
    assert_eq!(c.tool_profiles["lean"].tools.0[1].1, ProfileMode::Hidden);
}

#[test]
fn the_example_file_documents_every_schedules_key_at_its_default() {
    let text = example_text();
    let env = |k: &str| (k == "OPENROUTER_API_KEY").then(|| "sk-or-test".to_string());
    let (c, _) = parse(&text, "config.example.yaml", &env, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        c.schedules,
        tackle_protocol::config::SchedulesConfig::default()
    );
    assert!(text.contains("catch_up: skip"));
    let e = parse_err("schedules:\n  catch_up: twice\n");
    assert!(e.contains("catch_up") || e.contains("twice"), "{e}");
}

#[test]
fn the_example_file_sets_the_github_service_and_the_devices() {
    let text = example_text();
    let env = |k: &str| (k == "GITHUB_TOKEN").then(|| "ghp-test".to_string());
    let (c, _) = parse(&text, "config.example.yaml", &env, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.services.github.token.as_deref(), Some("ghp-test"));
    assert_eq!(
        c.services.github.api_base.as_deref(),
        Some("https://api.github.com")
    );
    assert!(!format!("{:?}", c.services).contains("ghp-test"));
    assert_eq!(c.devices.android.serial.as_deref(), Some("emulator-5554"));
    assert!(!c.devices.android.allow_shell);
    assert_eq!(c.devices.hardware.baud, Some(115200));
    assert_eq!(c.devices.hardware.ports.len(), 1);
    assert_eq!(c.devices.hardware.ports[0].name, "bench-nucleo");
    let e = parse_err(
        "devices:\n  hardware:\n    ports:\n      - {name: /dev/ttyACM0, path: /dev/ttyACM0}\n",
    );
    assert!(e.contains("devices.hardware.ports[0].name"), "{e}");
    let e = parse_err("devices:\n  android:\n    shell: true\n");
    assert!(e.contains("devices.android"), "{e}");
}

#[test]
fn errors_name_the_file_line_and_column_and_suggest_the_key_meant() {
    let origin = "/home/me/.config/tackle/config.yaml";
    let err = |text: &str| match parse(text, origin, &no_env, &[]) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    };
    let e = err("agents:\n  - name: a\n    max_iteration: 5\n");
    assert!(e.starts_with(&format!("{origin}:3:5: ")), "{e}");
    assert!(e.contains("did you mean `max_iterations`?"), "{e}");
    assert!(!e.contains("expected one of"), "{e}");

    let e = err("agents:\n  - name: a\n    max_iterations: lots\n");
    assert!(e.starts_with(&format!("{origin}:3:5: ")), "{e}");
    assert!(e.contains("expected a whole number ≥ 0"), "{e}");
    assert!(!e.contains("u32"), "{e}");

    let e = err("stat_dir: /tmp\n");
    assert!(e.starts_with(&format!("{origin}:1:1: ")), "{e}");
    assert!(e.contains("did you mean `state_dir`?"), "{e}");

    // A cross-reference checked after parsing is located too.
    let e = err("agents:\n  - name: a\n    backend: nowhere\n");
    assert!(e.starts_with(&format!("{origin}:3:5: ")), "{e}");

    // YAML that does not parse: the snippet is headed by the file, not `<input>`.
    let e = err("agents:\n  - name: \"unclosed\n");
    assert!(e.contains(origin) && !e.contains("<input>"), "{e}");
}

#[test]
fn an_untrusted_path_that_is_not_a_glob_is_a_load_error_naming_it() {
    let e = parse_err("security:\n  untrusted_paths: [vendor, \"docs/[x\"]\n");
    assert!(e.contains("security.untrusted_paths[1]"), "{e}");
    let c = parse_ok("security:\n  untrusted_paths: [vendor, \"third_party/**\"]\n");
    assert_eq!(c.security.untrusted_paths, ["vendor", "third_party/**"]);
}

mod keys;
