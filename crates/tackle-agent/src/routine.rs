//! The routine engine: fires the schedules in the state store on time.
//!
//! It sleeps until the earliest next fire (woken early by [`RoutineEngine::waker`] when
//! schedules change), claims each due fire in the store under a lease, runs it through a
//! [`FireRunner`] (the binary runs one agent turn) and records the outcome. Claiming is the
//! store's conditional update, so several engines over one database fire each due instant
//! once. Running the agent is not here: the runner owns sessions, approvers and providers.

use async_trait::async_trait;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tackle_protocol::config::CatchUp;
use tackle_store::{Claimed, FireClaim, FireStatus, Schedule, ScheduleKind, Store, StoreError};
use tackle_tools::schedule::{next_fire, Zone};
use time::OffsetDateTime;
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// The longest sleep: a guard against wall-clock jumps (suspend, NTP steps), not polling.
const MAX_SLEEP: Duration = Duration::from_secs(300);
/// A fire due this long before the engine started fell due while no engine ran.
const DOWNTIME_SLACK: time::Duration = time::Duration::seconds(5);
/// After a pass that changed nothing although something looked due (a store error), wait
/// this long instead of spinning.
const BACKOFF: Duration = Duration::from_millis(250);
/// How often a fire left to an open chat is looked at again (the chat may close).
const DEFER_POLL: Duration = Duration::from_secs(1);
/// Missed fires counted for a `missed` record; past this it says "at least".
const MAX_MISSED_COUNTED: usize = 10_000;

/// Why a fire failed. Its text is the detail recorded with the `failed` status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FireError {
    /// The runner could not run the turn, or the turn ended without finishing its work; holds
    /// the runner's account of it (for a person reading the schedule's history).
    #[error("{0}")]
    Run(String),
    /// The engine could not renew the fire's lease in the store, so another engine may claim
    /// it; the run was stopped.
    #[error("the lease could not be renewed")]
    LeaseLost,
}

impl From<String> for FireError {
    fn from(why: String) -> Self {
        FireError::Run(why)
    }
}

/// Runs one fire. `Ok(detail)` is recorded as `ok`, `Err(why)` as `failed`.
#[async_trait]
pub trait FireRunner: Send + Sync {
    /// Runs `schedule`'s fire to the end. `cancel` fires when the engine has stopped and its
    /// grace period ran out; the run should then end promptly (it is recorded as failed).
    async fn run(
        &self,
        schedule: &Schedule,
        cancel: CancellationToken,
    ) -> Result<String, FireError>;
}

/// Where "now" comes from: the system clock, or tokio's (paused in tests).
pub trait Clock: Send + Sync {
    /// The current wall-clock time (UTC).
    fn now(&self) -> OffsetDateTime;
}

/// The system's wall clock; the engine's default.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}

/// Wall time that advances with tokio's clock from a fixed start, so paused-clock tests
/// drive the engine through hours in milliseconds.
pub struct TokioClock {
    start_wall: OffsetDateTime,
    start: tokio::time::Instant,
}

impl TokioClock {
    /// A clock that reads `start_wall` now and advances as tokio's clock does from here.
    pub fn starting_at(start_wall: OffsetDateTime) -> Self {
        Self {
            start_wall,
            start: tokio::time::Instant::now(),
        }
    }
}

impl Clock for TokioClock {
    fn now(&self) -> OffsetDateTime {
        let elapsed = tokio::time::Instant::now() - self.start;
        self.start_wall + elapsed
    }
}

/// What happened to one fire, for the daemon's one log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FireEvent {
    /// The agent the schedule runs as.
    pub agent: String,
    /// The schedule's name.
    pub name: String,
    /// The instant the fire was due.
    pub due: OffsetDateTime,
    /// How it ended (`ok`, `failed`, `missed`, …), as recorded in the store.
    pub status: FireStatus,
    /// What was recorded with the status: the runner's account, or why it failed.
    pub detail: String,
    /// From due to the claim.
    pub late: Duration,
    /// The run's duration (zero for fires that did not run).
    pub took: Duration,
}

