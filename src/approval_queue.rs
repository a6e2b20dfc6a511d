//! The approval queue's waiting side (docs/decisions/0030-one-approval-queue.md): a call that
//! needs a person is put in the store's queue with the terminal prompt's preview, and its
//! turn waits until a front end in any process answers it (`tackle approvals allow ID`, the
//! HTTP API), its deadline passes, or the turn ends.
//!
//! For a front end of this process:
//! - [`ApprovalQueue::new`] once per process over its store: it watches the store's approvals
//!   marker so a waiter wakes within milliseconds of an answer written by another process
//!   (and polls, more slowly, in case the watch misses one or cannot be set up).
//! - [`QueueApprover::new`] per session (or turn): an [`Approver`] whose every ask is one
//!   queued approval. Answers come back to the dispatcher with who answered
//!   (`queue:cli:alice`), which the audit log records. No answer by the deadline is
//!   `needs_approval`, never a silent yes or no; a cancelled turn (or a dropped wait) records
//!   the entry `cancelled`, so nothing stays pending.
//! - A person's prompt (the terminal's, an MCP client's elicitation) is queued too, and
//!   raced against this wait: `crate::queued_prompt`.
//! - Answering is the store's: [`tackle_store::Store::answer_approval`], where the first
//!   answer wins.

use crate::schedules::{watch_file, MarkerWatch};
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::{ApprovalAnswer, ApprovalRequest, ApprovalUnavailable, Approver};
use tackle_store::{Approval, ApprovalStatus, NewApproval, Store, StoreError};
use time::OffsetDateTime;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How often a waiter re-reads its entry when the marker is watched (a missed event costs at
/// most this), and when it cannot be (then this is the answer's latency).
const POLL_WATCHED: Duration = Duration::from_secs(1);
const POLL_UNWATCHED: Duration = Duration::from_millis(100);

/// Who a fire's approval may be answered by: a front end with the `approve` scope (an API
/// token's) or the operator at this machine (`tackle approvals`, which the state file's
/// owner may always run).
pub const APPROVE_SCOPE: &str = "approve";

/// The queue as this process waits on it: the store and a change counter bumped whenever
/// the store's approvals marker is touched, here or by another process.
pub struct ApprovalQueue {
    store: Store,
    changes: watch::Receiver<u64>,
    poll: Duration,
    _watch: Option<MarkerWatch>,
}

impl ApprovalQueue {
    pub fn new(store: Store) -> Arc<Self> {
        let (tx, changes) = watch::channel(0u64);
        let watched = store.approvals_marker().and_then(|marker| {
            watch_file(
                &marker,
                "answers to queued approvals are seen only by polling",
                move || tx.send_modify(|n| *n = n.wrapping_add(1)),
            )
        });
        Arc::new(Self {
            store,
            changes,
            poll: if watched.is_some() {
                POLL_WATCHED
            } else {
                POLL_UNWATCHED
            },
            _watch: watched,
        })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Waits until approval `id` is no longer pending and returns it: answered, or recorded
    /// `expired` once `deadline` passes, or `cancelled` when `cancel` fires first. An answer
    /// that wins the race with the expiry (or the cancel) is returned as the answer it is.
    pub async fn wait(
        &self,
        id: &str,
        deadline: OffsetDateTime,
        cancel: &CancellationToken,
    ) -> Result<Approval, StoreError> {
        let mut changes = self.changes.clone();
        loop {
            // Marked seen before the read, so a change after it wakes the wait below.
            changes.borrow_and_update();
            let Some(row) = self.store.approval(id).await? else {
                return Err(StoreError::UnknownApproval(id.to_string()));
            };
            if row.status != ApprovalStatus::Pending {
                return Ok(row);
            }
            let left = deadline - OffsetDateTime::now_utc();
            if left <= time::Duration::ZERO {
                return self.close(id, ApprovalStatus::Expired, "deadline").await;
            }
            let nap = Duration::try_from(left).unwrap_or_default().min(self.poll);
            tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    return self.close(id, ApprovalStatus::Cancelled, "the turn was cancelled").await;
                }
                changed = changes.changed() => {
                    // The watch is gone: fall back to the poll.
                    if changed.is_err() {
                        tokio::time::sleep(nap).await;
                    }
                }
                () = tokio::time::sleep(nap) => {}
            }
        }
    }

    async fn close(
        &self,
        id: &str,
        status: ApprovalStatus,
        why: &str,
    ) -> Result<Approval, StoreError> {
        self.store
            .close_approval(id, status, why)
            .await?
            .ok_or_else(|| StoreError::UnknownApproval(id.to_string()))
    }
}

