//! A person's prompt (the terminal's `y/n/a`, an MCP client's elicitation) as a front end of
//! the approval queue (docs/decisions/0030-one-approval-queue.md, "Terminal and MCP
//! prompts"): each ask is also queued in the store, so `tackle approvals`, the HTTP API and
//! the console see it and may answer it while the prompt is up. The first answer wins:
//! - the person at the prompt: their answer is recorded in the store (`terminal`, `mcp`); if
//!   another front end got there first, that answer is used and theirs is said to be unused;
//! - another front end: the prompt is dropped (the terminal's line is ended and its held
//!   output released; an MCP client's open elicitation is cancelled) and the person is told
//!   who answered, which the audit log records (`queue:cli:alice`).
//!
//! The prompt stays the authority on everything else: its errors (stdin closed, a client that
//! cannot elicit) and a cancelled turn end the entry `cancelled` and are returned as before;
//! an entry that expires leaves the prompt waiting alone; a store that cannot queue leaves
//! the prompt alone, so a broken state file never makes the terminal unusable.

use crate::approval_queue::{entry_for, Abandoned, ApprovalQueue, APPROVE_SCOPE};
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::{ApprovalAnswer, ApprovalRequest, ApprovalUnavailable, Approver, FormAsker};
use tackle_store::{Approval, ApprovalReply, ApprovalStatus, StoreError};
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

/// How long a prompt's queued entry may be answered from elsewhere. The prompt itself has no
/// deadline; past this one it keeps waiting, answerable only where it is shown.
pub const PROMPT_DEADLINE: Duration = Duration::from_secs(24 * 60 * 60);

/// Where the prompt is shown, and how it is told what became of its question.
pub struct FrontEnd {
    /// Names the front end among the entry's approvers, and as who answered when the person
    /// at the prompt did (`terminal`, `mcp`).
    pub name: &'static str,
    /// Tells the person at the prompt something about their question (another front end
    /// answered it, their answer came too late).
    pub tell: fn(&str),
    /// Whether the running turn has been cancelled, so that the prompt's "no" is the turn
    /// stopping rather than a person's answer.
    pub turn_cancelled: fn() -> bool,
}

impl FrontEnd {
    /// `tackle run` and `tackle chat`'s prompt: notes go through the terminal writer, after
    /// what the prompt held back; Ctrl-C cancels the turn it knows.
    pub const TERMINAL: Self = Self {
        name: "terminal",
        tell: crate::term::err_line,
        turn_cancelled: terminal_turn_cancelled,
    };

    /// `tackle mcp serve`'s elicitation: the client's cancel reaches the prompt as an error,
    /// and notes go to the server's log (stderr).
    pub const MCP: Self = Self {
        name: "mcp",
        tell: log_line,
        turn_cancelled: never,
    };
}

fn terminal_turn_cancelled() -> bool {
    crate::term::current_turn().is_some_and(|t| t.is_cancelled())
}

fn log_line(line: &str) {
    eprintln!("{line}");
}

fn never() -> bool {
    false
}

/// A prompt that is also an entry in the approval queue.
pub struct QueuedPrompt {
    inner: Arc<dyn Approver>,
    queue: Arc<ApprovalQueue>,
    agent: String,
    session_id: String,
    front: FrontEnd,
}

impl QueuedPrompt {
    /// `inner` asks the person; its asks for `agent`'s calls in `session_id` are queued too.
    pub fn new(
        inner: Arc<dyn Approver>,
        queue: Arc<ApprovalQueue>,
        agent: &str,
        session_id: &str,
        front: FrontEnd,
    ) -> Self {
        Self {
            inner,
            queue,
            agent: agent.to_string(),
            session_id: session_id.to_string(),
            front,
        }
    }

    /// The prompt answered first (or alone): records its answer, unless another front end's
    /// won meanwhile, which is then the answer.
    async fn settle_from_prompt(
        &self,
        id: &str,
        asked: Result<(ApprovalAnswer, String), ApprovalUnavailable>,
    ) -> Result<(ApprovalAnswer, String), ApprovalUnavailable> {
        let store = self.queue.store();
        let (answer, who) = match asked {
            Ok(answered) if !(self.front.turn_cancelled)() => answered,
            // No one answered: the prompt failed, or the turn stopped (today's deny).
            other => {
                let why = match &other {
                    Ok(_) => "the turn was cancelled",
                    Err(_) => "the prompt could not be answered",
                };
                let _ = store
                    .close_approval(id, ApprovalStatus::Cancelled, why)
                    .await;
                return other;
            }
        };
        let reply = match answer {
            ApprovalAnswer::Once => ApprovalReply::Allow,
            ApprovalAnswer::ForSession => ApprovalReply::AllowForSession,
            ApprovalAnswer::Deny => ApprovalReply::Deny,
        };
        match store.answer_approval(id, reply, self.front.name).await {
            Err(StoreError::AlreadyAnswered {
                status,
                by: Some(by),
                ..
            }) => match answer_of(status) {
                Some(won) => {
                    (self.front.tell)(&format!(
                        "your answer was not used: approval {id} was already {} by {by}",
                        said(status)
                    ));
                    Ok((won, format!("queue:{by}")))
                }
                // Expired or closed meanwhile: the prompt is the only one asked now.
                None => Ok((answer, who)),
            },
            // Recorded; or the store failed, and the person's answer stands all the same.
            _ => Ok((answer, who)),
        }
    }
}

