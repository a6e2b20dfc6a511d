//! Memory: an agent's own notes (`self`) and shared banks, each a separate key/value store
//! with full-text search (SQLite FTS5, ranked by BM25; on a shared PostgreSQL engine its
//! `tsvector` search over the same words, ranked by `ts_rank`; the two differ only in
//! [`search`]).
//!
//! Every call names the caller's [`MemoryAccess`] and the store resolves the bank through
//! it, so naming a bank is never enough to reach it: an agent reaches `self` (its own
//! memory) and the banks an operator granted it, and nothing else. There is no global scope.

use crate::error::StoreError;
use crate::sql::{in_tx, vals, Db, Engine, Val};
use search::{hit, newest, search, search_sql, ts_vector, Filter};

mod search;
use crate::{now_rfc3339, Store};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tackle_protocol::config::MemoryBankConfig;

/// The name of an agent's own memory in every listing and argument.
pub const SELF_BANK: &str = "self";

/// Longest key, in characters.
pub const MAX_KEY_CHARS: usize = 256;
/// Largest value, in bytes.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;
/// Most tags on one memory, and longest tag in characters.
pub const MAX_TAGS: usize = 32;
/// Longest tag, in characters.
pub const MAX_TAG_CHARS: usize = 64;
/// Query words beyond this many are ignored.
const MAX_QUERY_TERMS: usize = 32;

/// What an agent may do with a bank. Write implies read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BankPerm {
    /// Recall and list its memories.
    Read,
    /// Also remember, update and forget them.
    Write,
}

impl BankPerm {
    /// The name stored in grant rows and given to `tackle memory grant`.
    pub fn as_str(self) -> &'static str {
        match self {
            BankPerm::Read => "read",
            BankPerm::Write => "write",
        }
    }

    /// `Read` / `Write`, as `list_memory_banks` shows it.
    pub fn label(self) -> &'static str {
        match self {
            BankPerm::Read => "Read",
            BankPerm::Write => "Write",
        }
    }

    /// The permission a stored or given name means; `None` for an unknown one.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "read" => Some(BankPerm::Read),
            "write" => Some(BankPerm::Write),
            _ => None,
        }
    }
}

/// Whether `name` may name a shared bank: the one id rule for banks (1–64 of `a-z 0-9 _ -`,
/// starting with a letter or digit; see `tackle_protocol::ids`), and not `self`. One spelling
/// per bank, so no case, width or lookalike variant of a granted name can be another way in.
pub fn check_bank_name(name: &str) -> Result<(), StoreError> {
    if name == SELF_BANK {
        return Err(StoreError::InvalidBankName {
            name: name.to_string(),
            why: "`self` is each agent's own memory and cannot be a shared bank".to_string(),
        });
    }
    tackle_protocol::ids::check(tackle_protocol::ids::IdKind::Bank, name)?;
    Ok(())
}

/// The memory one agent may reach: its own (`self`) and the shared banks granted to it.
///
/// Built from the operator's grants ([`MemoryAccess::from_grants`], or
/// [`Store::memory_access`], which adds the grants stored by `tackle memory grant`), and
/// narrowed for anything the agent starts ([`MemoryAccess::narrow`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryAccess {
    agent: String,
    own: BankPerm,
    banks: BTreeMap<String, BankPerm>,
}

/// A bank grant as stored by `tackle memory grant`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredGrant {
    /// The shared bank granted.
    pub bank: String,
    /// The agent it is granted to.
    pub agent: String,
    /// What the agent may do with it.
    pub perm: BankPerm,
    /// When it was granted, RFC 3339 UTC.
    pub granted_at: String,
}

/// One line of `list_memory_banks`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BankListing {
    /// The name the agent uses for it (`self` for its own memory).
    pub name: String,
    /// What the agent may do with it.
    pub perm: BankPerm,
    /// Where the bank lives in the store: `agent:NAME` for own memory, `bank:NAME` for a
    /// shared bank.
    pub id: String,
}

