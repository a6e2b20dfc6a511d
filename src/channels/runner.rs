//! What every chat channel shares: the long-poll loop, who may talk and approve, one worker
//! per chat (its messages answered in order, in the chat's own stored session), the streamed
//! answer, the approval asked in the chat and its outcome shown there, and the audit lines.
//!
//! A message received is answered or its failure is recorded (the audit log, the daemon's
//! log, and the chat when it can still be reached); nothing is dropped in silence.

use super::stream::{cut, Streamed, EDIT_EVERY};
use super::turns::{Asking, ChannelTurns, Running};
use super::{Channel, ChannelError, Sent, Update};
use crate::approval_queue::{ApprovalQueue, APPROVE_SCOPE};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tackle_agent::{AgentEvent, DoneReason};
use tackle_protocol::Verdict;
use tackle_store::{Approval, ApprovalReply, ApprovalStatus, AuditEntry, AuditRecord, Store};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The longest wait between two failed polls.
const MAX_POLL_BACKOFF: Duration = Duration::from_secs(60);

pub struct Setup {
    pub name: String,
    pub channel: Arc<dyn Channel>,
    pub agent: String,
    pub allowed: Vec<String>,
    pub approvers: Vec<String>,
    pub approval_timeout: Duration,
    pub store: Store,
    pub queue: Arc<ApprovalQueue>,
    pub turns: Arc<ChannelTurns>,
    /// How long the platform may hold one receive (its long poll).
    pub poll: Duration,
}

pub struct Runner {
    shared: Arc<Shared>,
}

struct Shared {
    setup: Setup,
    /// Approvals asked in each chat and not yet settled, newest last: what a reply word
    /// (`y`, `n`, `a`) answers.
    asked: Mutex<HashMap<String, Vec<String>>>,
}

/// A message waiting for its chat's worker.
struct Inbound {
    sender: String,
    text: String,
    /// Its row in the store's inbox, forgotten once it is answered or its failure recorded;
    /// `None` when the store could not keep it.
    kept: Option<i64>,
    /// Taken up again after a restart, with a turn already started: where it started.
    started_mark: Option<i64>,
}

struct Worker {
    queue: UnboundedSender<Inbound>,
    done: JoinHandle<()>,
}

impl Runner {
    pub fn new(setup: Setup) -> Self {
        Self {
            shared: Arc::new(Shared {
                setup,
                asked: Mutex::default(),
            }),
        }
    }

    /// Polls until `stop`, then lets each chat's worker finish what it holds.
    pub async fn run(self, stop: CancellationToken) {
        let s = &self.shared.setup;
        let mut workers: HashMap<String, Worker> = HashMap::new();
        let mut position = None;
        let mut resumed = false;
        let mut failures = 0u32;
        let mut lease = super::lease::ChannelLease::new(&s.name, s.poll);
        while lease.hold(&s.store, &s.name, &stop).await {
            // Only the reader picks up what was left unanswered, once it holds the channel:
            // a daemon still waiting for the lease would answer again what the holder is
            // answering now.
            if !resumed {
                resumed = true;
                position = self.resume(&mut workers, &stop).await;
            }
            match s.channel.receive(&stop).await {
                Ok(updates) => {
                    failures = 0;
                    let mut taken = Vec::new();
                    for update in updates {
                        if let Some(message) = self.handle(update).await {
                            taken.push(message);
                        }
                    }
                    self.keep(taken, &mut position, &mut workers, &stop).await;
                }
                Err(ChannelError::Unauthorized(e)) => {
                    let _ = s
                        .store
                        .channel_failed(&s.name, &format!("stopped: {e}"))
                        .await;
                    eprintln!(
                        "daemon: channel {} stopped: {e}; check the token of channels.{}; the rest of the daemon runs on",
                        s.name, s.name
                    );
                    self.shared
                        .audit(
                            None,
                            format!("{} stopped", s.name),
                            Verdict::Deny,
                            e.to_string(),
                            "failed",
                        )
                        .await;
                    break;
                }
                Err(ChannelError::Failed(e)) => {
                    if let Err(e) = s.store.channel_failed(&s.name, &e).await {
                        tracing::warn!("channel {}: cannot note a failure: {e}", s.name);
                    }
                    failures += 1;
                    let wait = Duration::from_secs(1u64 << failures.min(6)).min(MAX_POLL_BACKOFF);
                    eprintln!(
                        "daemon: channel {} cannot receive: {e}; trying again in {} s",
                        s.name,
                        wait.as_secs()
                    );
                    tokio::select! {
                        () = stop.cancelled() => {}
                        () = tokio::time::sleep(wait) => {}
                    }
                }
            }
        }
        // Closing the queues ends each worker once it has answered what it holds.
        let done: Vec<_> = workers.into_values().map(|w| w.done).collect();
        futures::future::join_all(done).await;
        lease.release(&s.store).await;
    }

