//! The approval queue: calls waiting for a person's yes, one row each, answered from any front
//! end (the terminal, `tackle approvals`, the HTTP API, a chat channel) in any process that
//! opens the same database (docs/decisions/0030-one-approval-queue.md).
//!
//! A row is written `pending` with a deadline and leaves that state exactly once, by one
//! `UPDATE … WHERE status = 'pending'`: the first answer wins, in this process or another, and
//! a later one gets [`StoreError::AlreadyAnswered`] naming what won. A row past its deadline
//! is never answered: whoever looks first (the waiter, [`Store::expire_due_approvals`], a late
//! answer) records it `expired`, so a waiter that died leaves nothing pending for ever.
//!
//! After every change the store touches [`Store::approvals_marker`], a file beside the
//! database that a waiter in another process watches to wake at once instead of polling.
//!
//! The preview is stored as given: callers redact it first, as they do the audit summary.

use crate::error::StoreError;
use crate::schedules::{from_ms, to_ms};
use crate::sql::{vals, Db, Row};
use crate::Store;
use serde::{Deserialize, Serialize};
use std::hash::{BuildHasher, Hasher};
use std::io::Read;
use time::OffsetDateTime;

/// The name of the file [`Store::approvals_marker`] returns, beside the database.
pub const APPROVALS_MARKER: &str = "approvals.changed";

/// The longest preview stored; a longer one is cut (on a character boundary) with a note.
pub const PREVIEW_MAX_BYTES: usize = 16 * 1024;

/// Where a queued approval stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// Waiting for an answer until its deadline.
    Pending,
    /// Yes, this call.
    Allowed,
    /// Yes, and the tool for the rest of the calling session.
    AllowedForSession,
    /// No: the call ended denied.
    Denied,
    /// No answer before the deadline: the call ended `needs_approval`.
    Expired,
    /// The call's turn ended (cancelled, the process stopping) before an answer.
    Cancelled,
}

impl ApprovalStatus {
    /// The name stored in the `status` column and shown by `tackle approvals`.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Allowed => "allowed",
            ApprovalStatus::AllowedForSession => "allowed_for_session",
            ApprovalStatus::Denied => "denied",
            ApprovalStatus::Expired => "expired",
            ApprovalStatus::Cancelled => "cancelled",
        }
    }

    /// The status a stored name means; `None` for an unknown one.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => ApprovalStatus::Pending,
            "allowed" => ApprovalStatus::Allowed,
            "allowed_for_session" => ApprovalStatus::AllowedForSession,
            "denied" => ApprovalStatus::Denied,
            "expired" => ApprovalStatus::Expired,
            "cancelled" => ApprovalStatus::Cancelled,
            _ => return None,
        })
    }
}

/// A person's answer to a queued approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalReply {
    /// Yes, this call only.
    Allow,
    /// Yes, and the tool for the rest of the calling session.
    AllowForSession,
    /// No.
    Deny,
}

impl ApprovalReply {
    fn status(self) -> ApprovalStatus {
        match self {
            ApprovalReply::Allow => ApprovalStatus::Allowed,
            ApprovalReply::AllowForSession => ApprovalStatus::AllowedForSession,
            ApprovalReply::Deny => ApprovalStatus::Denied,
        }
    }
}

/// A call to queue for approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewApproval {
    /// The agent whose call waits.
    pub agent: String,
    /// The calling session (empty for a call outside one).
    pub session_id: String,
    /// The tool called.
    pub tool: String,
    /// What the terminal prompt shows: why, what the call will do (command, diff, content)
    /// and the grants in force. Already redacted.
    pub preview: String,
    /// Who may answer: token scopes or approver names, free-form; empty = any front end.
    /// The store records them; each front end checks its caller against them.
    pub approvers: Vec<String>,
    /// Unanswered by then, it expires.
    pub deadline: OffsetDateTime,
    /// The process waiting for the answer, as its front end names it; `None`: unknown.
    pub waiter: Option<String>,
}

