//! Skills kept in the store: each agent's own (`self`) and those of shared banks, reached only
//! through the agent's [`MemoryAccess`], so a skill bank is granted exactly as a memory bank is
//! (one grant covers a bank's memories and its skills; docs/decisions/0037-skill-sources.md).
//!
//! The store keeps what the skill file parser produced (name, description, the other front
//! matter fields as JSON, the body) and decides nothing about it: the caller validates the file
//! and computes the name key (`tackle_tools::skills::name_key`) under which a place holds one
//! skill per name. Listing never returns a body; [`Store::stored_skill_body`] reads one.

use crate::error::StoreError;
use crate::memory::{lock_scope, BankPerm, MemoryAccess, Scope};
use crate::sql::{in_tx, vals, Db};
use crate::{now_rfc3339, Store};
use serde::{Deserialize, Serialize};

/// Largest skill, counting its name, description, front matter fields and body: the size a
/// skill file on disk may have (`tackle_protocol::skills::MAX_SKILL_FILE_BYTES`).
pub const MAX_STORED_SKILL_BYTES: usize = 64 * 1024;
/// Most skills one place (an agent's own store, one bank) holds.
pub const MAX_SKILLS_PER_PLACE: usize = 256;
/// Longest name key, in characters (names are at most 100 characters; their keys are shorter).
const MAX_KEY_CHARS: usize = 400;

/// A skill to save, as the skill file parser read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSkill {
    /// The name as written in the skill file.
    pub name: String,
    /// The name as compared: one skill per key in a place.
    pub key: String,
    /// One line saying what the skill is for; shown in skill listings.
    pub description: String,
    /// The other front matter fields (triggers, requires_tools, …) as a JSON object.
    pub meta: String,
    /// The instructions, without front matter.
    pub body: String,
}

/// A stored skill without its body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredSkill {
    /// `self` for the agent's own store, else the bank's name.
    pub place: String,
    /// The name as written in the skill file.
    pub name: String,
    /// The name as compared: one skill per key in a place.
    pub key: String,
    /// One line saying what the skill is for.
    pub description: String,
    /// The other front matter fields (triggers, requires_tools, …) as a JSON object.
    pub meta: String,
    /// When it was first saved, RFC 3339 UTC.
    pub created_at: String,
    /// When it was last saved, RFC 3339 UTC.
    pub updated_at: String,
}

/// What [`Store::save_skill`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedSkill {
    /// `self` for the agent's own store, else the bank's name.
    pub place: String,
    /// The name as saved.
    pub name: String,
    /// A skill of the same key was there and is replaced.
    pub replaced: bool,
    /// When it was saved, RFC 3339 UTC.
    pub updated_at: String,
}

fn check(skill: &NewSkill) -> Result<(), StoreError> {
    if skill.name.trim().is_empty() || skill.key.is_empty() {
        return Err(StoreError::InvalidSkill("the skill's name is empty".into()));
    }
    if skill.key.chars().count() > MAX_KEY_CHARS {
        return Err(StoreError::InvalidSkill(
            "the skill's name is too long".into(),
        ));
    }
    let size = skill.name.len() + skill.description.len() + skill.meta.len() + skill.body.len();
    if size > MAX_STORED_SKILL_BYTES {
        return Err(StoreError::InvalidSkill(format!(
            "the skill is {size} bytes; at most {MAX_STORED_SKILL_BYTES} are kept"
        )));
    }
    Ok(())
}

impl Store {
    /// Every skill `access` may read: the agent's own first, then each granted bank by name;
    /// within a place by name key. No bodies.
    pub async fn stored_skills(
        &self,
        access: &MemoryAccess,
    ) -> Result<Vec<StoredSkill>, StoreError> {
        let scopes: Vec<Scope> = access
            .banks()
            .iter()
            .map(|b| access.resolve(Some(&b.name), BankPerm::Read))
            .collect::<Result<_, _>>()?;
        self.with_db(move |db| {
            let mut out = Vec::new();
            for scope in &scopes {
                out.extend(list(db, scope)?);
            }
            Ok(out)
        })
        .await
    }

    /// The body of the skill under `key` in `place` (absent = `self`). Needs Read.
    pub async fn stored_skill_body(
        &self,
        access: &MemoryAccess,
        place: Option<&str>,
        key: &str,
    ) -> Result<Option<String>, StoreError> {
        let scope = access.resolve(place, BankPerm::Read)?;
        let key = key.to_string();
        self.with_db(move |db| {
            db.query_opt(
                "SELECT body FROM stored_skills
                 WHERE owner_kind = ?1 AND owner = ?2 AND name_key = ?3",
                vals![scope.kind, &scope.owner, key],
            )?
            .map(|r| r.text(0))
            .transpose()
        })
        .await
    }

