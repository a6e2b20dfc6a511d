use super::*;
use crate::identity::key_file;
use crate::sessions::{Entry, EntryKind};
use ring::signature::{Ed25519KeyPair, KeyPair};
use rusqlite::Connection;
use serde_json::json;

fn user(text: &str) -> Entry {
    Entry::new(EntryKind::User, json!({"role": "user", "content": text}))
}

fn db(dir: &tempfile::TempDir) -> Connection {
    Connection::open(dir.path().join(crate::DB_FILE)).unwrap()
}

async fn session_with(store: &Store, agent: &str, n: usize) -> SessionId {
    let s = store.create_session(agent).await.unwrap();
    for i in 0..n {
        store.append(&s, user(&format!("m{i}"))).await.unwrap();
    }
    s
}

fn problems(v: &SessionVerification) -> Vec<(i64, EntryProblem)> {
    v.failures
        .iter()
        .map(|f| (f.entry, f.problem.clone()))
        .collect()
}

#[tokio::test]
async fn entries_are_signed_with_the_agents_key_file_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let s = session_with(&store, "default", 3).await;
    let v = store.verify_session(&s).await.unwrap();
    assert!(v.ok(), "{v:?}");
    assert_eq!((v.entries, v.signed, v.unsigned_legacy), (3, 3, 0));
    assert_eq!(v.anchor, KeyAnchor::KeyFile);
    assert_eq!(v.keys.len(), 1);
    // The key that signs is the one in the agent's private file.
    let text = std::fs::read_to_string(key_file(dir.path(), "default")).unwrap();
    let seed = crate::unhex(text.trim()).unwrap();
    let pair = Ed25519KeyPair::from_seed_unchecked(&seed).unwrap();
    assert_eq!(v.keys[0], crate::hex(pair.public_key().as_ref()));
    let stored: Vec<String> = db(&dir)
        .prepare("SELECT key_id FROM entries")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(stored, vec![v.keys[0].clone(); 3]);
}

#[tokio::test]
async fn an_entry_edited_in_the_database_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let s = session_with(&store, "default", 3).await;
    db(&dir)
        .execute(
            "UPDATE entries SET content = '{\"role\":\"user\",\"content\":\"forged\"}' WHERE seq = 2",
            [],
        )
        .unwrap();
    let v = store.verify_session(&s).await.unwrap();
    assert_eq!(problems(&v), vec![(2, EntryProblem::Altered)]);
    assert_eq!(v.signed, 2);
}

#[tokio::test]
async fn entries_swapped_or_removed_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let s = session_with(&store, "default", 4).await;
    let conn = db(&dir);
    conn.execute_batch(
        "UPDATE entries SET seq = -1 WHERE seq = 1;
         UPDATE entries SET seq = 1 WHERE seq = 2;
         UPDATE entries SET seq = 2 WHERE seq = -1;
         DELETE FROM entries WHERE seq = 3;",
    )
    .unwrap();
    let v = store.verify_session(&s).await.unwrap();
    assert_eq!(
        problems(&v),
        vec![
            (1, EntryProblem::Altered),
            (2, EntryProblem::Altered),
            (4, EntryProblem::Gap { after: 2 }),
        ]
    );
}

#[tokio::test]
async fn a_rotated_key_keeps_its_entries_verifying_and_signs_no_more() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let s = session_with(&store, "default", 2).await;
    let rotation = store.rotate_agent_key("default").await.unwrap();
    assert_ne!(rotation.old_key, rotation.new_key);
    store.append(&s, user("after")).await.unwrap();
    let v = store.verify_session(&s).await.unwrap();
    assert!(v.ok(), "{v:?}");
    assert_eq!(v.signed, 3);
    assert_eq!(
        v.keys,
        vec![rotation.new_key.clone(), rotation.old_key.clone()]
    );
    let signers: Vec<String> = db(&dir)
        .prepare("SELECT key_id FROM entries ORDER BY seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(signers[2], rotation.new_key);
    // The file holds the new key; the old secret is gone from it.
    let reopened = Store::open(dir.path()).unwrap();
    assert_eq!(
        reopened.agent_keys.file_key("default").unwrap(),
        Some(rotation.new_key.clone())
    );
    // An entry re-dated past the rotation, still with the old key: not accepted.
    db(&dir)
        .execute(
            "UPDATE entries SET created_at = '2999-01-01T00:00:00.000000Z' WHERE seq = 1",
            [],
        )
        .unwrap();
    let v = store.verify_session(&s).await.unwrap();
    assert_eq!(problems(&v), vec![(1, EntryProblem::Altered)]);
}

#[tokio::test]
async fn a_rotation_by_another_process_is_followed_at_the_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Store::open(dir.path()).unwrap();
    let s = session_with(&daemon, "default", 1).await;
    let rotation = Store::open(dir.path())
        .unwrap()
        .rotate_agent_key("default")
        .await
        .unwrap();
    daemon.append(&s, user("next")).await.unwrap();
    let signer: String = db(&dir)
        .query_row("SELECT key_id FROM entries WHERE seq = 2", [], |r| r.get(0))
        .unwrap();
    assert_eq!(signer, rotation.new_key);
    assert!(daemon.verify_session(&s).await.unwrap().ok());
}