/// A queued approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// Random and URL-safe (`[0-9a-f]{24}`), so it can be put in a path and not guessed.
    pub id: String,
    /// When it was queued.
    #[serde(with = "time::serde::timestamp::milliseconds")]
    pub created: OffsetDateTime,
    /// Unanswered by then, it expires.
    #[serde(with = "time::serde::timestamp::milliseconds")]
    pub deadline: OffsetDateTime,
    /// The agent whose call waits.
    pub agent: String,
    /// The calling session (empty for a call outside one).
    pub session_id: String,
    /// The tool called.
    pub tool: String,
    /// What the prompt shows: why, what the call will do and the grants in force; redacted.
    pub preview: String,
    /// Who may answer (token scopes or approver names); empty: any front end.
    pub approvers: Vec<String>,
    /// Where it stands.
    pub status: ApprovalStatus,
    /// Who answered (`cli:alice`, a token's name); for `expired` / `cancelled`, what ended it.
    pub answered_by: Option<String>,
    /// When it was answered or ended (`None` while pending).
    #[serde(with = "time::serde::timestamp::milliseconds::option")]
    pub answered_at: Option<OffsetDateTime>,
    /// The process waiting for the answer (see [`NewApproval::waiter`]).
    #[serde(default)]
    pub waiter: Option<String>,
}

impl Approval {
    /// Whether `who` (a front end's scopes or names) is among those who may answer: any of
    /// them listed, or no list at all.
    pub fn may_answer<S: AsRef<str>>(&self, who: &[S]) -> bool {
        self.approvers.is_empty()
            || who
                .iter()
                .any(|w| self.approvers.iter().any(|a| a == w.as_ref()))
    }
}

const COLUMNS: &str = "id, created_ms, deadline_ms, agent, session_id, tool, preview, approvers, \
                       status, answered_by, answered_ms, waiter";

impl Store {
    /// The file touched after every change to the queue (see the module docs); `None` for an
    /// in-memory store.
    pub fn approvals_marker(&self) -> Option<std::path::PathBuf> {
        self.path()
            .and_then(|p| p.parent())
            .map(|d| d.join(APPROVALS_MARKER))
    }

    /// Best effort: the change is committed either way, and a waiter that misses a touch
    /// still sees it at its next poll.
    fn touch_approvals_marker(&self) {
        if let Some(marker) = self.approvals_marker() {
            let _ = std::fs::write(&marker, to_ms(OffsetDateTime::now_utc()).to_string());
        }
    }

    /// Queues `new` as pending, under a fresh random id.
    pub async fn enqueue_approval(&self, new: NewApproval) -> Result<Approval, StoreError> {
        let approval = Approval {
            id: new_id(),
            created: OffsetDateTime::now_utc(),
            deadline: new.deadline,
            agent: new.agent,
            session_id: new.session_id,
            tool: new.tool,
            preview: bounded(new.preview),
            approvers: new.approvers,
            status: ApprovalStatus::Pending,
            answered_by: None,
            answered_at: None,
            waiter: new.waiter,
        };
        let row = approval.clone();
        self.with_db(move |db| {
            db.execute(
                "INSERT INTO approvals (id, created_ms, deadline_ms, agent, session_id, tool,
                                        preview, approvers, status, waiter)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'pending', ?9)",
                vals![
                    &row.id,
                    to_ms(row.created),
                    to_ms(row.deadline),
                    &row.agent,
                    &row.session_id,
                    &row.tool,
                    &row.preview,
                    serde_json::to_string(&row.approvers).unwrap_or_else(|_| "[]".into()),
                    row.waiter.clone(),
                ],
            )?;
            Ok(())
        })
        .await?;
        self.touch_approvals_marker();
        Ok(approval)
    }

    /// The approval `id`, as it stands.
    pub async fn approval(&self, id: &str) -> Result<Option<Approval>, StoreError> {
        let id = id.to_string();
        self.with_db(move |db| get(db, &id)).await
    }

    /// The approvals still pending at `now`, oldest first (those past their deadline are
    /// recorded expired first, so none is listed that can no longer be answered).
    pub async fn list_pending_approvals(
        &self,
        now: OffsetDateTime,
    ) -> Result<Vec<Approval>, StoreError> {
        self.expire_due_approvals(now).await?;
        self.with_db(|db| {
            let sql = format!(
                "SELECT {COLUMNS} FROM approvals WHERE status = 'pending' ORDER BY created_ms, id"
            );
            collect(db, &sql, &[])
        })
        .await
    }

    /// The newest `limit` approvals whatever their status, newest first.
    pub async fn list_recent_approvals(&self, limit: usize) -> Result<Vec<Approval>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_db(move |db| {
            let sql = format!(
                "SELECT {COLUMNS} FROM approvals ORDER BY created_ms DESC, id DESC LIMIT ?1"
            );
            collect(db, &sql, vals![limit])
        })
        .await
    }

    /// Answers approval `id` for `by` (who answered, as the audit log will name them). The
    /// first answer wins: a later one, or one after the deadline, is
    /// [`StoreError::AlreadyAnswered`] with what happened instead; an id never queued is
    /// [`StoreError::UnknownApproval`].
    pub async fn answer_approval(
        &self,
        id: &str,
        reply: ApprovalReply,
        by: &str,
    ) -> Result<Approval, StoreError> {
        let (id, by) = (id.to_string(), by.to_string());
        let now = OffsetDateTime::now_utc();
        let (won, row) = self
            .with_db(move |db| {
                let won = settle(db, &id, reply.status(), &by, now, true)?;
                if !won {
                    // Past its deadline but not yet recorded so: it is now.
                    settle(db, &id, ApprovalStatus::Expired, "deadline", now, false)?;
                }
                let row = get(db, &id)?.ok_or(StoreError::UnknownApproval(id))?;
                Ok((won, row))
            })
            .await?;
        self.touch_approvals_marker();
        if won {
            Ok(row)
        } else {
            Err(StoreError::AlreadyAnswered {
                id: row.id,
                status: row.status,
                by: row.answered_by,
            })
        }
    }

    /// Ends a pending approval with no answer: `Expired` (its waiter reached the deadline) or
    /// `Cancelled` (its call's turn ended), `why` recorded as what ended it. Returns the row
    /// as it stands after: an answer that won first is kept and returned, so the caller can
    /// still act on it. `None`: no such id.
    pub async fn close_approval(
        &self,
        id: &str,
        status: ApprovalStatus,
        why: &str,
    ) -> Result<Option<Approval>, StoreError> {
        let (id, why) = (id.to_string(), why.to_string());
        let now = OffsetDateTime::now_utc();
        let row = self
            .with_db(move |db| {
                settle(db, &id, status, &why, now, false)?;
                get(db, &id)
            })
            .await?;
        self.touch_approvals_marker();
        Ok(row)
    }

    /// Records every approval pending past its deadline at `now` as expired; returns their
    /// ids. Run by the daemon at start and by every listing, so an approval whose waiter died
    /// (kill -9) ends expired with a record, never pending for ever.
    pub async fn expire_due_approvals(
        &self,
        now: OffsetDateTime,
    ) -> Result<Vec<String>, StoreError> {
        let expired = self
            .with_db(move |db| {
                db.query(
                    "UPDATE approvals SET status = 'expired', answered_by = 'deadline',
                            answered_ms = ?1
                     WHERE status = 'pending' AND deadline_ms <= ?1 RETURNING id",
                    vals![to_ms(now)],
                )?
                .iter()
                .map(|r| r.text(0))
                .collect::<Result<Vec<_>, _>>()
            })
            .await?;
        if !expired.is_empty() {
            self.touch_approvals_marker();
        }
        Ok(expired)
    }
}