/// Called once for each fire the engine records, whatever its status; the engine waits for
/// it, so it should return quickly.
pub type FireLog = Arc<dyn Fn(&FireEvent) + Send + Sync>;

/// How a [`RoutineEngine`] fires schedules (`schedules:` in the config, and the process's
/// identity).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Unique per engine (process): who holds a lease.
    pub owner: String,
    /// The time zone cron expressions are read in (`schedules.timezone`).
    pub zone: Zone,
    /// What happens to fires missed while no engine ran (`schedules.catch_up`).
    pub catch_up: CatchUp,
    /// How many fires of one agent run at once (at least 1); further due fires wait.
    pub max_concurrent_per_agent: usize,
    /// How long a claim holds without renewal; a running fire renews it every third of it.
    pub lease: Duration,
    /// How long running fires may finish after stop.
    pub grace: Duration,
}

impl EngineConfig {
    /// Defaults for the engine `owner`: UTC, missed fires skipped, two fires per agent at
    /// once, a 30 s lease and a 30 s grace period at stop.
    pub fn new(owner: impl Into<String>) -> Self {
        Self {
            owner: owner.into(),
            zone: Zone::default(),
            catch_up: CatchUp::Skip,
            max_concurrent_per_agent: 2,
            lease: Duration::from_secs(30),
            grace: Duration::from_secs(30),
        }
    }
}

/// Fires the schedules in a store on time until stopped; see the module documentation.
pub struct RoutineEngine {
    store: Store,
    runner: Arc<dyn FireRunner>,
    clock: Arc<dyn Clock>,
    config: EngineConfig,
    wake: Arc<Notify>,
    log: Option<FireLog>,
}

/// What runs belong to this engine: for the shutdown's last word on each.
#[derive(Default)]
struct Running {
    fires: Mutex<HashSet<i64>>,
}

/// Whether a chat that has the schedule's session open runs its fires, shown to the person
/// there (`tackle chat`), rather than an engine: pinned to a session, and planted by the agent
/// it runs as (work planted by other agents runs narrowed to their grants, which only the
/// engine's runner does).
pub fn runs_in_chat(s: &Schedule) -> bool {
    s.target == tackle_store::Target::Pinned
        && s.session_id.is_some()
        && tackle_tools::schedule::owner_agents(&s.owner)
            .iter()
            .all(|a| *a == s.agent)
}

/// A fire an open chat runs: the engine leaves it until the chat closes.
fn open_in_chat(store: &Store, s: &Schedule) -> bool {
    runs_in_chat(s)
        && s.session_id
            .as_deref()
            .is_some_and(|id| store.session_open_in_chat(id))
}

impl RoutineEngine {
    /// An engine over `store` that runs each fire with `runner`, on the system clock and
    /// without a log; nothing runs until [`RoutineEngine::run`].
    pub fn new(store: Store, runner: Arc<dyn FireRunner>, config: EngineConfig) -> Self {
        Self {
            store,
            runner,
            clock: Arc::new(SystemClock),
            config,
            wake: Arc::new(Notify::new()),
            log: None,
        }
    }

    /// Reads "now" from `clock` instead of the system clock (tests drive it with
    /// [`TokioClock`]).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Calls `log` with each fire the engine records.
    pub fn with_log(mut self, log: FireLog) -> Self {
        self.log = Some(log);
        self
    }

    /// Notify it when schedules change: the engine re-reads the next fire at once.
    pub fn waker(&self) -> Arc<Notify> {
        Arc::clone(&self.wake)
    }