    /// Saves `skill` in `place` (absent = `self`), replacing the one of the same key there.
    /// Needs Write; a place holds at most [`MAX_SKILLS_PER_PLACE`].
    pub async fn save_skill(
        &self,
        access: &MemoryAccess,
        place: Option<&str>,
        skill: &NewSkill,
    ) -> Result<SavedSkill, StoreError> {
        let scope = access.resolve(place, BankPerm::Write)?;
        check(skill)?;
        let skill = skill.clone();
        self.with_db(move |db| {
            let now = now_rfc3339();
            let replaced = in_tx(db, |tx| {
                // Daemons sharing the place take turns here, so the count below stays true
                // until this save commits.
                lock_scope(tx, &scope)?;
                let replaced = tx
                    .query_opt(
                        "SELECT EXISTS (SELECT 1 FROM stored_skills
                         WHERE owner_kind = ?1 AND owner = ?2 AND name_key = ?3)",
                        vals![scope.kind, &scope.owner, &skill.key],
                    )?
                    .map_or(Ok(false), |r| r.flag(0))?;
                let count = tx
                    .query_opt(
                        "SELECT COUNT(*) FROM stored_skills WHERE owner_kind = ?1 AND owner = ?2",
                        vals![scope.kind, &scope.owner],
                    )?
                    .map_or(Ok(0), |r| r.int(0))?;
                if !replaced
                    && usize::try_from(count).unwrap_or(usize::MAX) >= MAX_SKILLS_PER_PLACE
                {
                    return Err(StoreError::InvalidSkill(format!(
                        "`{}` already holds {MAX_SKILLS_PER_PLACE} skills, the most one place keeps",
                        scope.name
                    )));
                }
                tx.execute(
                    "INSERT INTO stored_skills
                        (owner_kind, owner, name, name_key, description, meta, body, created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)
                     ON CONFLICT (owner_kind, owner, name_key) DO UPDATE SET
                        name = excluded.name, description = excluded.description,
                        meta = excluded.meta, body = excluded.body, updated_at = excluded.updated_at",
                    vals![
                        scope.kind,
                        &scope.owner,
                        &skill.name,
                        &skill.key,
                        &skill.description,
                        &skill.meta,
                        &skill.body,
                        &now
                    ],
                )?;
                Ok(replaced)
            })?;
            Ok(SavedSkill {
                place: scope.name,
                name: skill.name,
                replaced,
                updated_at: now,
            })
        })
        .await
    }

    /// Removes the skill under `key` from `place` (absent = `self`); whether it was there.
    /// Needs Write.
    pub async fn remove_skill(
        &self,
        access: &MemoryAccess,
        place: Option<&str>,
        key: &str,
    ) -> Result<bool, StoreError> {
        let scope = access.resolve(place, BankPerm::Write)?;
        let key = key.to_string();
        self.with_db(move |db| {
            let n = db.execute(
                "DELETE FROM stored_skills WHERE owner_kind = ?1 AND owner = ?2 AND name_key = ?3",
                vals![scope.kind, &scope.owner, key],
            )?;
            Ok(n > 0)
        })
        .await
    }
}