impl MemoryAccess {
    /// `agent`'s access under the config's `memory_banks:` plus `stored` grants: for each
    /// bank, the stronger of what they give (write implies read). Grants naming other agents
    /// or invalid bank names give nothing.
    pub fn from_grants(
        agent: &str,
        config: &BTreeMap<String, MemoryBankConfig>,
        stored: &[StoredGrant],
    ) -> Self {
        let mut banks: BTreeMap<String, BankPerm> = BTreeMap::new();
        let mut give = |bank: &str, perm: BankPerm| {
            if check_bank_name(bank).is_ok() {
                let slot = banks.entry(bank.to_string()).or_insert(perm);
                *slot = (*slot).max(perm);
            }
        };
        for (bank, grant) in config {
            if grant.write.iter().any(|a| a == agent) {
                give(bank, BankPerm::Write);
            } else if grant.read.iter().any(|a| a == agent) {
                give(bank, BankPerm::Read);
            }
        }
        for g in stored.iter().filter(|g| g.agent == agent) {
            give(&g.bank, g.perm);
        }
        Self {
            agent: agent.to_string(),
            own: BankPerm::Write,
            banks,
        }
    }

    /// Access to nothing but `agent`'s own memory.
    pub fn own_only(agent: &str) -> Self {
        Self::from_grants(agent, &BTreeMap::new(), &[])
    }

    /// The agent whose own memory `self` is.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// What this access allows on `name` (`self` included), matched exactly.
    pub fn perm(&self, name: &str) -> Option<BankPerm> {
        if name == SELF_BANK {
            return Some(self.own);
        }
        self.banks.get(name).copied()
    }

    /// `self` first, then the granted banks by name.
    pub fn banks(&self) -> Vec<BankListing> {
        let mut out = vec![BankListing {
            name: SELF_BANK.to_string(),
            perm: self.own,
            id: format!("agent:{}", self.agent),
        }];
        out.extend(self.banks.iter().map(|(name, perm)| BankListing {
            name: name.clone(),
            perm: *perm,
            id: format!("bank:{name}"),
        }));
        out
    }

    /// The names `banks()` lists.
    pub fn bank_names(&self) -> Vec<String> {
        self.banks().into_iter().map(|b| b.name).collect()
    }

    /// This access as seen by something `parent` starts (a sub-agent or worker): each bank
    /// at the weaker of the two permissions, banks the parent lacks dropped, and `self` no
    /// stronger than the parent's own. It can only narrow: for every name,
    /// `narrowed.perm(n) <= min(self.perm(n), parent.perm(n))`.
    pub fn narrow(&self, parent: &MemoryAccess) -> MemoryAccess {
        let banks = self
            .banks
            .iter()
            .filter_map(|(name, perm)| {
                let theirs = parent.banks.get(name)?;
                Some((name.clone(), (*perm).min(*theirs)))
            })
            .collect();
        MemoryAccess {
            agent: self.agent.clone(),
            own: self.own.min(parent.own),
            banks,
        }
    }

    /// Where `bank` (absent = `self`) lives, if this access allows `need` on it.
    pub(crate) fn resolve(&self, bank: Option<&str>, need: BankPerm) -> Result<Scope, StoreError> {
        let name = bank.unwrap_or(SELF_BANK);
        let Some(perm) = self.perm(name) else {
            return Err(StoreError::UnknownBank {
                name: name.to_string(),
                available: self.bank_names(),
            });
        };
        if perm < need {
            return Err(StoreError::BankReadOnly {
                name: name.to_string(),
            });
        }
        Ok(if name == SELF_BANK {
            Scope {
                kind: "agent",
                owner: self.agent.clone(),
                name: SELF_BANK.to_string(),
            }
        } else {
            Scope {
                kind: "bank",
                owner: name.to_string(),
                name: name.to_string(),
            }
        })
    }
}

/// A resolved place in the store. Only [`MemoryAccess::resolve`] makes one.
#[derive(Debug, Clone)]
pub(crate) struct Scope {
    pub(crate) kind: &'static str,
    pub(crate) owner: String,
    /// The name the caller used (`self` or the bank's).
    pub(crate) name: String,
}

/// One stored memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryHit {
    /// The bank it is in (`self` for the agent's own memory).
    pub bank: String,
    /// Its key, unique within the bank.
    pub key: String,
    /// The stored text.
    pub value: String,
    /// Its tags, lower-cased.
    pub tags: Vec<String>,
    /// When it was last written, RFC 3339 UTC.
    pub updated_at: String,
    /// Relevance, higher is better (BM25 on SQLite, `ts_rank` on PostgreSQL, so scores
    /// compare only within one engine); 0 when listed without a query.
    pub score: f64,
}