    /// Fires schedules until `stop`, then lets running fires finish for the grace period;
    /// those still going are cancelled and recorded as failed.
    pub async fn run(self, stop: CancellationToken) -> Result<(), StoreError> {
        let engine = Arc::new(self);
        let started = engine.clock.now();
        let runs_cancel = CancellationToken::new();
        let running = Arc::new(Running::default());
        let mut tasks = JoinSet::new();
        let mut limits: HashMap<String, Arc<Semaphore>> = HashMap::new();
        while !stop.is_cancelled() {
            let now = engine.clock.now();
            let mut deferred = false;
            let progressed = match engine.store.due_schedules(now).await {
                Ok(due) => {
                    let mut progressed = due.is_empty();
                    for s in due {
                        if open_in_chat(&engine.store, &s) {
                            deferred = true;
                            progressed = true;
                            continue;
                        }
                        let limit =
                            Arc::clone(limits.entry(s.agent.clone()).or_insert_with(|| {
                                Arc::new(Semaphore::new(
                                    engine.config.max_concurrent_per_agent.max(1),
                                ))
                            }));
                        match engine
                            .fire(s, started, now, limit, &runs_cancel, &running, &mut tasks)
                            .await
                        {
                            Ok(()) => progressed = true,
                            Err(e) => tracing::warn!("schedule fire: {e}"),
                        }
                    }
                    progressed
                }
                Err(e) => {
                    tracing::warn!("reading due schedules: {e}");
                    false
                }
            };
            let sleep = if !progressed {
                BACKOFF
            } else if deferred {
                // A fire left to a chat is still due: look again soon, in case it closes.
                DEFER_POLL
            } else {
                engine.sleep_for().await
            };
            tokio::select! {
                () = tokio::time::sleep(sleep) => {}
                () = engine.wake.notified() => {}
                () = stop.cancelled() => {}
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            }
        }
        engine.shut_down(tasks, runs_cancel, running).await;
        Ok(())
    }