    /// Reads on from the position the store kept and queues the messages a killed daemon
    /// took and never finished; returns the position.
    async fn resume(
        &self,
        workers: &mut HashMap<String, Worker>,
        stop: &CancellationToken,
    ) -> Option<String> {
        let s = &self.shared.setup;
        let position = match s.store.channel_state(&s.name).await {
            Ok(state) => state.position,
            Err(e) => {
                eprintln!(
                    "daemon: channel {}: cannot read where it stopped: {e}; reading on from the platform's own position",
                    s.name
                );
                None
            }
        };
        if let Some(p) = &position {
            s.channel.resume_from(p).await;
        }
        match s.store.channel_unanswered(&s.name).await {
            Ok(left) => {
                if !left.is_empty() {
                    eprintln!(
                        "daemon: channel {}: answering {} message(s) taken before it stopped",
                        s.name,
                        left.len()
                    );
                }
                for m in left {
                    let inbound = Inbound {
                        sender: m.sender,
                        text: m.text,
                        kept: Some(m.id),
                        started_mark: m.started_mark,
                    };
                    self.queue(m.chat, inbound, workers, stop);
                }
            }
            Err(e) => eprintln!(
                "daemon: channel {}: cannot read the messages left unanswered: {e}",
                s.name
            ),
        }
        position
    }

    /// Keeps what a receive took in the store with the platform's new position, in one
    /// transaction, then queues it: whenever the process dies, a restart neither loses
    /// these messages nor takes them twice.
    async fn keep(
        &self,
        taken: Vec<(String, Inbound)>,
        position: &mut Option<String>,
        workers: &mut HashMap<String, Worker>,
        stop: &CancellationToken,
    ) {
        let s = &self.shared.setup;
        let now = s.channel.position().await;
        let moved = now.is_some() && now != *position;
        let rows = taken
            .iter()
            .map(|(chat, m)| (chat.clone(), m.sender.clone(), m.text.clone()))
            .collect();
        let ids = match s
            .store
            .channel_received(&s.name, if moved { now.clone() } else { None }, rows)
            .await
        {
            Ok(ids) => {
                *position = now;
                ids
            }
            Err(e) => {
                // Still answered now; only a restart before the answer would lose them.
                eprintln!(
                    "daemon: channel {}: cannot keep what it received: {e}",
                    s.name
                );
                Vec::new()
            }
        };
        for (i, (chat, mut message)) in taken.into_iter().enumerate() {
            message.kept = ids.get(i).copied();
            self.queue(chat, message, workers, stop);
        }
    }

    fn queue(
        &self,
        chat: String,
        message: Inbound,
        workers: &mut HashMap<String, Worker>,
        stop: &CancellationToken,
    ) {
        let worker = workers.entry(chat.clone()).or_insert_with(|| {
            let (queue, rx) = unbounded_channel();
            let done = tokio::spawn(Arc::clone(&self.shared).work(chat, rx, stop.clone()));
            Worker { queue, done }
        });
        // A worker never ends while its queue is open, so this is not refused.
        let _ = worker.queue.send(message);
    }