/// What `recall` looks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecallQuery {
    /// Plain words; none = newest first.
    pub query: String,
    /// Every one must be on a memory (case-insensitive).
    pub tags: Vec<String>,
    /// Most memories returned; 0 counts as 1.
    pub limit: usize,
}

/// Tags as stored: trimmed, lowercased, without empties or repeats, in first-seen order.
pub fn normalize_tags(tags: &[String]) -> Result<Vec<String>, StoreError> {
    let mut out: Vec<String> = Vec::new();
    for t in tags {
        let t = t.trim().to_lowercase();
        if t.is_empty() || out.contains(&t) {
            continue;
        }
        if t.chars().count() > MAX_TAG_CHARS {
            return Err(StoreError::InvalidMemory(format!(
                "a tag is longer than {MAX_TAG_CHARS} characters"
            )));
        }
        out.push(t);
    }
    if out.len() > MAX_TAGS {
        return Err(StoreError::InvalidMemory(format!(
            "at most {MAX_TAGS} tags per memory"
        )));
    }
    Ok(out)
}

fn check_entry(key: &str, value: &str) -> Result<(), StoreError> {
    if key.trim().is_empty() {
        return Err(StoreError::InvalidMemory("the key is empty".into()));
    }
    if key.chars().count() > MAX_KEY_CHARS {
        return Err(StoreError::InvalidMemory(format!(
            "the key is longer than {MAX_KEY_CHARS} characters"
        )));
    }
    if value.len() > MAX_VALUE_BYTES {
        return Err(StoreError::InvalidMemory(format!(
            "the value is larger than {MAX_VALUE_BYTES} bytes"
        )));
    }
    Ok(())
}

impl Store {
    /// `agent`'s access: the config's `memory_banks:` plus the grants stored here.
    pub async fn memory_access(
        &self,
        agent: &str,
        config: &BTreeMap<String, MemoryBankConfig>,
    ) -> Result<MemoryAccess, StoreError> {
        let stored = self.memory_grants().await?;
        Ok(MemoryAccess::from_grants(agent, config, &stored))
    }

    /// Stores `value` under `key` in `bank` (absent = `self`); a later value for the same
    /// key supersedes it. Needs Write on the bank.
    pub async fn remember(
        &self,
        access: &MemoryAccess,
        bank: Option<&str>,
        key: &str,
        value: &str,
        tags: &[String],
    ) -> Result<MemoryHit, StoreError> {
        let scope = access.resolve(bank, BankPerm::Write)?;
        check_entry(key, value)?;
        let tags = normalize_tags(tags)?;
        let tags_json = serde_json::to_string(&tags).unwrap_or_else(|_| "[]".into());
        let (key, value) = (key.to_string(), value.to_string());
        self.with_db(move |db| {
            let now = now_rfc3339();
            in_tx(db, |db| {
                // On PostgreSQL the scope's row stays locked until the commit, so two daemons
                // writing one bank take turns choosing the next id.
                let id = scope_id(db, &scope, true)?.ok_or(StoreError::ScopeFull)?;
                let (lo, hi) = id_range(id);
                let next = db
                    .query_opt(
                        "SELECT COALESCE(MAX(id), ?1) + 1 FROM memories WHERE id BETWEEN ?1 AND ?2",
                        vals![lo, hi],
                    )?
                    .map(|r| r.int(0))
                    .transpose()?
                    .unwrap_or(lo + 1);
                if next > hi {
                    return Err(StoreError::ScopeFull);
                }
                let sql = search_sql(db.engine());
                let mut args = vec![
                    Val::Int(next),
                    Val::Int(id),
                    Val::from(&key),
                    Val::from(&value),
                    Val::from(&tags_json),
                    Val::from(&now),
                ];
                if sql.indexes_words {
                    args.push(Val::Text(ts_vector(&[&key, &value, &tags_json])));
                }
                db.execute(sql.upsert, &args)?;
                Ok(())
            })?;
            Ok(MemoryHit {
                bank: scope.name,
                key,
                value,
                tags,
                updated_at: now,
                score: 0.0,
            })
        })
        .await
    }