    /// Until the earliest next fire, at most [`MAX_SLEEP`]; over a shared engine at most its
    /// poll interval, since a schedule another machine adds wakes nothing here.
    async fn sleep_for(&self) -> Duration {
        let longest = self.store.shared_poll().unwrap_or(MAX_SLEEP).min(MAX_SLEEP);
        match self.store.next_fire().await {
            Ok(Some(next)) => {
                let left = next - self.clock.now();
                Duration::try_from(left)
                    .unwrap_or(Duration::ZERO)
                    .min(longest)
            }
            Ok(None) => longest,
            Err(e) => {
                tracing::warn!("reading the next fire: {e}");
                BACKOFF
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn fire(
        self: &Arc<Self>,
        s: Schedule,
        started: OffsetDateTime,
        now: OffsetDateTime,
        limit: Arc<Semaphore>,
        runs_cancel: &CancellationToken,
        running: &Arc<Running>,
        tasks: &mut JoinSet<()>,
    ) -> Result<(), StoreError> {
        let Some(due) = s.next_fire else {
            return Ok(());
        };
        let zone = self.config.zone;
        let missed = s.kind != ScheduleKind::Once && due < started - DOWNTIME_SLACK;
        let after_now = next_fire(s.kind, &s.spec, now, zone);
        if missed && self.config.catch_up == CatchUp::Skip {
            let n = self.count_missed(&s, due, now);
            let detail = if n >= MAX_MISSED_COUNTED {
                format!("at least {n} fires missed while no daemon ran")
            } else {
                format!("{n} fire(s) missed while no daemon ran")
            };
            if self
                .store
                .record_missed(s.id, due, after_now, detail.clone())
                .await?
            {
                self.emit(&s, due, FireStatus::Missed, detail, now, Duration::ZERO);
            }
            return Ok(());
        }
        // On time: the fire after this one. Behind (or catching up once): the next after now.
        let next = match next_fire(s.kind, &s.spec, due, zone) {
            Some(n) if n > now => Some(n),
            _ => after_now,
        };
        let claim = FireClaim {
            schedule_id: s.id,
            due,
            now,
            next,
            owner: self.config.owner.clone(),
            lease: time::Duration::try_from(self.config.lease).unwrap_or(time::Duration::MINUTE),
        };
        match self.store.claim_fire(claim).await? {
            Claimed::Run { fire_id, schedule } => {
                running
                    .fires
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(fire_id);
                let engine = Arc::clone(self);
                let cancel = runs_cancel.child_token();
                let running = Arc::clone(running);
                tasks.spawn(async move {
                    let _permit = limit.acquire_owned().await;
                    engine.run_one(fire_id, *schedule, due, now, cancel).await;
                    running
                        .fires
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&fire_id);
                });
            }
            Claimed::Skipped => {
                let detail = "the previous run was still going".to_string();
                self.emit(&s, due, FireStatus::Skipped, detail, now, Duration::ZERO);
            }
            Claimed::Retired => {
                self.emit(
                    &s,
                    due,
                    FireStatus::Retired,
                    "bound reached".into(),
                    now,
                    Duration::ZERO,
                );
            }
            Claimed::Lost => {}
        }
        Ok(())
    }

    /// Runs one claimed fire, renewing its lease while it goes, and records the outcome.
    async fn run_one(
        &self,
        fire_id: i64,
        schedule: Schedule,
        due: OffsetDateTime,
        claimed_at: OffsetDateTime,
        cancel: CancellationToken,
    ) {
        let begun = self.clock.now();
        let renew = self.renew_lease(schedule.id);
        let result = tokio::select! {
            r = self.runner.run(&schedule, cancel) => r,
            () = renew => Err(FireError::LeaseLost),
        };
        let finished = self.clock.now();
        let (status, detail) = match result {
            Ok(d) => (FireStatus::Ok, d),
            Err(why) => (FireStatus::Failed, why.to_string()),
        };
        if let Err(e) = self
            .store
            .finish_fire(fire_id, status, detail.clone(), finished)
            .await
        {
            tracing::warn!("recording the fire of {}: {e}", schedule.name);
        }
        let took = Duration::try_from(finished - begun).unwrap_or_default();
        self.emit(&schedule, due, status, detail, claimed_at, took);
    }

    /// Renews the lease every third of its length; returns only when renewal fails.
    async fn renew_lease(&self, schedule_id: i64) {
        let every = self.config.lease / 3;
        loop {
            tokio::time::sleep(every).await;
            let until = self.clock.now()
                + time::Duration::try_from(self.config.lease).unwrap_or(time::Duration::MINUTE);
            match self
                .store
                .renew_lease(schedule_id, &self.config.owner, until)
                .await
            {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => tracing::warn!("renewing a schedule lease: {e}"),
            }
        }
    }

    fn count_missed(&self, s: &Schedule, due: OffsetDateTime, now: OffsetDateTime) -> usize {
        let mut n = 1;
        let mut t = due;
        while n < MAX_MISSED_COUNTED {
            match next_fire(s.kind, &s.spec, t, self.config.zone) {
                Some(next) if next <= now => {
                    n += 1;
                    t = next;
                }
                _ => break,
            }
        }
        n
    }

    async fn shut_down(
        &self,
        mut tasks: JoinSet<()>,
        runs_cancel: CancellationToken,
        running: Arc<Running>,
    ) {
        let drain = async { while tasks.join_next().await.is_some() {} };
        if tokio::time::timeout(self.config.grace, drain).await.is_ok() {
            return;
        }
        // Past the grace period: cancel the runs and give them a moment to record it.
        runs_cancel.cancel();
        let settle = async { while tasks.join_next().await.is_some() {} };
        let _ = tokio::time::timeout(Duration::from_secs(2), settle).await;
        tasks.abort_all();
        let left: Vec<i64> = running
            .fires
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .collect();
        for fire_id in left {
            let why = "stopped: the daemon shut down before the run finished".to_string();
            let _ = self
                .store
                .finish_fire(fire_id, FireStatus::Failed, why, self.clock.now())
                .await;
        }
    }

    fn emit(
        &self,
        s: &Schedule,
        due: OffsetDateTime,
        status: FireStatus,
        detail: String,
        claimed_at: OffsetDateTime,
        took: Duration,
    ) {
        if let Some(log) = &self.log {
            log(&FireEvent {
                agent: s.agent.clone(),
                name: s.name.clone(),
                due,
                status,
                detail,
                late: Duration::try_from(claimed_at - due).unwrap_or_default(),
                took,
            });
        }
    }
}