/// What a settled entry answers, if it was answered (not expired or cancelled).
fn answer_of(status: ApprovalStatus) -> Option<ApprovalAnswer> {
    match status {
        ApprovalStatus::Allowed => Some(ApprovalAnswer::Once),
        ApprovalStatus::AllowedForSession => Some(ApprovalAnswer::ForSession),
        ApprovalStatus::Denied => Some(ApprovalAnswer::Deny),
        ApprovalStatus::Pending | ApprovalStatus::Expired | ApprovalStatus::Cancelled => None,
    }
}

/// A status in words, for a person.
fn said(status: ApprovalStatus) -> &'static str {
    match status {
        ApprovalStatus::AllowedForSession => "allowed for the session",
        other => other.as_str(),
    }
}

/// Who answered a settled entry, as the store recorded it.
fn answerer(row: &Approval) -> &str {
    row.answered_by.as_deref().unwrap_or("unknown")
}

#[async_trait]
impl Approver for QueuedPrompt {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn forms(&self) -> Option<Arc<dyn FormAsker>> {
        self.inner.forms()
    }

    async fn ask(&self, req: &ApprovalRequest) -> Result<ApprovalAnswer, ApprovalUnavailable> {
        self.ask_who(req).await.map(|(answer, _)| answer)
    }