    /// The memories in `bank` (absent = `self`) that best match the query, best first
    /// (BM25 over key, value and tags on SQLite, `ts_rank` on PostgreSQL; equal scores
    /// newest first); without a usable word, newest first. Needs Read. A memory matches
    /// when it holds any query word as a whole word, case aside, on both engines.
    /// The query is plain text: FTS5 operators in it are matched as words, not obeyed.
    pub async fn recall(
        &self,
        access: &MemoryAccess,
        bank: Option<&str>,
        query: &RecallQuery,
    ) -> Result<Vec<MemoryHit>, StoreError> {
        let scope = access.resolve(bank, BankPerm::Read)?;
        let words = query_words(&query.query);
        let tags = normalize_tags(&query.tags)?;
        let tags_json = serde_json::to_string(&tags).unwrap_or_else(|_| "[]".into());
        let n_tags = i64::try_from(tags.len()).unwrap_or(i64::MAX);
        let limit = i64::try_from(query.limit.max(1)).unwrap_or(i64::MAX);
        self.with_db(move |db| {
            let Some(id) = scope_id(db, &scope, false)? else {
                return Ok(Vec::new());
            };
            let filter = Filter {
                scope: id,
                name: &scope.name,
                tags_json: &tags_json,
                n_tags,
                limit,
            };
            if words.is_empty() {
                newest(db, &filter)
            } else {
                search(db, &filter, &words)
            }
        })
        .await
    }

    /// The memory under exactly `key` in `bank` (absent = `self`). Needs Read.
    pub async fn memory_get(
        &self,
        access: &MemoryAccess,
        bank: Option<&str>,
        key: &str,
    ) -> Result<Option<MemoryHit>, StoreError> {
        let scope = access.resolve(bank, BankPerm::Read)?;
        let key = key.to_string();
        self.with_db(move |db| {
            let Some(id) = scope_id(db, &scope, false)? else {
                return Ok(None);
            };
            db.query_opt(
                "SELECT key, value, tags, updated_at FROM memories WHERE scope = ?1 AND key = ?2",
                vals![id, key],
            )?
            .map(|r| hit(&r, &scope.name))
            .transpose()
        })
        .await
    }

    /// Removes `key` from `bank` (absent = `self`); whether it was there. Needs Write.
    pub async fn forget(
        &self,
        access: &MemoryAccess,
        bank: Option<&str>,
        key: &str,
    ) -> Result<bool, StoreError> {
        let scope = access.resolve(bank, BankPerm::Write)?;
        let key = key.to_string();
        self.with_db(move |db| {
            let Some(id) = scope_id(db, &scope, false)? else {
                return Ok(false);
            };
            let n = db.execute(
                "DELETE FROM memories WHERE scope = ?1 AND key = ?2",
                vals![id, key],
            )?;
            Ok(n > 0)
        })
        .await
    }

    /// How many memories `bank` (absent = `self`) holds. Needs Read.
    pub async fn memory_count(
        &self,
        access: &MemoryAccess,
        bank: Option<&str>,
    ) -> Result<i64, StoreError> {
        let scope = access.resolve(bank, BankPerm::Read)?;
        self.with_db(move |db| {
            let Some(id) = scope_id(db, &scope, false)? else {
                return Ok(0);
            };
            db.query_opt("SELECT COUNT(*) FROM memories WHERE scope = ?1", vals![id])?
                .map_or(Ok(0), |r| r.int(0))
        })
        .await
    }

    /// Grants `agent` `perm` on shared bank `bank`, replacing a stored grant it had.
    pub async fn grant_memory_bank(
        &self,
        bank: &str,
        agent: &str,
        perm: BankPerm,
    ) -> Result<(), StoreError> {
        check_bank_name(bank)?;
        if agent.trim().is_empty() {
            return Err(StoreError::InvalidMemory("the agent name is empty".into()));
        }
        let (bank, agent) = (bank.to_string(), agent.to_string());
        self.with_db(move |db| {
            db.execute(
                "INSERT INTO memory_grants (bank, agent, perm, granted_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (bank, agent) DO UPDATE SET perm = excluded.perm, granted_at = excluded.granted_at",
                vals![bank, agent, perm.as_str(), now_rfc3339()],
            )?;
            Ok(())
        })
        .await
    }

    /// Removes the stored grant of `bank` to `agent`; whether there was one. Grants written
    /// in the config are not stored here and stay in force.
    pub async fn revoke_memory_bank(&self, bank: &str, agent: &str) -> Result<bool, StoreError> {
        let (bank, agent) = (bank.to_string(), agent.to_string());
        self.with_db(move |db| {
            let n = db.execute(
                "DELETE FROM memory_grants WHERE bank = ?1 AND agent = ?2",
                vals![bank, agent],
            )?;
            Ok(n > 0)
        })
        .await
    }