/// Moves `id` from pending to `status`, in one statement no other writer can interleave
/// with; `true` when this call made the change. With `before_deadline`, only while the
/// deadline is still ahead of `now`.
fn settle(
    db: &mut dyn Db,
    id: &str,
    status: ApprovalStatus,
    by: &str,
    now: OffsetDateTime,
    before_deadline: bool,
) -> Result<bool, StoreError> {
    let n = db.execute(
        "UPDATE approvals SET status = ?2, answered_by = ?3, answered_ms = ?4
         WHERE id = ?1 AND status = 'pending' AND (?5 = 0 OR deadline_ms > ?4)",
        vals![id, status.as_str(), by, to_ms(now), before_deadline],
    )?;
    Ok(n == 1)
}

fn get(db: &mut dyn Db, id: &str) -> Result<Option<Approval>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM approvals WHERE id = ?1");
    db.query_opt(&sql, vals![id])?
        .map(|r| typed(&r))
        .transpose()
}

fn collect(
    db: &mut dyn Db,
    sql: &str,
    args: &[crate::sql::Val],
) -> Result<Vec<Approval>, StoreError> {
    db.query(sql, args)?.iter().map(typed).collect()
}

/// A row of [`COLUMNS`] as an approval; a bad status, time or approver list is an error.
fn typed(r: &Row) -> Result<Approval, StoreError> {
    let (id, created, deadline) = (r.text(0)?, r.int(1)?, r.int(2)?);
    let (agent, session_id, tool, preview) = (r.text(3)?, r.text(4)?, r.text(5)?, r.text(6)?);
    let (approvers, status) = (r.text(7)?, r.text(8)?);
    let (by, at, waiter) = (r.opt_text(9)?, r.opt_int(10)?, r.opt_text(11)?);
    let time = |ms: i64| {
        from_ms(ms).ok_or(StoreError::BadValue {
            what: "approval time",
            value: ms.to_string(),
        })
    };
    Ok(Approval {
        created: time(created)?,
        deadline: time(deadline)?,
        agent,
        session_id,
        tool,
        preview,
        approvers: serde_json::from_str(&approvers).map_err(|_| StoreError::BadValue {
            what: "approver list",
            value: approvers.clone(),
        })?,
        status: ApprovalStatus::parse(&status).ok_or(StoreError::BadValue {
            what: "approval status",
            value: status.clone(),
        })?,
        answered_by: by,
        answered_at: at.map(time).transpose()?,
        waiter,
        id,
    })
}

