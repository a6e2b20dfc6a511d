//! Wake-ups in an open chat: a `schedule_once`, or a schedule pinned to this chat's session,
//! fires into the chat while it is open, shown as an incoming directive (`⏰ wake-up ID:
//! task`) and answered as any turn, instead of in a daemon's separate copy of the session.
//!
//! The chat marks its session as open (tackle-store's presence), and a daemon leaves such
//! fires alone while it stays open; the fire is still claimed through the store
//! (`claim_fire`, a lease renewed while the turn runs, `finish_fire`) exactly as the daemon
//! claims it, so it runs once however many processes watch. Nothing is claimed before the
//! chat is about to run it, so a chat that ends leaves nothing claimed: the daemon fires what
//! falls due after.

use crate::approval_queue::{ApprovalQueue, QueueApprover, APPROVE_SCOPE};
use crate::runtime::Runtime;
use crate::term::{self, Paint};
use crate::turn::run_rendered;
use std::sync::Arc;
use std::time::Duration;
use tackle_agent::routine::runs_in_chat;
use tackle_agent::Session;
use tackle_protocol::config::Config;
use tackle_protocol::text::preview;
use tackle_protocol::Approver;
use tackle_store::{Claimed, FireClaim, FireStatus, Presence, Schedule, Store};
use tackle_tools::schedule::{next_fire, Zone};
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

/// How often this session's schedules are looked at: a wake-up shows at most this late.
const POLL: Duration = Duration::from_secs(1);

pub struct Wakeups {
    store: Store,
    agent: String,
    session: String,
    /// Who holds a claim: unique to this chat process (`chat-HOST-PID-MS`).
    owner: String,
    zone: Zone,
    lease: Duration,
    /// `schedules.approval_timeout_secs`: how long a wake-up's call waits in the approval
    /// queue, as a daemon's fire does (the prompt's line is the person's meanwhile).
    approval_timeout: Duration,
    /// Held while this chat has `session` open.
    _presence: Option<Presence>,
}

impl Wakeups {
    pub fn new(rt: &Runtime, config: &Config, session: &Session) -> Self {
        // As a daemon names itself, so a fire record says which process ran it.
        let owner = crate::waiter::lease_owner("chat");
        Self {
            store: rt.store.clone(),
            agent: rt.agent_name.clone(),
            session: session.id().to_string(),
            owner,
            // A bad zone was already refused when the schedule tools were set up.
            zone: crate::schedules::zone(config).unwrap_or_default(),
            lease: Duration::from_secs(config.schedules.lease_secs.max(1)),
            approval_timeout: Duration::from_secs(config.schedules.approval_timeout_secs),
            _presence: rt.store.hold_session_presence(session.id()),
        }
    }

    /// The chat moved to another session (`/clear`): its wake-ups are watched from now on.
    pub fn follow(&mut self, session: &Session) {
        self._presence = None;
        self.session = session.id().to_string();
        self._presence = self.store.hold_session_presence(&self.session);
    }

    /// Waits until one of this session's wake-ups is due, and returns it unclaimed.
    pub async fn due(&self) -> Schedule {
        loop {
            if let Ok(due) = self.store.due_schedules(OffsetDateTime::now_utc()).await {
                if let Some(s) = due.into_iter().find(|s| self.mine(s)) {
                    return s;
                }
            }
            tokio::time::sleep(POLL).await;
        }
    }

    fn mine(&self, s: &Schedule) -> bool {
        runs_in_chat(s) && s.agent == self.agent && s.session_id.as_deref() == Some(&self.session)
    }

    /// Claims the fire of `s` and, when this chat won it, runs it as a turn in `session`,
    /// renewing the lease while it runs, and records the outcome.
    pub async fn fire(
        &self,
        rt: &Runtime,
        session: &mut Session,
        queue: &Arc<ApprovalQueue>,
        s: Schedule,
    ) {
        let Some(due) = s.next_fire else { return };
        let now = OffsetDateTime::now_utc();
        // As the daemon plans it: the fire after this one, or the next after now when behind.
        let next = match next_fire(s.kind, &s.spec, due, self.zone) {
            Some(n) if n > now => Some(n),
            _ => next_fire(s.kind, &s.spec, now, self.zone),
        };
        let claim = FireClaim {
            schedule_id: s.id,
            due,
            now,
            next,
            owner: self.owner.clone(),
            lease: time::Duration::try_from(self.lease).unwrap_or(time::Duration::MINUTE),
        };
        let (fire_id, s) = match self.store.claim_fire(claim).await {
            Ok(Claimed::Run { fire_id, schedule }) => (fire_id, *schedule),
            Ok(_) => return,
            Err(e) => {
                term::err_line(&format!("cannot claim wake-up {}: {e}", s.name));
                return;
            }
        };
        term::err_line(&format!(
            "{} {}",
            Paint::Bold.on_stderr(&format!("⏰ wake-up {}:", s.name)),
            preview(&s.message, 400)
        ));
        let cancel = CancellationToken::new();
        let approver = self.approver(queue, &cancel);
        let run = run_rendered(rt, session, &s.message, approver, false, false);
        let result = tokio::select! {
            outcome = run => match outcome {
                Ok(o) => crate::schedules::fire_result(&o, &self.session),
                Err(e) => Err(format!("{e} (session {})", self.session)),
            },
            () = self.renew(s.id) => Err("the lease could not be renewed".to_string()),
        };
        cancel.cancel();
        let (status, detail) = match result {
            Ok(d) => (FireStatus::Ok, d),
            Err(why) => {
                term::err_line(&format!("(wake-up {} failed: {why})", s.name));
                (FireStatus::Failed, why)
            }
        };
        if let Err(e) = self
            .store
            .finish_fire(fire_id, status, detail, OffsetDateTime::now_utc())
            .await
        {
            term::err_line(&format!("cannot record wake-up {}: {e}", s.name));
        }
    }

    /// A wake-up's calls that need approval wait in the approval queue (`tackle approvals`),
    /// as a daemon's fire's do: the terminal's line belongs to the person typing at the prompt.
    fn approver(
        &self,
        queue: &Arc<ApprovalQueue>,
        cancel: &CancellationToken,
    ) -> Arc<dyn Approver> {
        if self.approval_timeout.is_zero() {
            return Arc::new(crate::approval::NoOneToAsk::SCHEDULED);
        }
        Arc::new(
            QueueApprover::new(
                Arc::clone(queue),
                &self.agent,
                &self.session,
                vec![APPROVE_SCOPE.to_string()],
                self.approval_timeout,
                cancel.clone(),
            )
            .announcing(false),
        )
    }

    /// Renews the lease every third of its length; returns only when renewal fails.
    async fn renew(&self, schedule_id: i64) {
        loop {
            tokio::time::sleep(self.lease / 3).await;
            let until = OffsetDateTime::now_utc()
                + time::Duration::try_from(self.lease).unwrap_or(time::Duration::MINUTE);
            match self
                .store
                .renew_lease(schedule_id, &self.owner, until)
                .await
            {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => tracing::warn!("renewing a wake-up's lease: {e}"),
            }
        }
    }
}
