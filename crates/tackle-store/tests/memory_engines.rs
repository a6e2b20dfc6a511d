//! Memory on both engines: the SQLite file, and a shared PostgreSQL database when one is
//! reachable (`state_url: postgres://…`). Every case runs on each engine and expects the
//! same behaviour: the same hits for the same queries, the same grants and refusals, the
//! same limits; and two daemons over one database see each other's bank writes.

mod engines;

use engines::engines;
use std::collections::BTreeMap;
use tackle_protocol::config::MemoryBankConfig;
use tackle_store::{
    BankPerm, LongtermSet, MemoryAccess, MemoryHit, NewSkill, RecallQuery, StoreError,
    MAX_SKILLS_PER_PLACE, MAX_STORED_SKILL_BYTES, PINNED,
};

fn q(query: &str) -> RecallQuery {
    RecallQuery {
        query: query.into(),
        tags: vec![],
        limit: 10,
    }
}

fn tagged(query: &str, tags: &[&str]) -> RecallQuery {
    RecallQuery {
        query: query.into(),
        tags: strings(tags),
        limit: 10,
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn keys(hits: &[MemoryHit]) -> Vec<String> {
    hits.iter().map(|h| h.key.clone()).collect()
}

fn sorted_keys(hits: &[MemoryHit]) -> Vec<String> {
    let mut k = keys(hits);
    k.sort();
    k
}

fn banks(entries: &[(&str, &[&str], &[&str])]) -> BTreeMap<String, MemoryBankConfig> {
    entries
        .iter()
        .map(|(name, read, write)| {
            (
                name.to_string(),
                MemoryBankConfig {
                    read: strings(read),
                    write: strings(write),
                },
            )
        })
        .collect()
}

#[tokio::test]
async fn remember_recall_get_count_and_forget() {
    for engine in engines() {
        let e = engine.name;
        let store = engine.open();
        let me = MemoryAccess::own_only("default");
        assert!(store.recall(&me, None, &q("")).await.unwrap().is_empty());
        assert_eq!(store.memory_count(&me, None).await.unwrap(), 0);
        for (k, v) in [("one", "first"), ("two", "second"), ("three", "third")] {
            let hit = store.remember(&me, None, k, v, &[]).await.unwrap();
            assert_eq!((hit.bank.as_str(), hit.key.as_str()), ("self", k), "{e}");
        }
        store
            .remember(&me, None, "one", "first again", &[])
            .await
            .unwrap();
        // A later value supersedes, and the listing is newest first.
        let hits = store.recall(&me, None, &q("")).await.unwrap();
        assert_eq!(keys(&hits), ["one", "three", "two"], "{e}");
        assert_eq!(hits[0].value, "first again", "{e}");
        assert!(hits.iter().all(|h| h.score == 0.0), "{e}");
        assert_eq!(
            keys(&store.recall(&me, None, &q("a ? !")).await.unwrap()),
            ["one", "three", "two"],
            "{e}: a query without a usable word lists"
        );
        let found = store.recall(&me, None, &q("AGAIN")).await.unwrap();
        assert_eq!(keys(&found), ["one"], "{e}");
        assert!(found[0].score > 0.0, "{e}");
        assert_eq!(store.memory_count(&me, None).await.unwrap(), 3, "{e}");
        let got = store.memory_get(&me, None, "two").await.unwrap().unwrap();
        assert_eq!(got.value, "second", "{e}");
        assert!(store.memory_get(&me, None, "nope").await.unwrap().is_none());
        assert!(store.forget(&me, None, "two").await.unwrap(), "{e}");
        assert!(!store.forget(&me, None, "two").await.unwrap(), "{e}");
        assert!(store
            .recall(&me, None, &q("second"))
            .await
            .unwrap()
            .is_empty());
        assert_eq!(store.memory_count(&me, None).await.unwrap(), 2, "{e}");
        let limited = RecallQuery { limit: 1, ..q("") };
        assert_eq!(
            keys(&store.recall(&me, None, &limited).await.unwrap()),
            ["one"]
        );
    }
}

/// Texts whose words a server-side parser would read differently (addresses, paths,
/// versions, hyphens, other scripts, operators): each engine must find exactly the same.
const WORDY: &[(&str, &str)] = &[
    ("mail", "write to ops@example.com about it"),
    ("path", "logs live in /var/log/tackle/app.log"),
    ("version", "upgrade to 1.2.3 before friday"),
    ("hyphen", "the follow-up is self-hosted"),
    ("tokyo", "meeting in 東京 next week"),
    ("camel", "the HTTPServer crashed"),
    ("ops", "NEAR(alpha beta) OR \"quoted\" key:value"),
    ("url", "see https://docs.example.org/guide?page=2#top"),
    ("number", "port 8080 and 3.14 and v2"),
    ("accent", "Crème brûlée at the Café"),
];

const WORDY_QUERIES: &[(&str, &[&str])] = &[
    ("example", &["mail", "url"]),
    // `ops` is also a key, and keys are searched as well.
    ("ops", &["mail", "ops"]),
    ("log", &["path"]),
    ("tackle app", &["path"]),
    ("v2", &["number"]),
    ("14", &["number"]),
    ("follow", &["hyphen"]),
    ("followup", &[]),
    ("hosted self", &["hyphen"]),
    ("東京", &["tokyo"]),
    ("httpserver", &["camel"]),
    ("http", &[]),
    ("near", &["ops"]),
    ("alpha* OR", &["ops"]),
    ("\"quoted\"", &["ops"]),
    ("key:value", &["ops"]),
    ("guide page top", &["url"]),
    ("8080", &["number"]),
    ("ex", &[]),
    ("friday", &["version"]),
    ("zzz qqq", &[]),
    ("cafe", &["accent"]),
    ("CAFÉ creme", &["accent"]),
    ("brulee", &["accent"]),
];

#[tokio::test]
async fn both_engines_find_the_same_memories_for_the_same_queries() {
    for engine in engines() {
        let e = engine.name;
        let store = engine.open();
        let me = MemoryAccess::own_only("default");
        for (k, v) in WORDY {
            store.remember(&me, None, k, v, &[]).await.unwrap();
        }
        for (query, want) in WORDY_QUERIES {
            let hits = store.recall(&me, None, &q(query)).await.unwrap();
            let mut want: Vec<String> = strings(want);
            want.sort();
            assert_eq!(sorted_keys(&hits), want, "{e}: {query:?}");
        }
    }
}

/// The corpus of the SQLite ranking test (tests/memory.rs): eight memories of six words.
const CORPUS: &[(&str, &str)] = &[
    ("ka", "rust rust rust plain words"),
    ("kb", "rust other filler words here"),
    ("kc", "cargo filler words here now"),
    ("kd", "rust cargo words here now"),
    ("ke", "lunch pizza on fridays ok"),
    ("kf", "lunch pizza on mondays ok"),
    ("kg", "lunch pasta on fridays ok"),
    ("kh", "lunch pasta on mondays ok"),
];

#[tokio::test]
async fn recall_ranks_the_better_match_first_and_equal_ones_newest_first() {
    for engine in engines() {
        let e = engine.name;
        let store = engine.open();
        let me = MemoryAccess::own_only("default");
        for (k, v) in CORPUS {
            store.remember(&me, None, k, v, &[]).await.unwrap();
        }
        let hits = store.recall(&me, None, &q("rust cargo")).await.unwrap();
        assert_eq!(sorted_keys(&hits), ["ka", "kb", "kc", "kd"], "{e}");
        // The one memory holding both words is first on both engines.
        assert_eq!(hits[0].key, "kd", "{e}");
        assert!(
            hits.windows(2).all(|w| w[0].score >= w[1].score),
            "{e}: {hits:?}"
        );
        // Four memories hold `lunch` once in six words: equally relevant, newest first.
        let lunch = store.recall(&me, None, &q("lunch")).await.unwrap();
        assert_eq!(keys(&lunch), ["kh", "kg", "kf", "ke"], "{e}");
        // `pizza fridays`: ke holds both, kf and kg one each, newest first among those.
        let two = store.recall(&me, None, &q("pizza fridays")).await.unwrap();
        assert_eq!(keys(&two), ["ke", "kg", "kf"], "{e}");
        let limited = RecallQuery {
            limit: 2,
            ..q("lunch")
        };
        assert_eq!(
            keys(&store.recall(&me, None, &limited).await.unwrap()),
            ["kh", "kg"],
            "{e}"
        );
    }
}

#[tokio::test]
async fn tags_must_all_match_ignoring_case_and_are_searched_as_words() {
    for engine in engines() {
        let e = engine.name;
        let store = engine.open();
        let me = MemoryAccess::own_only("default");
        store
            .remember(&me, None, "a", "alpha", &strings(&["Work", "urgent"]))
            .await
            .unwrap();
        store
            .remember(&me, None, "b", "beta", &strings(&["work"]))
            .await
            .unwrap();
        store
            .remember(&me, None, "c", "gamma alpha", &strings(&["home"]))
            .await
            .unwrap();
        let got = store.recall(&me, None, &tagged("", &["WORK"])).await;
        assert_eq!(sorted_keys(&got.unwrap()), ["a", "b"], "{e}");
        let got = store
            .recall(&me, None, &tagged("", &["work", "Urgent"]))
            .await;
        assert_eq!(keys(&got.unwrap()), ["a"], "{e}");
        let got = store
            .recall(&me, None, &tagged("", &["work", "home"]))
            .await;
        assert!(got.unwrap().is_empty(), "{e}");
        let got = store.recall(&me, None, &tagged("beta", &["work"])).await;
        assert_eq!(keys(&got.unwrap()), ["b"], "{e}");
        let got = store.recall(&me, None, &tagged("alpha", &["home"])).await;
        assert_eq!(keys(&got.unwrap()), ["c"], "{e}");
        let got = store
            .recall(&me, None, &tagged("alpha", &["nothing"]))
            .await;
        assert!(got.unwrap().is_empty(), "{e}");
        // A tag is a searchable word too.
        let got = store.recall(&me, None, &q("urgent")).await.unwrap();
        assert_eq!(keys(&got), ["a"], "{e}");
        let hit = &store.recall(&me, None, &q("beta")).await.unwrap()[0];
        assert_eq!(hit.tags, ["work"], "{e}");
        let hit = &store
            .recall(&me, None, &tagged("", &["urgent"]))
            .await
            .unwrap()[0];
        assert_eq!(hit.tags, ["work", "urgent"], "{e}");
        assert!(!hit.updated_at.is_empty());
    }
}

#[tokio::test]
async fn banks_are_reached_only_through_grants_with_the_same_refusals() {
    for engine in engines() {
        let e = engine.name;
        let store = engine.open();
        let config = banks(&[("project-alpha", &["bob"], &["alice"])]);
        let alice = store.memory_access("alice", &config).await.unwrap();
        let bob = store.memory_access("bob", &config).await.unwrap();
        let mallory = store.memory_access("mallory", &config).await.unwrap();
        store
            .remember(
                &alice,
                Some("project-alpha"),
                "deadline",
                "friday secret",
                &[],
            )
            .await
            .unwrap();
        store
            .remember(&alice, None, "diary", "alice private secret", &[])
            .await
            .unwrap();
        // Bob reads the bank, cannot write or forget in it.
        let hits = store
            .recall(&bob, Some("project-alpha"), &q("secret"))
            .await
            .unwrap();
        assert_eq!(keys(&hits), ["deadline"], "{e}");
        assert_eq!(hits[0].bank, "project-alpha");
        assert!(matches!(
            store
                .remember(&bob, Some("project-alpha"), "deadline", "monday", &[])
                .await,
            Err(StoreError::BankReadOnly { .. })
        ));
        assert!(matches!(
            store.forget(&bob, Some("project-alpha"), "deadline").await,
            Err(StoreError::BankReadOnly { .. })
        ));
        // Nobody reaches another agent's own memory, or a bank without a grant.
        for name in [
            "alice",
            "agent:alice",
            "Project-Alpha",
            "project-alpha ",
            "SELF",
        ] {
            assert!(
                matches!(
                    store.recall(&mallory, Some(name), &q("secret")).await,
                    Err(StoreError::UnknownBank { .. })
                ),
                "{e}: {name:?}"
            );
        }
        match store.recall(&bob, Some("nope"), &q("x")).await {
            Err(StoreError::UnknownBank { available, .. }) => {
                assert_eq!(available, ["self", "project-alpha"], "{e}")
            }
            other => panic!("{e}: {other:?}"),
        }
        assert!(store
            .recall(&bob, None, &q("secret"))
            .await
            .unwrap()
            .is_empty());
        assert!(store
            .recall(&mallory, None, &q(""))
            .await
            .unwrap()
            .is_empty());
        assert_eq!(
            store
                .memory_get(&alice, None, "diary")
                .await
                .unwrap()
                .unwrap()
                .value,
            "alice private secret"
        );
        assert!(store
            .memory_get(&bob, None, "diary")
            .await
            .unwrap()
            .is_none());

        // Stored grants: the stronger one wins, revoking ends it.
        store
            .grant_memory_bank("team", "carol", BankPerm::Write)
            .await
            .unwrap();
        store
            .grant_memory_bank("team", "dave", BankPerm::Write)
            .await
            .unwrap();
        // A second grant to the same agent replaces the first.
        store
            .grant_memory_bank("team", "dave", BankPerm::Read)
            .await
            .unwrap();
        let grants = store.memory_grants().await.unwrap();
        let listed: Vec<(String, String, BankPerm)> = grants
            .iter()
            .map(|g| (g.bank.clone(), g.agent.clone(), g.perm))
            .collect();
        assert_eq!(
            listed,
            [
                ("team".to_string(), "carol".to_string(), BankPerm::Write),
                ("team".to_string(), "dave".to_string(), BankPerm::Read),
            ],
            "{e}"
        );
        assert!(grants.iter().all(|g| !g.granted_at.is_empty()));
        let none = BTreeMap::new();
        let carol = store.memory_access("carol", &none).await.unwrap();
        let dave = store.memory_access("dave", &none).await.unwrap();
        store
            .remember(&carol, Some("team"), "standup", "nine sharp", &[])
            .await
            .unwrap();
        assert_eq!(
            store
                .recall(&dave, Some("team"), &q("standup"))
                .await
                .unwrap()[0]
                .value,
            "nine sharp",
            "{e}"
        );
        assert!(matches!(
            store.remember(&dave, Some("team"), "k", "v", &[]).await,
            Err(StoreError::BankReadOnly { .. })
        ));
        assert!(store
            .grant_memory_bank("Team", "x", BankPerm::Read)
            .await
            .is_err());
        assert!(store
            .grant_memory_bank("self", "x", BankPerm::Read)
            .await
            .is_err());
        assert!(
            store.revoke_memory_bank("team", "dave").await.unwrap(),
            "{e}"
        );
        assert!(
            !store.revoke_memory_bank("team", "dave").await.unwrap(),
            "{e}"
        );
        let dave = store.memory_access("dave", &none).await.unwrap();
        assert_eq!(dave.perm("team"), None, "{e}");
        assert!(store
            .recall(&dave, Some("team"), &q("standup"))
            .await
            .is_err());
    }
}

#[tokio::test]
async fn limits_are_the_same_on_both_engines() {
    for engine in engines() {
        let e = engine.name;
        let store = engine.open();
        let me = MemoryAccess::own_only("default");
        assert!(store.remember(&me, None, " ", "v", &[]).await.is_err());
        let long_key = "é".repeat(257);
        assert!(store
            .remember(&me, None, &long_key, "v", &[])
            .await
            .is_err());
        let key_at_limit = "é".repeat(256);
        store
            .remember(&me, None, &key_at_limit, "v", &[])
            .await
            .unwrap();
        let too_big = "x".repeat(64 * 1024 + 1);
        assert!(store.remember(&me, None, "k", &too_big, &[]).await.is_err());
        let many: Vec<String> = (0..33).map(|i| format!("t{i}")).collect();
        assert!(store.remember(&me, None, "k", "v", &many).await.is_err());
        let long_tag = vec!["t".repeat(65)];
        assert!(store
            .remember(&me, None, "k", "v", &long_tag)
            .await
            .is_err());
        // At the limits: the largest value (one very long word and a short one), the most
        // tags, the longest tag. All stored, all found.
        let big = format!("{} needle", "y".repeat(64 * 1024 - 7));
        assert_eq!(big.len(), 64 * 1024);
        let most: Vec<String> = (0..32).map(|i| format!("t{i}")).collect();
        store
            .remember(&me, None, "big", &big, &most)
            .await
            .unwrap_or_else(|err| panic!("{e}: {err}"));
        let hits = store.recall(&me, None, &q("needle")).await.unwrap();
        assert_eq!(keys(&hits), ["big"], "{e}");
        assert_eq!(hits[0].value.len(), 64 * 1024);
        assert_eq!(hits[0].tags.len(), 32);
        let longest_tag = vec!["t".repeat(64)];
        store
            .remember(&me, None, "tagged", "v", &longest_tag)
            .await
            .unwrap();
        assert_eq!(store.memory_count(&me, None).await.unwrap(), 3, "{e}");
        // Refused writes left nothing behind.
        assert!(store.memory_get(&me, None, "k").await.unwrap().is_none());
    }
}

fn set(key: &str, value: &str, category: &str, importance: f64) -> LongtermSet {
    LongtermSet {
        key: key.into(),
        value: value.into(),
        category: category.into(),
        tags: vec![],
        importance,
    }
}

#[tokio::test]
async fn longterm_entries_behave_alike_on_both_engines() {
    for engine in engines() {
        let e = engine.name;
        let store = engine.open();
        store
            .longterm_set("a", set("tz", "Europe/Paris", "prefs", 1.0))
            .await
            .unwrap();
        let mut editor = set("editor", "helix", "prefs", 2.0);
        editor.tags = strings(&["Tools", "tools", " cli "]);
        let written = store.longterm_set("a", editor).await.unwrap();
        assert_eq!(written.tags, ["tools", "cli"], "{e}");
        assert_eq!(written.access_count, 0);
        store
            .longterm_set("a", set("rule", "never deploy on friday", PINNED, 1.0))
            .await
            .unwrap();
        store
            .longterm_set("b", set("tz", "Asia/Tokyo", "prefs", 1.0))
            .await
            .unwrap();
        let first = store.longterm_get("a", "tz").await.unwrap().unwrap();
        assert_eq!(first.access_count, 1, "{e}");
        let e2 = store.longterm_get("a", "tz").await.unwrap().unwrap();
        assert_eq!((e2.value.as_str(), e2.access_count), ("Europe/Paris", 2));
        // Replacing keeps the count and the creation time.
        let replaced = store
            .longterm_set("a", set("tz", "Europe/Berlin", "prefs", 1.0))
            .await
            .unwrap();
        assert_eq!(replaced.created_at, first.created_at, "{e}");
        assert_eq!(replaced.access_count, 2, "{e}");
        assert_eq!(
            store.longterm_get("b", "tz").await.unwrap().unwrap().value,
            "Asia/Tokyo"
        );
        assert!(store.longterm_get("b", "editor").await.unwrap().is_none());
        assert_eq!(
            store.longterm_categories("a").await.unwrap(),
            [("pinned".to_string(), 1), ("prefs".to_string(), 2)],
            "{e}"
        );
        let prefs = store.longterm_list("a", Some("prefs"), 10).await.unwrap();
        assert_eq!(prefs.len(), 2, "{e}");
        assert_eq!(store.longterm_list("a", None, 10).await.unwrap().len(), 3);
        assert_eq!(store.longterm_list("a", None, 1).await.unwrap().len(), 1);
        let pinned = store.longterm_pinned("a").await.unwrap();
        assert_eq!(pinned.len(), 1, "{e}");
        assert_eq!(pinned[0].key, "rule");
        let block = tackle_store::pinned_block(&pinned).unwrap();
        assert!(block.contains("never deploy on friday"), "{e}");
        assert!(store.longterm_pinned("b").await.unwrap().is_empty());
        let hits = store.longterm_search("a", "helix", 10).await.unwrap();
        assert_eq!(hits.len(), 1, "{e}");
        assert_eq!(hits[0].entry.key, "editor");
        assert!(store.longterm_delete("a", "editor").await.unwrap());
        assert!(!store.longterm_delete("a", "editor").await.unwrap());
        assert!(store
            .longterm_set("a", set(" ", "v", "c", 1.0))
            .await
            .is_err());
        assert!(store
            .longterm_set("a", set("k", "v", "c", -1.0))
            .await
            .is_err());
        assert!(store
            .longterm_set("a", set("k", "v", "c", f64::NAN))
            .await
            .is_err());
    }
}

#[tokio::test]
async fn longterm_importance_comes_back_exactly_as_written() {
    let values = [
        0.0,
        0.1,
        1.0 / 3.0,
        0.1 + 0.2,
        2.5,
        123_456.789,
        1e-300,
        5e-324,
        1e300,
        f64::MAX,
        std::f64::consts::PI,
    ];
    for engine in engines() {
        let store = engine.open();
        for (i, v) in values.iter().enumerate() {
            let key = format!("k{i}");
            let written = store
                .longterm_set("a", set(&key, "v", "c", *v))
                .await
                .unwrap();
            assert_eq!(
                written.importance.to_bits(),
                v.to_bits(),
                "{}: {v}",
                engine.name
            );
            let read = store.longterm_get("a", &key).await.unwrap().unwrap();
            assert_eq!(
                read.importance.to_bits(),
                v.to_bits(),
                "{}: {v}",
                engine.name
            );
        }
    }
}

fn skill(name: &str, body: &str) -> NewSkill {
    NewSkill {
        name: name.into(),
        key: name.to_lowercase(),
        description: format!("about {name}"),
        meta: "{}".into(),
        body: body.into(),
    }
}

#[tokio::test]
async fn stored_skills_follow_the_bank_grants_on_both_engines() {
    for engine in engines() {
        let e = engine.name;
        let store = engine.open();
        let config = banks(&[("team", &["reader"], &["writer"])]);
        let writer = store.memory_access("writer", &config).await.unwrap();
        let reader = store.memory_access("reader", &config).await.unwrap();
        let outsider = store.memory_access("outsider", &config).await.unwrap();
        let saved = store
            .save_skill(&writer, None, &skill("deploy", "OWN-1"))
            .await
            .unwrap();
        assert!(!saved.replaced, "{e}");
        assert_eq!(saved.place, "self");
        let again = store
            .save_skill(&writer, None, &skill("Deploy", "OWN-2"))
            .await
            .unwrap();
        assert!(again.replaced, "{e}: same key, same place");
        store
            .save_skill(&writer, Some("team"), &skill("runbook", "TEAM"))
            .await
            .unwrap();
        let listed: Vec<(String, String)> = store
            .stored_skills(&writer)
            .await
            .unwrap()
            .into_iter()
            .map(|s| (s.place, s.name))
            .collect();
        assert_eq!(
            listed,
            [
                ("self".to_string(), "Deploy".to_string()),
                ("team".to_string(), "runbook".to_string())
            ],
            "{e}"
        );
        assert_eq!(
            store
                .stored_skill_body(&writer, None, "deploy")
                .await
                .unwrap()
                .as_deref(),
            Some("OWN-2")
        );
        assert_eq!(
            store
                .stored_skill_body(&reader, Some("team"), "runbook")
                .await
                .unwrap()
                .as_deref(),
            Some("TEAM"),
            "{e}"
        );
        assert_eq!(store.stored_skills(&reader).await.unwrap().len(), 1, "{e}");
        assert!(matches!(
            store
                .save_skill(&reader, Some("team"), &skill("runbook", "HIJACK"))
                .await,
            Err(StoreError::BankReadOnly { .. })
        ));
        assert!(matches!(
            store.remove_skill(&reader, Some("team"), "runbook").await,
            Err(StoreError::BankReadOnly { .. })
        ));
        assert!(store.stored_skills(&outsider).await.unwrap().is_empty());
        assert!(matches!(
            store
                .stored_skill_body(&outsider, Some("team"), "runbook")
                .await,
            Err(StoreError::UnknownBank { .. })
        ));
        // A too large skill is refused; a full place refuses a new name, not a replacement.
        let big = "x".repeat(MAX_STORED_SKILL_BYTES);
        assert!(matches!(
            store.save_skill(&outsider, None, &skill("big", &big)).await,
            Err(StoreError::InvalidSkill(_))
        ));
        for i in 0..MAX_SKILLS_PER_PLACE {
            store
                .save_skill(&outsider, None, &skill(&format!("s{i}"), "b"))
                .await
                .unwrap();
        }
        assert!(matches!(
            store
                .save_skill(&outsider, None, &skill("one-more", "b"))
                .await,
            Err(StoreError::InvalidSkill(_))
        ));
        assert!(
            store
                .save_skill(&outsider, None, &skill("s0", "new"))
                .await
                .unwrap()
                .replaced
        );
        assert!(store
            .remove_skill(&writer, Some("team"), "runbook")
            .await
            .unwrap());
        assert!(!store
            .remove_skill(&writer, Some("team"), "runbook")
            .await
            .unwrap());
        assert!(
            store.stored_skills(&reader).await.unwrap().is_empty(),
            "{e}"
        );
    }
}

/// Two daemons (two state directories) over one PostgreSQL database: a bank written through
/// one is read, changed and forgotten through the other, and grants stored by one hold in
/// the other.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn two_daemons_over_one_database_share_banks_grants_and_longterm_entries() {
    let Some(engine) = engines::shared() else {
        return;
    };
    let (one, two) = (engine.daemon(0), engine.daemon(1));
    let none = BTreeMap::new();
    one.grant_memory_bank("team", "alice", BankPerm::Write)
        .await
        .unwrap();
    one.grant_memory_bank("team", "bob", BankPerm::Read)
        .await
        .unwrap();
    // The grants stored through the first daemon hold in the second.
    let alice_one = one.memory_access("alice", &none).await.unwrap();
    let alice_two = two.memory_access("alice", &none).await.unwrap();
    let bob_two = two.memory_access("bob", &none).await.unwrap();
    assert_eq!(alice_two.perm("team"), Some(BankPerm::Write));
    assert_eq!(bob_two.perm("team"), Some(BankPerm::Read));

    one.remember(
        &alice_one,
        Some("team"),
        "deploy",
        "tuesdays at ten",
        &strings(&["ops"]),
    )
    .await
    .unwrap();
    let seen = two
        .recall(&bob_two, Some("team"), &tagged("tuesdays", &["ops"]))
        .await
        .unwrap();
    assert_eq!(keys(&seen), ["deploy"]);
    assert!(matches!(
        two.remember(&bob_two, Some("team"), "deploy", "never", &[])
            .await,
        Err(StoreError::BankReadOnly { .. })
    ));
    // A change through the second daemon is what the first reads next.
    two.remember(&alice_two, Some("team"), "deploy", "wednesdays at ten", &[])
        .await
        .unwrap();
    let now = one
        .memory_get(&alice_one, Some("team"), "deploy")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(now.value, "wednesdays at ten");
    assert!(one
        .recall(&alice_one, Some("team"), &q("tuesdays"))
        .await
        .unwrap()
        .is_empty());
    // Own memory is shared across daemons too, and stays the agent's own.
    one.remember(&alice_one, None, "diary", "private note", &[])
        .await
        .unwrap();
    assert_eq!(
        keys(&two.recall(&alice_two, None, &q("note")).await.unwrap()),
        ["diary"]
    );
    assert!(two
        .recall(&bob_two, None, &q("note"))
        .await
        .unwrap()
        .is_empty());
    // Revoking through one daemon ends the grant in the other.
    assert!(two.revoke_memory_bank("team", "bob").await.unwrap());
    let bob_one = one.memory_access("bob", &none).await.unwrap();
    assert!(one.recall(&bob_one, Some("team"), &q("")).await.is_err());
    assert!(two
        .forget(&alice_two, Some("team"), "deploy")
        .await
        .unwrap());
    assert_eq!(one.memory_count(&alice_one, Some("team")).await.unwrap(), 0);

    // A skill saved in the bank through one daemon is listed and read through the other.
    one.save_skill(&alice_one, Some("team"), &skill("runbook", "STEPS"))
        .await
        .unwrap();
    let alice_again = two.memory_access("alice", &none).await.unwrap();
    assert_eq!(
        two.stored_skill_body(&alice_again, Some("team"), "runbook")
            .await
            .unwrap()
            .as_deref(),
        Some("STEPS")
    );

    one.longterm_set("alice", set("rule", "no friday deploys", PINNED, 3.0))
        .await
        .unwrap();
    let pinned = two.longterm_pinned("alice").await.unwrap();
    assert_eq!(pinned.len(), 1);
    assert_eq!(pinned[0].value, "no friday deploys");
    assert_eq!(
        two.longterm_get("alice", "rule")
            .await
            .unwrap()
            .unwrap()
            .access_count,
        1
    );
    assert_eq!(
        one.longterm_get("alice", "rule")
            .await
            .unwrap()
            .unwrap()
            .access_count,
        2
    );
}

/// Both daemons writing one bank at the same time: every write lands, none is refused.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_daemons_writing_one_bank_at_once_lose_nothing() {
    let Some(engine) = engines::shared() else {
        return;
    };
    let stores = [
        std::sync::Arc::new(engine.daemon(0)),
        std::sync::Arc::new(engine.daemon(1)),
    ];
    let config = banks(&[("shared", &[], &["w"])]);
    let mut tasks = Vec::new();
    for (n, store) in stores.iter().enumerate() {
        let store = store.clone();
        let access = store.memory_access("w", &config).await.unwrap();
        tasks.push(tokio::spawn(async move {
            for i in 0..40 {
                store
                    .remember(&access, Some("shared"), &format!("d{n}-{i}"), "word", &[])
                    .await?;
            }
            Ok::<_, StoreError>(())
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let access = stores[0].memory_access("w", &config).await.unwrap();
    assert_eq!(
        stores[1]
            .memory_count(&access, Some("shared"))
            .await
            .unwrap(),
        80
    );
    let all = RecallQuery {
        limit: 100,
        ..q("word")
    };
    assert_eq!(
        stores[0]
            .recall(&access, Some("shared"), &all)
            .await
            .unwrap()
            .len(),
        80
    );
}