/// 96 random bits as 24 lowercase hex digits: from the kernel's generator, or (should it be
/// unreadable) from std's randomly keyed hasher over the time and a counter.
fn new_id() -> String {
    let mut bytes = [0u8; 12];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_err() {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = OffsetDateTime::now_utc().unix_timestamp_nanos();
        for (i, chunk) in bytes.chunks_mut(8).enumerate() {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_i128(nanos);
            h.write_u64(n);
            h.write_usize(i);
            let word = h.finish().to_le_bytes();
            for (b, w) in chunk.iter_mut().zip(word) {
                *b = w;
            }
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `preview` cut to [`PREVIEW_MAX_BYTES`] on a character boundary.
fn bounded(mut preview: String) -> String {
    if preview.len() > PREVIEW_MAX_BYTES {
        let mut cut = PREVIEW_MAX_BYTES;
        while !preview.is_char_boundary(cut) {
            cut -= 1;
        }
        preview.truncate(cut);
        preview.push_str("\n… (preview cut)");
    }
    preview
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn new(deadline_in: Duration) -> NewApproval {
        NewApproval {
            agent: "default".into(),
            session_id: "20260102-030405-0a1b2c3d".into(),
            tool: "shell".into(),
            preview: "shell touch proof.txt".into(),
            approvers: vec!["approve".into()],
            deadline: OffsetDateTime::now_utc() + deadline_in,
            waiter: Some("host/boot/1/2".into()),
        }
    }

    #[tokio::test]
    async fn the_first_of_sixteen_concurrent_answers_from_sixteen_connections_wins() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let queued = store
            .enqueue_approval(new(Duration::from_secs(60)))
            .await
            .unwrap();
        // One connection each, as sixteen processes would have.
        let stores: Vec<Store> = (0..16).map(|_| Store::open(dir.path()).unwrap()).collect();
        let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(16));
        let tasks: Vec<_> = stores
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                let (id, barrier) = (queued.id.clone(), barrier.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    let reply = if i % 2 == 0 {
                        ApprovalReply::Allow
                    } else {
                        ApprovalReply::Deny
                    };
                    s.answer_approval(&id, reply, &format!("answerer-{i}"))
                        .await
                })
            })
            .collect();
        let mut winners = Vec::new();
        let mut told = Vec::new();
        for t in tasks {
            match t.await.unwrap() {
                Ok(a) => winners.push(a),
                Err(StoreError::AlreadyAnswered { status, by, .. }) => told.push((status, by)),
                Err(e) => panic!("unexpected: {e}"),
            }
        }
        assert_eq!(winners.len(), 1, "exactly one answer wins");
        assert_eq!(told.len(), 15);
        let won = &winners[0];
        // Every loser is told what won, and by whom.
        for (status, by) in &told {
            assert_eq!(*status, won.status);
            assert_eq!(by, &won.answered_by);
        }
        let stored = store.approval(&queued.id).await.unwrap().unwrap();
        assert_eq!(stored.status, won.status);
        assert_eq!(stored.answered_by, won.answered_by);
        assert!(stored.answered_at.is_some());
    }

    #[tokio::test]
    async fn a_second_answer_is_told_what_the_first_was_and_by_whom() {
        let store = Store::open_in_memory().unwrap();
        let a = store
            .enqueue_approval(new(Duration::from_secs(60)))
            .await
            .unwrap();
        let won = store
            .answer_approval(&a.id, ApprovalReply::AllowForSession, "cli:alice")
            .await
            .unwrap();
        assert_eq!(won.status, ApprovalStatus::AllowedForSession);
        let late = store
            .answer_approval(&a.id, ApprovalReply::Deny, "cli:bob")
            .await
            .unwrap_err();
        assert_eq!(
            late.to_string(),
            format!(
                "approval {} was already answered: allowed_for_session by cli:alice",
                a.id
            )
        );
        let unknown = store
            .answer_approval("0123456789abcdef01234567", ApprovalReply::Allow, "cli:bob")
            .await
            .unwrap_err();
        assert!(
            matches!(unknown, StoreError::UnknownApproval(_)),
            "{unknown}"
        );
    }

    #[tokio::test]
    async fn past_its_deadline_an_approval_expires_and_can_no_longer_be_allowed() {
        let store = Store::open_in_memory().unwrap();
        let soon = store
            .enqueue_approval(new(Duration::from_millis(1)))
            .await
            .unwrap();
        let later = store
            .enqueue_approval(new(Duration::from_secs(60)))
            .await
            .unwrap();
        let now = OffsetDateTime::now_utc() + Duration::from_millis(5);
        assert_eq!(
            store.expire_due_approvals(now).await.unwrap(),
            std::slice::from_ref(&soon.id)
        );
        assert!(store.expire_due_approvals(now).await.unwrap().is_empty());
        let e = store
            .answer_approval(&soon.id, ApprovalReply::Allow, "cli:alice")
            .await
            .unwrap_err();
        assert!(
            matches!(
                e,
                StoreError::AlreadyAnswered {
                    status: ApprovalStatus::Expired,
                    ..
                }
            ),
            "{e}"
        );
        // Not yet expired by anyone, but past the deadline: the late answer expires it.
        let lapsed = store
            .enqueue_approval(new(Duration::from_millis(1)))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        let e = store
            .answer_approval(&lapsed.id, ApprovalReply::Allow, "cli:alice")
            .await
            .unwrap_err();
        assert!(e.to_string().contains("expired"), "{e}");
        let pending = store
            .list_pending_approvals(OffsetDateTime::now_utc())
            .await
            .unwrap();
        assert_eq!(
            pending.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(),
            [later.id.as_str()]
        );
    }

    #[tokio::test]
    async fn closing_keeps_an_answer_that_won_first() {
        let store = Store::open_in_memory().unwrap();
        let a = store
            .enqueue_approval(new(Duration::from_secs(60)))
            .await
            .unwrap();
        store
            .answer_approval(&a.id, ApprovalReply::Allow, "cli:alice")
            .await
            .unwrap();
        let after = store
            .close_approval(&a.id, ApprovalStatus::Cancelled, "turn cancelled")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(after.status, ApprovalStatus::Allowed);
        let b = store
            .enqueue_approval(new(Duration::from_secs(60)))
            .await
            .unwrap();
        let after = store
            .close_approval(&b.id, ApprovalStatus::Cancelled, "turn cancelled")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(after.status, ApprovalStatus::Cancelled);
        assert_eq!(after.answered_by.as_deref(), Some("turn cancelled"));
    }

    #[tokio::test]
    async fn listings_show_pending_oldest_first_and_recent_newest_first_with_the_preview() {
        let store = Store::open_in_memory().unwrap();
        let mut ids = Vec::new();
        for i in 0..3 {
            let mut n = new(Duration::from_secs(60));
            n.preview = format!("call {i}");
            ids.push(store.enqueue_approval(n).await.unwrap().id);
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        store
            .answer_approval(&ids[1], ApprovalReply::Deny, "cli:alice")
            .await
            .unwrap();
        let pending = store
            .list_pending_approvals(OffsetDateTime::now_utc())
            .await
            .unwrap();
        let previews: Vec<&str> = pending.iter().map(|a| a.preview.as_str()).collect();
        assert_eq!(previews, ["call 0", "call 2"]);
        assert_eq!(pending[0].approvers, ["approve"]);
        let recent = store.list_recent_approvals(2).await.unwrap();
        let got: Vec<&str> = recent.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(got, [ids[2].as_str(), ids[1].as_str()]);
        assert_eq!(recent[1].status, ApprovalStatus::Denied);
    }

    #[test]
    fn ids_are_url_safe_and_distinct() {
        let a = new_id();
        assert_eq!(a.len(), 24);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, new_id());
    }

    #[test]
    fn only_listed_approvers_may_answer_unless_none_are_listed() {
        let mut a = Approval {
            id: new_id(),
            created: OffsetDateTime::now_utc(),
            deadline: OffsetDateTime::now_utc(),
            agent: "default".into(),
            session_id: String::new(),
            tool: "shell".into(),
            preview: String::new(),
            approvers: vec!["approve".into()],
            status: ApprovalStatus::Pending,
            answered_by: None,
            answered_at: None,
            waiter: None,
        };
        assert!(a.may_answer(&["read", "approve"]));
        assert!(!a.may_answer(&["read", "chat"]));
        a.approvers.clear();
        assert!(a.may_answer(&["read"]));
    }
}