    /// Acts on a press, a stranger, an empty message or a reply word at once; returns a
    /// message for its chat's worker.
    async fn handle(&self, update: Update) -> Option<(String, Inbound)> {
        let shared = &self.shared;
        match update {
            Update::Press {
                chat,
                sender,
                press,
                data,
            } => {
                let answer = shared.press(&chat, &sender, &data).await;
                if let Err(e) = shared.setup.channel.answer_press(&press, &answer).await {
                    tracing::warn!("channel {}: cannot answer a press: {e}", shared.setup.name);
                }
                None
            }
            Update::Message { chat, sender, text } => {
                if !shared.setup.allowed.contains(&sender) {
                    shared.ignored(&chat, &sender).await;
                    return None;
                }
                if text.trim().is_empty() {
                    shared.not_text(&chat, &sender).await;
                    return None;
                }
                if let Some(reply) = reply_word(&text) {
                    let latest = shared
                        .asked
                        .lock()
                        .ok()
                        .and_then(|a| a.get(&chat).and_then(|ids| ids.last().cloned()));
                    if let Some(id) = latest {
                        let data = format!("{}:{id}", reply_code(reply));
                        let answer = shared.press(&chat, &sender, &data).await;
                        let _ = shared.setup.channel.send(&chat, &answer).await;
                        return None;
                    }
                }
                Some((
                    chat,
                    Inbound {
                        sender,
                        text,
                        kept: None,
                        started_mark: None,
                    },
                ))
            }
        }
    }
}

impl Shared {
    fn who(&self, user: &str) -> String {
        format!("{}:{user}", self.setup.channel.kind())
    }

    /// One chat's messages, in order.
    async fn work(
        self: Arc<Self>,
        chat: String,
        mut queue: UnboundedReceiver<Inbound>,
        stop: CancellationToken,
    ) {
        while let Some(message) = queue.recv().await {
            let started = Instant::now();
            let session = session_id(&self.setup.name, &chat);
            if stop.is_cancelled() && message.kept.is_some() {
                // Kept in the store: the next start answers it.
                let _ = self
                    .setup
                    .channel
                    .send(
                        &chat,
                        "The daemon is stopping; this message will be answered once it is back.",
                    )
                    .await;
                continue;
            }
            if let (Some(id), Some(mark)) = (message.kept, message.started_mark) {
                // Its turn ended before the restart and only the bookkeeping was cut off:
                // answering again would run its calls twice.
                if let Ok(true) = self
                    .setup
                    .store
                    .session_answered_since(&session, mark)
                    .await
                {
                    let _ = self.setup.store.channel_answered(id).await;
                    continue;
                }
            }
            if let Some(id) = message.kept {
                if let Err(e) = self.setup.store.channel_started(id).await {
                    tracing::warn!(
                        "channel {}: cannot note a turn's start: {e}",
                        self.setup.name
                    );
                }
            }
            let result = if stop.is_cancelled() {
                Err("the daemon is stopping; send it again once it is back".to_string())
            } else {
                self.answer(&chat, &session, &message.sender, message.text)
                    .await
            };
            let (verdict, outcome, why) = match &result {
                Ok(()) => (
                    Verdict::Allow,
                    "ok",
                    format!("{} is allowed", self.who(&message.sender)),
                ),
                Err(e) => (Verdict::Allow, "failed", format!("not answered: {e}")),
            };
            if let Err(e) = &result {
                eprintln!(
                    "daemon: channel {}: a message in chat {chat} was not answered: {e}",
                    self.setup.name
                );
                // Said in the chat too, if the chat can still be reached.
                let _ = self
                    .setup
                    .channel
                    .send(&chat, &format!("This message was not answered: {e}"))
                    .await;
            }
            let mut entry = self.entry(
                format!("message from {} in chat {chat}", self.who(&message.sender)),
                verdict,
                why,
                outcome,
            );
            entry.record.session_id = Some(session.clone());
            entry.record.duration_ms = u64::try_from(started.elapsed().as_millis()).ok();
            append(&self.setup.store, entry).await;
            if let Some(id) = message.kept {
                if let Err(e) = self.setup.store.channel_answered(id).await {
                    tracing::warn!(
                        "channel {}: cannot mark a message answered: {e}",
                        self.setup.name
                    );
                }
            }
        }
    }

