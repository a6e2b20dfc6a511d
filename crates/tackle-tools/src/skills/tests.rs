//! The three sources together: directories, the agent's own store, granted banks; their
//! precedence, `skill_save`, and the grant boundary (docs/decisions/0037-skill-sources.md).

use super::{extension, name_key, SkillDir, SkillsSettings, StoredSkills};
use crate::mock_host::MockHost;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use tackle_protocol::config::MemoryBankConfig;
use tackle_protocol::{ErrorKind, Tool, ToolContext, ToolError, ToolOutput};
use tackle_store::{MemoryAccess, NewSkill, Store};

struct Setup {
    _dir: tempfile::TempDir,
    store: Store,
    banks: BTreeMap<String, MemoryBankConfig>,
    tools: Vec<Arc<dyn Tool>>,
}

/// `team`: `reader` may read it, `writer` may write it; `outsider` has no grant. The user
/// skills directory holds `deploy`.
fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user");
    std::fs::create_dir_all(user.join("deploy")).unwrap();
    std::fs::write(
        user.join("deploy/SKILL.md"),
        "---\nname: deploy\ndescription: from disk\n---\nDISK-DEPLOY\n",
    )
    .unwrap();
    let store = Store::open_in_memory().unwrap();
    let mut banks = BTreeMap::new();
    banks.insert(
        "team".to_string(),
        MemoryBankConfig {
            read: vec!["reader".into()],
            write: vec!["writer".into()],
        },
    );
    let mut settings = SkillsSettings::new(Arc::new(tackle_host::DiskSkillDirs));
    settings.dirs = vec![SkillDir {
        label: "user".into(),
        path: user,
    }];
    settings.stored = Some(StoredSkills {
        store: store.clone(),
        banks: banks.clone(),
    });
    Setup {
        _dir: dir,
        store,
        banks,
        tools: extension(settings).tools(),
    }
}

impl Setup {
    fn cx(&self, agent: &str) -> ToolContext {
        let mut cx = Arc::new(MockHost::new()).context();
        cx.agent = agent.into();
        cx
    }

    async fn call(&self, agent: &str, tool: &str, args: Value) -> Result<ToolOutput, ToolError> {
        let t = self
            .tools
            .iter()
            .find(|t| t.spec().name == tool)
            .unwrap()
            .clone();
        t.call(args, &self.cx(agent)).await
    }

    /// Writes straight into the store, past `skill_save`'s refusal of taken names, as an
    /// older save would have before a same-named skill appeared elsewhere.
    async fn plant(&self, agent: &str, place: Option<&str>, name: &str, body: &str) {
        let access = MemoryAccess::from_grants(agent, &self.banks, &[]);
        let skill = NewSkill {
            name: name.into(),
            key: name_key(name),
            description: format!("{name} from {}", place.unwrap_or("self")),
            meta: "{}".into(),
            body: body.into(),
        };
        self.store.save_skill(&access, place, &skill).await.unwrap();
    }