/// An [`Approver`] that queues each ask and waits for its answer.
pub struct QueueApprover {
    queue: Arc<ApprovalQueue>,
    agent: String,
    session_id: String,
    approvers: Vec<String>,
    timeout: Duration,
    cancel: CancellationToken,
    /// Print a line on stderr for each queued approval (the daemon's log).
    announce: bool,
    /// Told of each approval as it is queued and again as it settles (a front end that says
    /// where to answer it, and what became of it).
    on_change: Option<OnChange>,
}

/// What a front end does when one of its calls is queued (the entry is `pending`) and when
/// it is settled (any other status).
pub type OnChange = Arc<dyn Fn(&Approval) + Send + Sync>;

impl QueueApprover {
    /// Asks for `agent`'s calls in `session_id`, each waiting up to `timeout`; `approvers`
    /// is who may answer (see [`NewApproval::approvers`]); `cancel` is the turn's.
    pub fn new(
        queue: Arc<ApprovalQueue>,
        agent: &str,
        session_id: &str,
        approvers: Vec<String>,
        timeout: Duration,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            queue,
            agent: agent.to_string(),
            session_id: session_id.to_string(),
            approvers,
            timeout,
            cancel,
            announce: false,
            on_change: None,
        }
    }

    /// Call `f` with each entry as it is queued (before the wait) and as it settles.
    pub fn on_change(mut self, f: OnChange) -> Self {
        self.on_change = Some(f);
        self
    }

    /// Say on stderr what waits and how to answer it.
    pub fn announcing(mut self, on: bool) -> Self {
        self.announce = on;
        self
    }

    fn unavailable(&self, req: &ApprovalRequest, what: String) -> ApprovalUnavailable {
        crate::approval::unavailable(req, &what)
    }
}

/// The queue entry for `req`: what the terminal prompt shows (every secret value the config
/// knows blanked), who may answer, until when, and this process as its waiter.
pub fn entry_for(
    req: &ApprovalRequest,
    agent: &str,
    session_id: &str,
    approvers: Vec<String>,
    deadline: OffsetDateTime,
) -> NewApproval {
    NewApproval {
        agent: agent.to_string(),
        session_id: session_id.to_string(),
        tool: req.tool.clone(),
        preview: crate::log_redact::redact(crate::approval::render(req).trim()),
        approvers,
        deadline,
        waiter: Some(crate::waiter::this_process().to_string()),
    }
}

/// Marks a queued approval cancelled if its wait is dropped before it ends (the turn's
/// future dropped: a lease lost, a client gone), so it is not left pending.
pub(crate) struct Abandoned {
    store: Store,
    id: Option<String>,
}

impl Abandoned {
    /// Watches over approval `id` until [`Abandoned::settled`].
    pub(crate) fn new(store: &Store, id: &str) -> Self {
        Self {
            store: store.clone(),
            id: Some(id.to_string()),
        }
    }

    /// The entry is settled (or is being settled by the caller): nothing to do on drop.
    pub(crate) fn settled(&mut self) {
        self.id = None;
    }
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let store = self.store.clone();
            runtime.spawn(async move {
                let _ = store
                    .close_approval(&id, ApprovalStatus::Cancelled, "the call stopped waiting")
                    .await;
            });
        }
    }
}

#[async_trait]
impl Approver for QueueApprover {
    fn name(&self) -> &str {
        "queue"
    }

    async fn ask(&self, req: &ApprovalRequest) -> Result<ApprovalAnswer, ApprovalUnavailable> {
        self.ask_who(req).await.map(|(answer, _)| answer)
    }