    /// Runs a turn for `text` and shows its answer in the chat as it streams.
    async fn answer(
        &self,
        chat: &str,
        session: &str,
        sender: &str,
        text: String,
    ) -> Result<(), String> {
        let s = &self.setup;
        // Only an approver speaks for the operator: anyone else allowed to talk is someone
        // else writing into the session (docs/decisions/0033-taint-gates-sinks.md).
        let untrusted = (!s.approvers.iter().any(|a| a == sender))
            .then(|| format!("{} in chat {chat}", self.who(sender)));
        let (notes_tx, notes) = unbounded_channel::<Approval>();
        let asking = Asking {
            queue: Arc::clone(&s.queue),
            approvers: s
                .approvers
                .iter()
                .map(|u| self.who(u))
                .chain(std::iter::once(APPROVE_SCOPE.to_string()))
                .collect(),
            timeout: s.approval_timeout,
            on_change: Arc::new(move |a: &Approval| {
                let _ = notes_tx.send(a.clone());
            }),
        };
        let running = s
            .turns
            .start(
                &s.agent,
                session,
                (&s.name, chat),
                (text, untrusted),
                asking,
            )
            .await
            .map_err(|e| crate::errors::render(&e))?;
        self.stream(chat, running, notes).await
    }

    async fn stream(
        &self,
        chat: &str,
        running: Running,
        mut notes: UnboundedReceiver<Approval>,
    ) -> Result<(), String> {
        let Running { mut events, done } = running;
        let mut streamed = Streamed::new(Arc::clone(&self.setup.channel), chat);
        let mut approvals: HashMap<String, Sent> = HashMap::new();
        let mut tick = tokio::time::interval(EDIT_EVERY / 4);
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    None => break,
                    Some(AgentEvent::TextDelta { text }) => streamed.push(&text).await,
                    Some(AgentEvent::ToolCallStarted { .. }) => streamed.close().await,
                    Some(_) => {}
                },
                Some(note) = notes.recv() => self.note(chat, note, &mut approvals).await,
                _ = tick.tick() => streamed.tick().await,
            }
        }
        while let Ok(note) = notes.try_recv() {
            self.note(chat, note, &mut approvals).await;
        }
        let outcome = match done.await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(e)) => return Err(format!("the turn failed: {e}")),
            Err(e) => return Err(format!("the turn failed: {e}")),
        };
        let reply = match outcome.reason {
            DoneReason::Cancelled => {
                return Err("the turn was cancelled (the daemon stopped)".to_string())
            }
            DoneReason::Error => return Err(format!("the turn failed: {}", outcome.text)),
            _ if outcome.text.trim().is_empty() => "(no answer)".to_string(),
            _ => outcome.text,
        };
        streamed.finish(&reply).await
    }

    /// An approval of this chat's turn was queued (ask it here) or settled (show how).
    async fn note(&self, chat: &str, approval: Approval, asked: &mut HashMap<String, Sent>) {
        let channel = &self.setup.channel;
        if approval.status == ApprovalStatus::Pending {
            match channel.ask_approval(chat, &approval).await {
                Ok(sent) => {
                    asked.insert(approval.id.clone(), sent);
                    if let Ok(mut all) = self.asked.lock() {
                        all.entry(chat.to_string()).or_default().push(approval.id);
                    }
                }
                Err(e) => eprintln!(
                    "daemon: channel {}: approval {} could not be asked in chat {chat} ({e}); `tackle approvals` can answer it",
                    self.setup.name, approval.id
                ),
            }
            return;
        }
        if let Ok(mut all) = self.asked.lock() {
            if let Some(ids) = all.get_mut(chat) {
                ids.retain(|id| *id != approval.id);
            }
        }
        if let Some(sent) = asked.remove(&approval.id) {
            let text = format!(
                "{}\n\n{}",
                approval_text(&approval, channel.max_len() - 200),
                settled_line(&approval)
            );
            let _ = channel.edit(&sent, &text).await;
        }
    }

    /// A press (or a reply word) on approval `data`'s entry by `sender`: the answer, or
    /// nothing changed when the sender is not one of its approvers. Returns what the presser
    /// is told.
    async fn press(&self, chat: &str, sender: &str, data: &str) -> String {
        let who = self.who(sender);
        let Some((reply, id)) = parse_press(data) else {
            return "This button is not one of ours.".to_string();
        };
        let entry = match self.setup.store.approval(id).await {
            Ok(Some(entry)) => entry,
            Ok(None) => return format!("There is no approval {id}."),
            Err(e) => return format!("The approval queue cannot be read: {e}"),
        };
        let refused =
            !self.setup.approvers.iter().any(|a| a == sender) || !entry.may_answer(&[who.as_str()]);
        let summary = format!(
            "approval {id} (`{}`) {} by {who} in chat {chat}",
            entry.tool,
            reply_word_of(reply)
        );
        if refused {
            let mut line = self.entry(
                summary,
                Verdict::Deny,
                format!("{who} is not an approver of this approval"),
                "denied",
            );
            line.record.session_id = Some(entry.session_id.clone());
            append(&self.setup.store, line).await;
            return "You are not an approver of this call; nothing changed.".to_string();
        }
        let (outcome, told) = match self.setup.store.answer_approval(id, reply, &who).await {
            Ok(row) => ("ok", format!("{}.", capitalised(settled_line(&row)))),
            Err(e) => ("failed", e.to_string()),
        };
        let mut line = self.entry(
            summary,
            Verdict::Allow,
            format!("{who} is an approver"),
            outcome,
        );
        line.record.session_id = Some(entry.session_id.clone());
        append(&self.setup.store, line).await;
        told
    }

    /// A message with no text: the sender is told, and it is recorded.
    async fn not_text(&self, chat: &str, sender: &str) {
        let told = self
            .setup
            .channel
            .send(chat, "Only text messages are read here.")
            .await;
        let line = self.entry(
            format!("message from {} in chat {chat}", self.who(sender)),
            Verdict::Allow,
            "the message had no text".to_string(),
            if told.is_ok() { "ok" } else { "failed" },
        );
        append(&self.setup.store, line).await;
    }

    /// A message from someone not allowed: not answered, audited.
    async fn ignored(&self, chat: &str, sender: &str) {
        let who = self.who(sender);
        tracing::info!(
            "channel {}: a message from {who} in chat {chat} was ignored (not an allowed sender)",
            self.setup.name
        );
        let line = self.entry(
            format!("message from {who} in chat {chat} ignored"),
            Verdict::Deny,
            format!(
                "{who} is not in channels.{}.inbound.allowed_senders",
                self.setup.name
            ),
            "denied",
        );
        append(&self.setup.store, line).await;
    }

    async fn audit(
        &self,
        session_id: Option<String>,
        summary: String,
        verdict: Verdict,
        why: String,
        outcome: &str,
    ) {
        let mut line = self.entry(summary, verdict, why, outcome);
        line.record.session_id = session_id;
        append(&self.setup.store, line).await;
    }

    fn entry(&self, summary: String, verdict: Verdict, why: String, outcome: &str) -> AuditEntry {
        let name = &self.setup.name;
        AuditEntry {
            record: AuditRecord {
                ts: String::new(),
                session_id: None,
                agent: self.setup.agent.clone(),
                tool: "channel".to_string(),
                args_summary: tackle_protocol::text::preview(&format!("{name}: {summary}"), 300),
                verdict,
                rule: format!("channels.{name}.inbound"),
                why,
                approver: None,
                outcome: outcome.to_string(),
                duration_ms: None,
            },
            caller: format!("channel:{name}"),
        }
    }
}