    async fn ask_who(
        &self,
        req: &ApprovalRequest,
    ) -> Result<(ApprovalAnswer, String), ApprovalUnavailable> {
        // A stopped turn's calls are settled by the prompt unasked: nothing to queue.
        if (self.front.turn_cancelled)() {
            return self.inner.ask_who(req).await;
        }
        let store = self.queue.store();
        let deadline = OffsetDateTime::now_utc() + PROMPT_DEADLINE;
        let approvers = vec![self.front.name.to_string(), APPROVE_SCOPE.to_string()];
        let queued = store
            .enqueue_approval(entry_for(
                req,
                &self.agent,
                &self.session_id,
                approvers,
                deadline,
            ))
            .await;
        let id = match queued {
            Ok(queued) => queued.id,
            Err(e) => {
                tracing::warn!("the approval is asked only here: it could not be queued: {e}");
                return self.inner.ask_who(req).await;
            }
        };
        // Dropped before it settles (the call's future dropped): the entry is cancelled.
        let mut guard = Abandoned::new(store, &id);
        let mut prompt = Box::pin(self.inner.ask_who(req));
        // The prompt follows the turn; the wait only ends with the prompt or an answer.
        let unstopped = CancellationToken::new();
        let queued = tokio::select! {
            asked = &mut prompt => {
                let settled = self.settle_from_prompt(&id, asked).await;
                guard.settled();
                return settled;
            }
            row = self.queue.wait(&id, deadline, &unstopped) => row,
        };
        match queued.as_ref().ok().and_then(|row| {
            answer_of(row.status).map(|answer| (answer, answerer(row).to_string(), row.status))
        }) {
            Some((answer, by, status)) => {
                guard.settled();
                // The prompt goes first, so the note follows its question, not inside it.
                drop(prompt);
                (self.front.tell)(&format!("answered elsewhere: {} by {by}", said(status)));
                Ok((answer, format!("queue:{by}")))
            }
            // Expired (or the store failed while waiting): the prompt alone decides, and its
            // answer is recorded if the entry can still take it.
            None => {
                let asked = prompt.await;
                let settled = self.settle_from_prompt(&id, asked).await;
                guard.settled();
                settled
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tackle_store::{NewApproval, Store};
    use tokio::sync::Notify;

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

    /// A prompt that says when it is shown, answers `answer` once `go` is notified, and says
    /// when it was dropped.
    struct Scripted {
        go: Arc<Notify>,
        answer: Result<ApprovalAnswer, ApprovalUnavailable>,
        shown: Arc<Notify>,
        dropped: Arc<Notify>,
    }

    struct SaysWhenDropped(Arc<Notify>);

    impl Drop for SaysWhenDropped {
        fn drop(&mut self) {
            self.0.notify_one();
        }
    }

    #[async_trait]
    impl Approver for Scripted {
        fn name(&self) -> &str {
            "scripted"
        }

        async fn ask(&self, _req: &ApprovalRequest) -> Result<ApprovalAnswer, ApprovalUnavailable> {
            let _drop = SaysWhenDropped(Arc::clone(&self.dropped));
            self.shown.notify_one();
            self.go.notified().await;
            self.answer.clone()
        }
    }

    const QUIET: FrontEnd = FrontEnd {
        name: "terminal",
        tell: |_| {},
        turn_cancelled: never,
    };

    fn queued(
        queue: &Arc<ApprovalQueue>,
        answer: Result<ApprovalAnswer, ApprovalUnavailable>,
    ) -> (QueuedPrompt, Scripts) {
        let scripts = Scripts {
            go: Arc::new(Notify::new()),
            shown: Arc::new(Notify::new()),
            dropped: Arc::new(Notify::new()),
        };
        let inner = Scripted {
            go: Arc::clone(&scripts.go),
            answer,
            shown: Arc::clone(&scripts.shown),
            dropped: Arc::clone(&scripts.dropped),
        };
        let prompt = QueuedPrompt::new(Arc::new(inner), Arc::clone(queue), "default", "s1", QUIET);
        (prompt, scripts)
    }

    /// The test's side of a scripted prompt.
    struct Scripts {
        go: Arc<Notify>,
        shown: Arc<Notify>,
        dropped: Arc<Notify>,
    }

    async fn first_pending(store: &Store) -> Approval {
        loop {
            let pending = store
                .list_pending_approvals(OffsetDateTime::now_utc())
                .await
                .unwrap();
            if let Some(a) = pending.into_iter().next() {
                return a;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn an_answer_from_the_queue_drops_the_prompt_and_names_who() {
        let store = Store::open_in_memory().unwrap();
        let queue = ApprovalQueue::new(store.clone());
        let (prompt, scripts) = queued(&queue, Ok(ApprovalAnswer::Deny));
        let asked = tokio::spawn(async move { prompt.ask_who(&request()).await });
        let entry = first_pending(&store).await;
        // Answered while the person is looking at the prompt (an answer that lands before the
        // prompt is first shown means it is never shown, and there is nothing to drop).
        scripts.shown.notified().await;
        assert_eq!(entry.approvers, ["terminal", "approve"]);
        assert!(entry.preview.contains("touch proof.txt"), "{entry:?}");
        let late = entry.deadline - OffsetDateTime::now_utc();
        assert!(late > time::Duration::hours(23), "{late}");
        store
            .answer_approval(&entry.id, ApprovalReply::Allow, "cli:alice")
            .await
            .unwrap();
        let (answer, who) = asked.await.unwrap().unwrap();
        assert_eq!(answer, ApprovalAnswer::Once);
        assert_eq!(who, "queue:cli:alice");
        tokio::time::timeout(Duration::from_secs(5), scripts.dropped.notified())
            .await
            .expect("the prompt is dropped");
    }

    #[tokio::test]
    async fn the_prompts_answer_is_recorded_unless_another_won_first() {
        let store = Store::open_in_memory().unwrap();
        let queue = ApprovalQueue::new(store.clone());
        let (prompt, scripts) = queued(&queue, Ok(ApprovalAnswer::Deny));
        let asked = tokio::spawn(async move { prompt.ask_who(&request()).await });
        let entry = first_pending(&store).await;
        scripts.go.notify_one();
        let (answer, who) = asked.await.unwrap().unwrap();
        assert_eq!((answer, who.as_str()), (ApprovalAnswer::Deny, "scripted"));
        let row = store.approval(&entry.id).await.unwrap().unwrap();
        assert_eq!(row.status, ApprovalStatus::Denied);
        assert_eq!(row.answered_by.as_deref(), Some("terminal"));

        // Another front end's answer lands between the person's and its recording: it wins.
        let (prompt, _) = queued(&queue, Ok(ApprovalAnswer::Deny));
        let entry = store
            .enqueue_approval(NewApproval {
                agent: "default".into(),
                session_id: "s1".into(),
                tool: "shell".into(),
                preview: "shell touch proof.txt".into(),
                approvers: vec![],
                deadline: OffsetDateTime::now_utc() + Duration::from_secs(60),
                waiter: None,
            })
            .await
            .unwrap();
        store
            .answer_approval(&entry.id, ApprovalReply::AllowForSession, "api:ops")
            .await
            .unwrap();
        let settled = prompt
            .settle_from_prompt(&entry.id, Ok((ApprovalAnswer::Deny, "scripted".into())))
            .await;
        assert_eq!(
            settled.unwrap(),
            (ApprovalAnswer::ForSession, "queue:api:ops".to_string())
        );
    }

    #[tokio::test]
    async fn a_failed_prompt_cancels_its_entry_and_returns_its_error() {
        let store = Store::open_in_memory().unwrap();
        let queue = ApprovalQueue::new(store.clone());
        let closed = ApprovalUnavailable("stdin closed before the approval was answered".into());
        let (prompt, scripts) = queued(&queue, Err(closed.clone()));
        scripts.go.notify_one();
        let e = prompt.ask_who(&request()).await.unwrap_err();
        assert_eq!(e, closed);
        let all = store.list_recent_approvals(10).await.unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].status, ApprovalStatus::Cancelled);
    }
}