#[tokio::test]
async fn a_key_slipped_in_as_a_predecessor_is_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let s = session_with(&store, "default", 2).await;
    let current = store.verify_session(&s).await.unwrap().keys[0].clone();
    // Someone with the database but not the key file: their own key, recorded as the one the
    // agent rotated from, re-signs an edited entry.
    let evil = Ed25519KeyPair::from_seed_unchecked(&[7; 32]).unwrap();
    let evil_id = crate::hex(evil.public_key().as_ref());
    let conn = db(&dir);
    let at = "2000-01-01T00:00:00.000000Z";
    let rot = rotation_message("default", &evil_id, &current, at);
    conn.execute(
        "INSERT INTO agent_keys (key_id, agent, created_at, successor, rotated_at, old_signature, new_signature)
         VALUES (?1, 'default', ?2, ?3, '2999-01-01T00:00:00.000000Z', ?4, ?5)",
        rusqlite::params![
            evil_id,
            at,
            current,
            evil.sign(&rot).as_ref(),
            evil.sign(&rot).as_ref()
        ],
    )
    .unwrap();
    let (created_at,): (String,) = conn
        .query_row("SELECT created_at FROM entries WHERE seq = 1", [], |r| {
            Ok((r.get(0)?,))
        })
        .unwrap();
    let content = "{\"role\":\"user\",\"content\":\"forged\"}";
    let m = entry_message(s.as_str(), 1, "user", &created_at, content, &evil_id);
    conn.execute(
        "UPDATE entries SET content = ?1, key_id = ?2, signature = ?3 WHERE seq = 1",
        rusqlite::params![content, evil_id, evil.sign(&m).as_ref()],
    )
    .unwrap();
    let v = store.verify_session(&s).await.unwrap();
    assert_eq!(
        problems(&v),
        vec![(
            1,
            EntryProblem::UnknownKey {
                key_id: evil_id.clone()
            }
        )]
    );
    assert_eq!(v.unproven_rotation, Some((evil_id, current)));
}

#[tokio::test]
async fn unsigned_entries_are_old_only_before_signing_began() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let s = session_with(&store, "default", 4).await;
    let conn = db(&dir);
    // Entries 1–2 as a database from before version 18 holds them.
    conn.execute(
        "UPDATE entries SET key_id = NULL, signature = NULL,
                created_at = '2020-01-01T00:00:00.000000Z' WHERE seq <= 2",
        [],
    )
    .unwrap();
    let v = store.verify_session(&s).await.unwrap();
    assert!(v.ok(), "{v:?}");
    assert_eq!((v.unsigned_legacy, v.signed), (2, 2));
    // A signature stripped from a recent entry is not mistaken for an old one.
    conn.execute(
        "UPDATE entries SET key_id = NULL, signature = NULL WHERE seq = 4",
        [],
    )
    .unwrap();
    let v = store.verify_session(&s).await.unwrap();
    assert_eq!(problems(&v), vec![(4, EntryProblem::SignatureRemoved)]);
}

#[tokio::test]
async fn a_child_running_as_its_parent_signs_with_the_parents_key() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let parent = session_with(&store, "default", 1).await;
    // A worker's session carries its parent's identity (crates/tackle-agent/src/tree).
    let first = store
        .create_child_session("default", &parent, "default › helper", user("task"))
        .await
        .unwrap();
    store.append(&first.session_id, user("more")).await.unwrap();
    let own = store.verify_session(&parent).await.unwrap();
    let child = store.verify_session(&first.session_id).await.unwrap();
    assert!(child.ok(), "{child:?}");
    assert_eq!(child.signed, 2);
    assert_eq!(child.keys, own.keys);
    // Another agent has a key of its own.
    let other = session_with(&store, "ops", 1).await;
    let other = store.verify_session(&other).await.unwrap();
    assert!(other.ok());
    assert_ne!(other.keys, own.keys);
}

#[tokio::test]
async fn an_in_memory_store_signs_and_verifies_too() {
    let store = Store::open_in_memory().unwrap();
    let s = session_with(&store, "default", 2).await;
    let v = store.verify_session(&s).await.unwrap();
    assert!(v.ok(), "{v:?}");
    assert_eq!(v.signed, 2);
    store.rotate_agent_key("default").await.unwrap();
    store.append(&s, user("after")).await.unwrap();
    let v = store.verify_session(&s).await.unwrap();
    assert!(v.ok(), "{v:?}");
    assert_eq!(v.keys.len(), 2);
    assert!(matches!(
        store.verify_session(&SessionId::from("nope")).await,
        Err(StoreError::UnknownSession(_))
    ));
    assert!(store.rotate_agent_key("../x").await.is_err());
}

#[tokio::test]
async fn entries_from_before_signing_are_reported_as_older_not_failed() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut conn = db(&dir);
        crate::migrations::migrate_to(&mut conn, SIGNING_VERSION - 1).unwrap();
        conn.execute_batch(
            "INSERT INTO sessions (id, agent, created_at, updated_at)
                 VALUES ('old', 'default', '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z');
             INSERT INTO entries (session_id, seq, kind, content, created_at)
                 VALUES ('old', 1, 'user', '{\"role\":\"user\",\"content\":\"hi\"}', '2026-01-01T00:00:00.000000Z');",
        )
        .unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let s = SessionId::from("old");
    store.append(&s, user("after the upgrade")).await.unwrap();
    let v = store.verify_session(&s).await.unwrap();
    assert!(v.ok(), "{v:?}");
    assert_eq!((v.entries, v.unsigned_legacy, v.signed), (2, 1, 1));
}

#[tokio::test]
async fn a_lost_key_file_starts_a_new_key_whose_succession_is_unproven() {
    let dir = tempfile::tempdir().unwrap();
    let s = session_with(&Store::open(dir.path()).unwrap(), "default", 1).await;
    std::fs::remove_file(key_file(dir.path(), "default")).unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.append(&s, user("later")).await.unwrap();
    let v = store.verify_session(&s).await.unwrap();
    assert_eq!(v.keys.len(), 1);
    let old = match &problems(&v)[..] {
        [(1, EntryProblem::UnknownKey { key_id })] => key_id.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(v.unproven_rotation, Some((old, v.keys[0].clone())));
    assert_eq!(v.signed, 1);
}