/// A store that cannot take the line is logged, not fatal: the chat was already answered.
async fn append(store: &Store, entry: AuditEntry) {
    let summary = entry.record.args_summary.clone();
    if let Err(e) = store.append_audit_entry(entry).await {
        tracing::warn!("cannot audit {summary}: {e}");
    }
}

/// The chat's session: the same for every message of the chat, across restarts. Readable
/// when the names allow it (`chat-NAME-CHAT`), a digest of them otherwise.
pub fn session_id(channel: &str, chat: &str) -> String {
    let plain = format!("chat-{channel}-{chat}");
    if tackle_protocol::ids::check(tackle_protocol::ids::IdKind::Session, &plain).is_ok() {
        return plain;
    }
    let digest = Sha256::digest(format!("{channel}\n{chat}").as_bytes());
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("chat-{hex}")
}

/// What a chat is shown for an approval: the tool, who asks, and the call's preview.
pub fn approval_text(approval: &Approval, max: usize) -> String {
    let secs = (approval.deadline - approval.created)
        .whole_seconds()
        .max(0);
    let text = format!(
        "Approval needed: `{}` for agent {} (answer within {secs} s; id {})\n\n{}",
        approval.tool, approval.agent, approval.id, approval.preview
    );
    cut(&text, max)
}