fn list(db: &mut dyn Db, scope: &Scope) -> Result<Vec<StoredSkill>, StoreError> {
    db.query(
        "SELECT name, name_key, description, meta, created_at, updated_at FROM stored_skills
         WHERE owner_kind = ?1 AND owner = ?2 ORDER BY name_key, id",
        vals![scope.kind, &scope.owner],
    )?
    .iter()
    .map(|r| {
        Ok(StoredSkill {
            place: scope.name.clone(),
            name: r.text(0)?,
            key: r.text(1)?,
            description: r.text(2)?,
            meta: r.text(3)?,
            created_at: r.text(4)?,
            updated_at: r.text(5)?,
        })
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SELF_BANK;
    use std::collections::BTreeMap;
    use tackle_protocol::config::MemoryBankConfig;

    fn skill(name: &str, body: &str) -> NewSkill {
        NewSkill {
            name: name.into(),
            key: name.to_lowercase(),
            description: format!("about {name}"),
            meta: "{}".into(),
            body: body.into(),
        }
    }

    /// `team` readable by `reader`, writable by `writer`; `outsider` has no grant.
    fn grants() -> BTreeMap<String, MemoryBankConfig> {
        let mut banks = BTreeMap::new();
        banks.insert(
            "team".to_string(),
            MemoryBankConfig {
                read: vec!["reader".into()],
                write: vec!["writer".into()],
            },
        );
        banks
    }

    fn access(agent: &str) -> MemoryAccess {
        MemoryAccess::from_grants(agent, &grants(), &[])
    }

    #[tokio::test]
    async fn own_skills_are_the_agents_alone_and_a_save_of_the_same_key_replaces() {
        let store = Store::open_in_memory().unwrap();
        let alice = MemoryAccess::own_only("alice");
        let bob = MemoryAccess::own_only("bob");
        let saved = store
            .save_skill(&alice, None, &skill("deploy", "ALICE-1"))
            .await
            .unwrap();
        assert!(!saved.replaced);
        assert_eq!(saved.place, SELF_BANK);
        let again = store
            .save_skill(&alice, None, &skill("Deploy", "ALICE-2"))
            .await
            .unwrap();
        assert!(again.replaced, "same key, same place: an update");
        let listed = store.stored_skills(&alice).await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].name, "Deploy");
        assert_eq!(
            store
                .stored_skill_body(&alice, None, "deploy")
                .await
                .unwrap()
                .as_deref(),
            Some("ALICE-2")
        );
        // Bob's `self` is another place: he sees nothing of Alice's and his save is his own.
        assert!(store.stored_skills(&bob).await.unwrap().is_empty());
        assert_eq!(
            store.stored_skill_body(&bob, None, "deploy").await.unwrap(),
            None
        );
        assert!(!store.remove_skill(&bob, None, "deploy").await.unwrap());
        assert!(store
            .stored_skill_body(&alice, None, "deploy")
            .await
            .unwrap()
            .is_some());
    }

    #[tokio::test]
    async fn a_bank_is_reached_only_through_a_grant_and_written_only_with_write() {
        let store = Store::open_in_memory().unwrap();
        let (writer, reader, outsider) = (access("writer"), access("reader"), access("outsider"));
        store
            .save_skill(&writer, Some("team"), &skill("runbook", "TEAM-BODY"))
            .await
            .unwrap();

        let seen = store.stored_skills(&reader).await.unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(
            (seen[0].place.as_str(), seen[0].name.as_str()),
            ("team", "runbook")
        );
        assert_eq!(
            store
                .stored_skill_body(&reader, Some("team"), "runbook")
                .await
                .unwrap()
                .as_deref(),
            Some("TEAM-BODY")
        );
        let err = store
            .save_skill(&reader, Some("team"), &skill("runbook", "HIJACK"))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::BankReadOnly { .. }), "{err}");
        assert!(matches!(
            store.remove_skill(&reader, Some("team"), "runbook").await,
            Err(StoreError::BankReadOnly { .. })
        ));

        // No grant: not listed, not read, not written, not removed, with the same answer
        // an unknown bank gets.
        assert!(store.stored_skills(&outsider).await.unwrap().is_empty());
        for result in [
            store
                .stored_skill_body(&outsider, Some("team"), "runbook")
                .await
                .map(|_| ()),
            store
                .save_skill(&outsider, Some("team"), &skill("runbook", "HIJACK"))
                .await
                .map(|_| ()),
            store
                .remove_skill(&outsider, Some("team"), "runbook")
                .await
                .map(|_| ()),
            store
                .stored_skill_body(&outsider, Some("no-such-bank"), "runbook")
                .await
                .map(|_| ()),
        ] {
            assert!(
                matches!(result, Err(StoreError::UnknownBank { .. })),
                "{result:?}"
            );
        }
        // Naming the bank as an agent's `self` does not reach it either.
        let squatter = MemoryAccess::own_only("team");
        assert!(store.stored_skills(&squatter).await.unwrap().is_empty());
        assert_eq!(
            store
                .stored_skill_body(&reader, Some("team"), "runbook")
                .await
                .unwrap()
                .as_deref(),
            Some("TEAM-BODY"),
            "nothing above changed the bank's skill"
        );
    }

    #[tokio::test]
    async fn sizes_and_counts_are_bounded() {
        let store = Store::open_in_memory().unwrap();
        let me = MemoryAccess::own_only("me");
        let big = "x".repeat(MAX_STORED_SKILL_BYTES);
        assert!(matches!(
            store.save_skill(&me, None, &skill("big", &big)).await,
            Err(StoreError::InvalidSkill(_))
        ));
        let mut empty = skill("x", "b");
        empty.key.clear();
        assert!(matches!(
            store.save_skill(&me, None, &empty).await,
            Err(StoreError::InvalidSkill(_))
        ));
        for i in 0..MAX_SKILLS_PER_PLACE {
            store
                .save_skill(&me, None, &skill(&format!("s{i}"), "b"))
                .await
                .unwrap();
        }
        assert!(matches!(
            store.save_skill(&me, None, &skill("one-more", "b")).await,
            Err(StoreError::InvalidSkill(_))
        ));
        // Replacing one that is there is still allowed when the place is full.
        assert!(
            store
                .save_skill(&me, None, &skill("s0", "new"))
                .await
                .unwrap()
                .replaced
        );
        assert_eq!(
            store.stored_skills(&me).await.unwrap().len(),
            MAX_SKILLS_PER_PLACE
        );
    }
}