    async fn names(&self, agent: &str) -> Vec<(String, String)> {
        let out = self.call(agent, "skill_list", json!({})).await.unwrap();
        out.structured
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["name"].as_str().unwrap().to_string(),
                    r["source"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[tokio::test]
async fn disk_wins_then_the_agents_own_store_then_its_banks() {
    let s = setup();
    s.plant("writer", None, "deploy", "OWN-DEPLOY").await;
    s.plant("writer", None, "runbook", "OWN-RUNBOOK").await;
    s.plant("writer", Some("team"), "deploy", "TEAM-DEPLOY")
        .await;
    s.plant("writer", Some("team"), "runbook", "TEAM-RUNBOOK")
        .await;
    s.plant("writer", Some("team"), "oncall", "TEAM-ONCALL")
        .await;

    assert_eq!(
        s.names("writer").await,
        pairs(&[
            ("deploy", "user"),
            ("runbook", "own store (agent writer)"),
            ("oncall", "bank team"),
        ])
    );
    let list = s.call("writer", "skill_list", json!({})).await.unwrap();
    let rows = list.structured.unwrap();
    let shadows: Vec<&str> = rows[0]["shadows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["source"].as_str().unwrap())
        .collect();
    assert_eq!(shadows, ["own store (agent writer)", "bank team"]);
    assert_eq!(rows[1]["shadows"][0]["source"], "bank team");

    for (name, want) in [
        ("deploy", "DISK-DEPLOY"),
        ("runbook", "OWN-RUNBOOK"),
        ("oncall", "TEAM-ONCALL"),
    ] {
        let shown = s
            .call("writer", "skill_show", json!({"name": name}))
            .await
            .unwrap();
        assert!(shown.content.contains(want), "{name}: {}", shown.content);
    }
    // A reader of the bank without skills of its own gets the bank's `runbook`.
    let shown = s
        .call("reader", "skill_show", json!({"name": "runbook"}))
        .await
        .unwrap();
    assert!(shown.content.contains("TEAM-RUNBOOK"), "{}", shown.content);
    assert!(
        shown.content.contains("Source: bank team"),
        "{}",
        shown.content
    );
}

#[tokio::test]
async fn skill_save_writes_the_own_store_and_updates_it_and_refuses_a_taken_name() {
    let s = setup();
    let saved = s
        .call(
            "alice",
            "skill_save",
            json!({"name": "notes", "description": "How I take notes", "body": "NOTES-V1", "triggers": ["notes"]}),
        )
        .await
        .unwrap();
    assert!(
        saved.content.contains("own store (agent alice)"),
        "{}",
        saved.content
    );
    let list = s.call("alice", "skill_list", json!({})).await.unwrap();
    assert!(
        list.content
            .contains("notes — How I take notes (triggers: notes)"),
        "{}",
        list.content
    );
    assert!(
        !list.content.contains("NOTES-V1"),
        "a listing shows no body"
    );

    let again = s
        .call(
            "alice",
            "skill_save",
            json!({"content": "---\nname: Notes\ndescription: v2\n---\nNOTES-V2\n"}),
        )
        .await
        .unwrap();
    assert_eq!(again.structured.unwrap()["replaced"], true);
    let shown = s
        .call("alice", "skill_show", json!({"name": "notes"}))
        .await
        .unwrap();
    assert!(shown.content.contains("NOTES-V2"), "{}", shown.content);

    // The operator's `deploy` cannot be taken over, in any spelling.
    for name in ["deploy", "Deploy", "dep-loy"] {
        let err = s
            .call("alice", "skill_save", json!({"name": name, "body": "EVIL"}))
            .await
            .unwrap_err();
        assert!(err.message.contains("already has the name"), "{err}");
    }
    let shown = s
        .call("alice", "skill_show", json!({"name": "deploy"}))
        .await
        .unwrap();
    assert!(shown.content.contains("DISK-DEPLOY"), "{}", shown.content);
    // Another agent's own store is its own.
    assert_eq!(s.names("bob").await, pairs(&[("deploy", "user")]));
}

#[tokio::test]
async fn a_bank_is_listed_read_and_written_only_through_its_grant() {
    let s = setup();
    s.call(
        "writer",
        "skill_save",
        json!({"name": "runbook", "description": "team runbook", "body": "TEAM-SECRET-BODY", "bank": "team"}),
    )
    .await
    .unwrap();
    assert!(s
        .names("reader")
        .await
        .contains(&("runbook".to_string(), "bank team".to_string())));

    // Read-only: cannot save into the bank, nor update its skill.
    let err = s
        .call(
            "reader",
            "skill_save",
            json!({"name": "runbook", "body": "HIJACK", "bank": "team"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Denied, "{err}");

    // No grant: not listed, not found by name or search, not shown, not written.
    assert_eq!(s.names("outsider").await, pairs(&[("deploy", "user")]));
    let search = s
        .call("outsider", "skill_search", json!({"query": "runbook"}))
        .await
        .unwrap();
    assert!(!search.content.contains("runbook —"), "{}", search.content);
    let err = s
        .call("outsider", "skill_show", json!({"name": "runbook"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound);
    assert!(!err.message.contains("TEAM-SECRET-BODY"));
    let err = s
        .call(
            "outsider",
            "skill_save",
            json!({"name": "runbook", "body": "HIJACK", "bank": "team"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound, "{err}");
    // Its own `runbook` stays its own and does not reach the bank.
    s.call(
        "outsider",
        "skill_save",
        json!({"name": "runbook", "body": "OUTSIDER-OWN"}),
    )
    .await
    .unwrap();
    let shown = s
        .call("reader", "skill_show", json!({"name": "runbook"}))
        .await
        .unwrap();
    assert!(
        shown.content.contains("TEAM-SECRET-BODY"),
        "{}",
        shown.content
    );

    // An agent started by the outsider reaches no more than the outsider does.
    let mut cx = s.cx("writer");
    cx.ancestors = vec!["outsider".into()];
    let list = s
        .tools
        .iter()
        .find(|t| t.spec().name == "skill_list")
        .unwrap()
        .call(json!({}), &cx)
        .await
        .unwrap();
    assert!(!list.content.contains("team runbook"), "{}", list.content);
}

#[tokio::test]
async fn skill_save_refuses_what_a_skill_file_on_disk_may_not_be() {
    let s = setup();
    let big = "x".repeat(70 * 1024);
    for (args, why) in [
        (json!({"body": "no name"}), "`name` and `body` are required"),
        (
            json!({"name": "a\u{7}b", "body": "b"}),
            "control characters",
        ),
        (json!({"name": "---", "body": "b"}), "only separators"),
        (
            json!({"content": "# no front matter"}),
            "no YAML front matter",
        ),
        (json!({"name": "big", "body": big}), "at most"),
        (
            json!({"content": "---\nname: x\n---\n", "name": "y"}),
            "not both",
        ),
        (
            json!({"name": "x", "body": "b", "extra": 1}),
            "unknown field",
        ),
    ] {
        let err = s.call("alice", "skill_save", args).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArguments, "{err}");
        assert!(err.message.contains(why), "{why}: {err}");
    }
    assert_eq!(s.names("alice").await, pairs(&[("deploy", "user")]));
}

#[test]
fn saving_into_a_bank_or_the_own_store_is_a_sink() {
    let s = setup();
    let save = s
        .tools
        .iter()
        .find(|t| t.spec().name == "skill_save")
        .unwrap();
    assert!(save
        .sink(&json!({"bank": "team"}))
        .unwrap()
        .contains("`team`"));
    assert!(save.sink(&json!({})).is_some());
}

/// The property names and `required` lists the skill tools' schemas always had (written out
/// here, since models and MCP clients rely on them), and refusal of an unknown or a missing
/// field with `invalid_arguments`.
mod contract {
    use super::setup;
    use crate::args::contract::{assert_closed, assert_refusals, named};
    use serde_json::json;
    use std::sync::Arc;
    use tackle_protocol::Tool;

    fn tool(name: &str) -> Arc<dyn Tool> {
        named(setup().tools, name)
    }

    #[test]
    fn the_schemas_name_the_properties_and_requirements_they_always_had() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            ("skill_list", &[], &[]),
            ("skill_search", &["query"], &["query"]),
            ("skill_show", &["name", "skill"], &[]),
            ("find_skills", &["query", "limit"], &["query"]),
            ("install_skill", &["slug", "sha256"], &["slug"]),
            (
                "skill_save",
                &[
                    "name",
                    "description",
                    "body",
                    "triggers",
                    "requires_tools",
                    "content",
                    "bank",
                ],
                &[],
            ),
        ];
        assert_closed(tool, cases);
        let install = tool("install_skill").spec().parameters;
        assert_eq!(
            install["properties"]["slug"]["pattern"],
            json!("^[A-Za-z0-9_-]+$")
        );
        assert_eq!(
            install["properties"]["sha256"]["pattern"],
            json!("^[0-9A-Fa-f]{64}$")
        );
    }

    #[tokio::test]
    async fn an_unknown_or_a_missing_field_is_refused() {
        let cases = [
            ("skill_list", json!({}), &[][..]),
            ("skill_search", json!({"query": "git"}), &["query"]),
            ("skill_show", json!({"name": "deploy"}), &[]),
            ("find_skills", json!({"query": "pdf"}), &["query"]),
            ("install_skill", json!({"slug": "pdf-forms"}), &["slug"]),
            (
                "skill_save",
                json!({"content": "---\nname: x\n---\nbody"}),
                &[],
            ),
        ];
        for (name, valid, required) in cases {
            assert_refusals(&*tool(name), valid, required).await;
        }
    }
}
