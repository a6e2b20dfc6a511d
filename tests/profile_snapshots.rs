//! Every built-in tool rendered under each profile mode for both wire formats, checked
//! against `tests/snapshots/tool_profiles.json`, with the request size per mode (the figures
//! in BENCHMARKS.md). Regenerate after an intended change:
//! `UPDATE_SNAPSHOTS=1 cargo nextest run --test profile_snapshots`.

use serde_json::{json, Map, Value};
use std::sync::Arc;
use tackle_agent::{Registry, ToolProfile};
use tackle_llm::{request_body, ChatRequest};
use tackle_protocol::config::{BackendType, ProfileMode, ToolProfileConfig};
use tackle_protocol::message::Message;
use tackle_protocol::Extension;
use tackle_tools::{core, dev, fs, media, memory, schedule, services, skills, system, web};

const SNAPSHOT: &str = "tests/snapshots/tool_profiles.json";

/// The built-ins a default agent with `coding_tools` has, skills and schedules included (with no
/// skill directories: the tools' definitions do not depend on what is installed).
fn builtins() -> Registry {
    let store = tackle_store::Store::open_in_memory().expect("store");
    let extensions: Vec<Arc<dyn Extension>> = vec![
        system::extension(),
        core::extension(),
        fs::extension(true),
        web::extension(web::WebSettings::default()),
        dev::extension(dev::DevSettings {
            github_token: None,
            github_api_base: None,
        }),
        memory::extension(memory::MemorySettings {
            store: store.clone(),
            banks: Default::default(),
        }),
        media::extension(media::MediaSettings::default()),
        skills::extension(skills::SkillsSettings::new(Arc::new(
            tackle_host::DiskSkillDirs,
        ))),
        schedule::extension(schedule::ScheduleSettings {
            store,
            zone: schedule::Zone::default(),
            min_interval: std::time::Duration::from_secs(60),
            agents: vec![],
            schedule_for: Default::default(),
        }),
        services::extension(services::ServicesSettings::default()),
    ];
    Registry::new(extensions).expect("registry")
}

fn profile(mode: ProfileMode) -> ToolProfile {
    let cfg = ToolProfileConfig {
        default: mode,
        tools: Default::default(),
    };
    ToolProfile::compile("snapshot", &cfg).expect("compiles")
}

fn body(kind: BackendType, registry: &Registry, mode: ProfileMode) -> Value {
    let mut req = ChatRequest::new("model", vec![Message::user("hi")]);
    req.stream = false;
    req.tools = tackle_agent::profiles::render(&registry.specs(), &profile(mode));
    request_body(kind, &req)
}

fn rendered() -> Value {
    let registry = builtins();
    let mut sizes = Map::new();
    let mut tools = Map::new();
    for (kind, kind_name) in [
        (BackendType::Openai, "openai"),
        (BackendType::Anthropic, "anthropic"),
    ] {
        let mut kind_sizes = Map::new();
        let mut kind_tools = Map::new();
        for mode in [
            ProfileMode::Full,
            ProfileMode::Brief,
            ProfileMode::Summary,
            ProfileMode::Hidden,
        ] {
            let name = tackle_agent::profiles::mode_name(mode);
            let b = body(kind, &registry, mode);
            let bytes = serde_json::to_vec(&b).expect("serialise").len();
            kind_sizes.insert(name.into(), json!(bytes));
            kind_tools.insert(
                name.into(),
                b.get("tools").cloned().unwrap_or(Value::Array(vec![])),
            );
        }
        sizes.insert(kind_name.into(), Value::Object(kind_sizes));
        tools.insert(kind_name.into(), Value::Object(kind_tools));
    }
    json!({
        "tool_count": registry.specs().len(),
        "request_bytes": sizes,
        "tools": tools,
    })
}

#[test]
fn every_builtin_under_every_profile_matches_the_snapshot() {
    let got = rendered();
    println!(
        "request bytes per profile: {}",
        serde_json::to_string(&got["request_bytes"]).expect("serialise")
    );
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(SNAPSHOT);
    let text = serde_json::to_string_pretty(&got).expect("serialise") + "\n";
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, text).expect("write snapshot");
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{SNAPSHOT}: {e}; regenerate with UPDATE_SNAPSHOTS=1"));
    assert!(
        want == text,
        "tool definitions changed; review and regenerate with UPDATE_SNAPSHOTS=1 \
         cargo nextest run --test profile_snapshots"
    );
}

#[test]
fn each_mode_is_smaller_than_the_one_before_for_both_formats() {
    let got = rendered();
    for kind in ["openai", "anthropic"] {
        let s = &got["request_bytes"][kind];
        let n = |m: &str| s[m].as_u64().expect("a size");
        assert!(n("full") > n("brief"), "{kind}: {s}");
        assert!(n("brief") > n("summary"), "{kind}: {s}");
        assert!(n("summary") > n("hidden"), "{kind}: {s}");
        assert!(got["tools"][kind]["hidden"]
            .as_array()
            .is_some_and(Vec::is_empty));
    }
}

#[test]
fn describe_tool_is_sent_in_full_under_every_shown_mode() {
    let got = rendered();
    for kind in ["openai", "anthropic"] {
        let full = got["tools"][kind]["full"].as_array().expect("tools");
        let find = |list: &Vec<Value>| {
            list.iter()
                .find(|t| t.to_string().contains("\"describe_tool\""))
                .cloned()
                .expect("describe_tool sent")
        };
        let want = find(full);
        for mode in ["brief", "summary"] {
            let list = got["tools"][kind][mode].as_array().expect("tools");
            assert_eq!(find(list), want, "{kind}/{mode}");
        }
    }
}

#[test]
fn brief_and_summary_leave_no_parameter_descriptions() {
    let got = rendered();
    for (kind, mode) in [
        ("openai", "brief"),
        ("openai", "summary"),
        ("anthropic", "brief"),
        ("anthropic", "summary"),
    ] {
        let tools = got["tools"][kind][mode].as_array().expect("tools");
        // `describe_tool` stays full under every default (docs/decisions/0012).
        for t in tools
            .iter()
            .filter(|t| !t.to_string().contains("\"describe_tool\""))
        {
            let params = t
                .get("parameters")
                .or_else(|| t.pointer("/function/parameters"))
                .or_else(|| t.get("input_schema"))
                .expect("a schema");
            let props = params.get("properties").and_then(Value::as_object);
            for (name, p) in props.into_iter().flatten() {
                assert!(
                    p.get("description").is_none(),
                    "{kind}/{mode}: {name} in {t}"
                );
            }
        }
    }
}