    /// Every stored grant, by bank then agent.
    pub async fn memory_grants(&self) -> Result<Vec<StoredGrant>, StoreError> {
        self.with_db(|db| {
            let rows = db.query(
                "SELECT bank, agent, perm, granted_at FROM memory_grants ORDER BY bank, agent",
                &[],
            )?;
            let mut out = Vec::with_capacity(rows.len());
            for r in rows {
                let perm = r.text(2)?;
                let perm = BankPerm::parse(&perm).ok_or(StoreError::BadValue {
                    what: "bank permission",
                    value: perm,
                })?;
                out.push(StoredGrant {
                    bank: r.text(0)?,
                    agent: r.text(1)?,
                    perm,
                    granted_at: r.text(3)?,
                });
            }
            Ok(out)
        })
        .await
    }
}

/// Query words: lowercase runs of letters and digits of two characters or more, without
/// repeats, at most [`MAX_QUERY_TERMS`].
fn query_words(query: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for w in query.split(|c: char| !c.is_alphanumeric()) {
        let w = w.to_lowercase();
        if w.chars().count() >= 2 && !words.contains(&w) {
            words.push(w);
        }
        if words.len() == MAX_QUERY_TERMS {
            break;
        }
    }
    words
}

/// The query words for FTS5: each quoted, joined by OR; so `NEAR`, `*`, `:` or quotes in
/// the query cannot change its meaning or make it a syntax error. `None` when no word is
/// usable.
#[cfg(test)]
pub(crate) fn fts_query(query: &str) -> Option<String> {
    use search::fts5_match;
    let words = query_words(query);
    (!words.is_empty()).then(|| fts5_match(&words))
}

/// The id of `scope` in `memory_scopes`, created when `create` (else `None` when it has no
/// memories yet, or no room is left for another scope). When `create`, the row is locked
/// for the rest of the transaction on engines that lock rows.
fn scope_id(db: &mut dyn Db, scope: &Scope, create: bool) -> Result<Option<i64>, StoreError> {
    let lock = if create { db.for_update() } else { "" };
    let select = format!("SELECT id FROM memory_scopes WHERE owner_kind = ?1 AND owner = ?2{lock}");
    let mut found = db
        .query_opt(&select, vals![scope.kind, &scope.owner])?
        .map(|r| r.int(0))
        .transpose()?;
    if found.is_none() && create {
        // Two daemons creating one scope: the second waits for the first and adds nothing.
        db.execute(
            "INSERT INTO memory_scopes (owner_kind, owner) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            vals![scope.kind, &scope.owner],
        )?;
        found = db
            .query_opt(&select, vals![scope.kind, &scope.owner])?
            .map(|r| r.int(0))
            .transpose()?;
    }
    Ok(found.filter(|id| *id < MAX_SCOPES))
}

/// Holds `scope` for the rest of the transaction against other daemons' writes to the same
/// place, on an engine that locks rows (its `memory_scopes` row, made when missing); SQLite's
/// write transaction already holds the whole file, so nothing is added there.
pub(crate) fn lock_scope(db: &mut dyn Db, scope: &Scope) -> Result<(), StoreError> {
    if db.engine() == Engine::Sqlite {
        return Ok(());
    }
    scope_id(db, scope, true).map(|_| ())
}

/// Scope ids stay below 2^31 so that `scope << 32` is a positive i64.
const MAX_SCOPES: i64 = 1 << 31;

/// The ids scope `id` owns: `(id << 32) + 1 ..= (id << 32) + 2^32 - 1`.
fn id_range(id: i64) -> (i64, i64) {
    let lo = id << 32;
    (lo, lo + 0xFFFF_FFFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_words_are_lowercased_deduplicated_and_at_least_two_characters() {
        assert_eq!(
            fts_query("Rust a rust, CARGO* x").as_deref(),
            Some("\"rust\" OR \"cargo\"")
        );
        assert_eq!(fts_query("a b - * \""), None);
    }

    #[test]
    fn bank_names_have_exactly_one_spelling() {
        for ok in ["project-alpha", "a", "team_2"] {
            assert!(check_bank_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "self",
            "Project-Alpha",
            " project-alpha",
            "project-alpha ",
            "pr\u{43e}ject",
            "../self",
            "a/b",
            "-x",
            "ｐroject",
        ] {
            assert!(check_bank_name(bad).is_err(), "{bad:?}");
        }
    }
}