    async fn ask_who(
        &self,
        req: &ApprovalRequest,
    ) -> Result<(ApprovalAnswer, String), ApprovalUnavailable> {
        if self.cancel.is_cancelled() {
            return Err(self.unavailable(req, "the turn was cancelled".into()));
        }
        let deadline = OffsetDateTime::now_utc() + self.timeout;
        let store = self.queue.store();
        let queued = store
            .enqueue_approval(entry_for(
                req,
                &self.agent,
                &self.session_id,
                self.approvers.clone(),
                deadline,
            ))
            .await
            .map_err(|e| {
                self.unavailable(req, format!("it could not be queued for approval: {e}"))
            })?;
        let id = queued.id.clone();
        if let Some(tell) = &self.on_change {
            tell(&queued);
        }
        if self.announce {
            eprintln!(
                "approval {id}: `{}` of {} waits up to {} s for an answer: tackle approvals allow {id} (or deny {id})",
                req.tool,
                self.agent,
                self.timeout.as_secs()
            );
        }
        let mut guard = Abandoned::new(store, &id);
        let settled = self.queue.wait(&id, deadline, &self.cancel).await;
        if let Ok(row) = &settled {
            guard.settled();
            if let Some(tell) = &self.on_change {
                tell(row);
            }
        }
        let settled = settled.map_err(|e| {
            self.unavailable(
                req,
                format!("the approval queue failed while it waited: {e}"),
            )
        })?;
        let who = || {
            format!(
                "queue:{}",
                settled.answered_by.as_deref().unwrap_or("unknown")
            )
        };
        match settled.status {
            ApprovalStatus::Allowed => Ok((ApprovalAnswer::Once, who())),
            ApprovalStatus::AllowedForSession => Ok((ApprovalAnswer::ForSession, who())),
            ApprovalStatus::Denied => Ok((ApprovalAnswer::Deny, who())),
            ApprovalStatus::Expired => Err(self.unavailable(
                req,
                format!(
                    "no one answered approval {id} within {} s",
                    self.timeout.as_secs()
                ),
            )),
            ApprovalStatus::Cancelled | ApprovalStatus::Pending => Err(self.unavailable(
                req,
                format!("approval {id} ended unanswered (the turn was cancelled)"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tackle_store::ApprovalReply;

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            tool: "shell".into(),
            arguments: serde_json::json!({"command": "touch proof.txt"}),
            summary: "shell touch proof.txt".into(),
            grants: Default::default(),
            why: "`shell` needs approval".into(),
            remedy: String::new(),
        }
    }

    fn queued_approver(queue: &Arc<ApprovalQueue>, timeout: Duration) -> QueueApprover {
        QueueApprover::new(
            Arc::clone(queue),
            "default",
            "s1",
            vec![APPROVE_SCOPE.into()],
            timeout,
            CancellationToken::new(),
        )
    }

    /// Answers the first pending approval once it appears, from another connection (as
    /// another process would).
    async fn answer_first(dir: &std::path::Path, reply: ApprovalReply) -> Approval {
        let other = Store::open(dir).unwrap();
        loop {
            let pending = other
                .list_pending_approvals(OffsetDateTime::now_utc())
                .await
                .unwrap();
            if let Some(a) = pending.first() {
                return other
                    .answer_approval(&a.id, reply, "cli:alice")
                    .await
                    .unwrap();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn an_answer_from_another_connection_wakes_the_waiter_at_once_and_names_who() {
        let dir = tempfile::tempdir().unwrap();
        let queue = ApprovalQueue::new(Store::open(dir.path()).unwrap());
        let approver = queued_approver(&queue, Duration::from_secs(30));
        let req = request();
        let asked = tokio::spawn(async move { approver.ask_who(&req).await });
        let answered = answer_first(dir.path(), ApprovalReply::Allow).await;
        let at = std::time::Instant::now();
        let (answer, who) = asked.await.unwrap().unwrap();
        assert_eq!(answer, ApprovalAnswer::Once);
        assert_eq!(who, "queue:cli:alice");
        assert!(answered.preview.contains("touch proof.txt"), "{answered:?}");
        // The marker watch wakes it, not the one-second poll.
        assert!(
            at.elapsed() < Duration::from_millis(500),
            "{:?}",
            at.elapsed()
        );
    }

    #[tokio::test]
    async fn no_answer_by_the_deadline_is_needs_approval_and_the_entry_expired() {
        let store = Store::open_in_memory().unwrap();
        let queue = ApprovalQueue::new(store.clone());
        let approver = queued_approver(&queue, Duration::from_millis(200));
        let e = approver.ask_who(&request()).await.unwrap_err();
        assert!(e.0.contains("no one answered approval"), "{e}");
        let all = store.list_recent_approvals(10).await.unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].status, ApprovalStatus::Expired);
    }

    #[tokio::test]
    async fn a_cancelled_turn_leaves_its_approval_cancelled_not_pending() {
        let store = Store::open_in_memory().unwrap();
        let queue = ApprovalQueue::new(store.clone());
        let cancel = CancellationToken::new();
        let approver = QueueApprover::new(
            Arc::clone(&queue),
            "default",
            "s1",
            vec![],
            Duration::from_secs(60),
            cancel.clone(),
        );
        let asked = tokio::spawn(async move { approver.ask_who(&request()).await });
        while store.list_recent_approvals(1).await.unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        cancel.cancel();
        assert!(asked.await.unwrap().is_err());
        let all = store.list_recent_approvals(10).await.unwrap();
        assert_eq!(all[0].status, ApprovalStatus::Cancelled);
        // A dropped wait too.
        let approver = queued_approver(&queue, Duration::from_secs(60));
        let asked = tokio::spawn(async move { approver.ask_who(&request()).await });
        while store.list_recent_approvals(2).await.unwrap().len() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        asked.abort();
        let _ = asked.await;
        for _ in 0..100 {
            if store
                .list_pending_approvals(OffsetDateTime::now_utc())
                .await
                .unwrap()
                .is_empty()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("a dropped wait left its approval pending");
    }
}