fn settled_line(approval: &Approval) -> String {
    let by = approval.answered_by.as_deref().unwrap_or("unknown");
    match approval.status {
        ApprovalStatus::Allowed => format!("allowed by {by}"),
        ApprovalStatus::AllowedForSession => format!("allowed for the session by {by}"),
        ApprovalStatus::Denied => format!("denied by {by}"),
        ApprovalStatus::Expired => "expired: no one answered in time".to_string(),
        ApprovalStatus::Cancelled => "cancelled: the turn ended first".to_string(),
        ApprovalStatus::Pending => "still waiting".to_string(),
    }
}

fn capitalised(s: String) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => s,
    }
}

fn parse_press(data: &str) -> Option<(ApprovalReply, &str)> {
    let (code, id) = data.split_once(':')?;
    let reply = match code {
        "a" => ApprovalReply::Allow,
        "s" => ApprovalReply::AllowForSession,
        "d" => ApprovalReply::Deny,
        _ => return None,
    };
    (!id.is_empty()).then_some((reply, id))
}

fn reply_code(reply: ApprovalReply) -> &'static str {
    match reply {
        ApprovalReply::Allow => "a",
        ApprovalReply::AllowForSession => "s",
        ApprovalReply::Deny => "d",
    }
}

fn reply_word_of(reply: ApprovalReply) -> &'static str {
    match reply {
        ApprovalReply::Allow => "allowed",
        ApprovalReply::AllowForSession => "allowed for the session",
        ApprovalReply::Deny => "denied",
    }
}

/// A reply that answers the chat's latest approval: `y` (allow), `a` (allow for the
/// session), `n` (deny).
pub(super) fn reply_word(text: &str) -> Option<ApprovalReply> {
    match text.trim().to_lowercase().as_str() {
        "y" | "yes" => Some(ApprovalReply::Allow),
        "a" | "always" => Some(ApprovalReply::AllowForSession),
        "n" | "no" => Some(ApprovalReply::Deny),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_keeps_one_session_id_and_odd_names_are_digested() {
        assert_eq!(session_id("ops", "-100123"), "chat-ops--100123");
        assert_eq!(session_id("ops", "-100123"), session_id("ops", "-100123"));
        let odd = session_id("my ops", "!room:example.org");
        assert!(odd.starts_with("chat-") && odd.len() == 37, "{odd}");
        assert_ne!(odd, session_id("my ops", "!other:example.org"));
    }

    #[test]
    fn presses_and_reply_words_are_read_and_junk_is_not() {
        assert_eq!(
            parse_press("s:abc"),
            Some((ApprovalReply::AllowForSession, "abc"))
        );
        assert_eq!(parse_press("x:abc"), None);
        assert_eq!(parse_press("a:"), None);
        assert_eq!(reply_word(" Y "), Some(ApprovalReply::Allow));
        assert_eq!(reply_word("no"), Some(ApprovalReply::Deny));
        assert_eq!(reply_word("yes please"), None);
    }
}
