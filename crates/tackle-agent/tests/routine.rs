//! The routine engine on tokio's paused clock: hours of schedule pass in milliseconds, and
//! every fire time is exact.

use async_trait::async_trait;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tackle_agent::routine::{Clock, TokioClock};
use tackle_agent::{EngineConfig, FireError, FireRunner, RoutineEngine};
use tackle_protocol::config::CatchUp;
use tackle_store::{FireStatus, NewSchedule, ScheduleKind, ScheduleUpdate, Store, Target};
use tackle_tools::schedule::{next_fire, Zone};
use time::macros::datetime;
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

/// Records when each schedule ran (by the engine's clock), sleeping `busy` per run.
struct Recorder {
    clock: Arc<TokioClock>,
    runs: Mutex<Vec<(String, OffsetDateTime)>>,
    busy: Duration,
}

#[async_trait]
impl FireRunner for Recorder {
    async fn run(
        &self,
        s: &tackle_store::Schedule,
        _: CancellationToken,
    ) -> Result<String, FireError> {
        self.runs
            .lock()
            .unwrap()
            .push((s.name.clone(), self.clock.now()));
        tokio::time::sleep(self.busy).await;
        Ok(String::new())
    }
}

impl Recorder {
    fn times(&self, name: &str) -> Vec<OffsetDateTime> {
        self.runs
            .lock()
            .unwrap()
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, t)| *t)
            .collect()
    }
}

const START: OffsetDateTime = datetime!(2026-03-27 12:00 UTC);

struct Harness {
    store: Store,
    clock: Arc<TokioClock>,
    recorder: Arc<Recorder>,
    zone: Zone,
}

impl Harness {
    fn new(zone: Zone, busy: Duration) -> Self {
        let clock = Arc::new(TokioClock::starting_at(START));
        Self {
            store: Store::open_in_memory().unwrap(),
            recorder: Arc::new(Recorder {
                clock: Arc::clone(&clock),
                runs: Mutex::new(Vec::new()),
                busy,
            }),
            clock,
            zone,
        }
    }

    async fn add(
        &self,
        name: &str,
        cron: &str,
        max_fires: Option<u32>,
        expires: Option<OffsetDateTime>,
    ) {
        self.add_at(
            name,
            cron,
            max_fires,
            expires,
            next_fire(ScheduleKind::Cron, cron, START, self.zone),
        )
        .await;
    }

    async fn add_at(
        &self,
        name: &str,
        cron: &str,
        max_fires: Option<u32>,
        expires_at: Option<OffsetDateTime>,
        next: Option<OffsetDateTime>,
    ) {
        self.store
            .add_schedule(NewSchedule {
                agent: "default".into(),
                name: name.into(),
                kind: ScheduleKind::Cron,
                spec: cron.into(),
                message: format!("do {name}"),
                next_fire: next,
                target: Target::Fresh,
                session_id: None,
                max_fires,
                expires_at,
            })
            .await
            .unwrap();
    }

    /// Runs an engine for `span` of (paused) time, then stops it.
    async fn run_for(&self, span: Duration, catch_up: CatchUp) {
        let mut config = EngineConfig::new("engine-a");
        config.zone = self.zone;
        config.catch_up = catch_up;
        config.grace = Duration::from_secs(60);
        let engine = RoutineEngine::new(
            self.store.clone(),
            Arc::clone(&self.recorder) as Arc<dyn FireRunner>,
            config,
        )
        .with_clock(Arc::clone(&self.clock) as Arc<dyn Clock>);
        let stop = CancellationToken::new();
        let handle = tokio::spawn(engine.run(stop.clone()));
        tokio::time::sleep(span).await;
        stop.cancel();
        handle.await.unwrap().unwrap();
    }

    async fn statuses(&self, name: &str) -> Vec<FireStatus> {
        let mut f: Vec<FireStatus> = self
            .store
            .fires("default", name, 1000)
            .await
            .unwrap()
            .into_iter()
            .map(|f| f.status)
            .collect();
        f.reverse();
        f
    }
}

#[tokio::test(start_paused = true)]
async fn max_fires_three_fires_three_times_on_the_second_then_retires() {
    let h = Harness::new(Zone::default(), Duration::ZERO);
    h.add("tick", "*/2 * * * * *", Some(3), None).await;
    h.run_for(Duration::from_secs(20), CatchUp::Skip).await;
    let times = h.recorder.times("tick");
    assert_eq!(
        times,
        vec![
            datetime!(2026-03-27 12:00:02 UTC),
            datetime!(2026-03-27 12:00:04 UTC),
            datetime!(2026-03-27 12:00:06 UTC)
        ]
    );
    let s = h
        .store
        .get_schedule("default", "tick")
        .await
        .unwrap()
        .unwrap();
    assert!(!s.enabled);
    assert_eq!(s.fire_count, 3);
    assert_eq!(h.statuses("tick").await, vec![FireStatus::Ok; 3]);
}

#[tokio::test(start_paused = true)]
async fn expires_at_stops_a_schedule_at_that_instant() {
    let h = Harness::new(Zone::default(), Duration::ZERO);
    let expires = datetime!(2026-03-27 12:05:00 UTC);
    h.add("minute", "0 * * * * *", None, Some(expires)).await;
    h.run_for(Duration::from_secs(600), CatchUp::Skip).await;
    // 12:01 … 12:04 fire; 12:05 is the expiry itself.
    assert_eq!(h.recorder.times("minute").len(), 4);
    let s = h
        .store
        .get_schedule("default", "minute")
        .await
        .unwrap()
        .unwrap();
    assert!(!s.enabled);
    assert_eq!(s.fire_count, 4);
}

#[tokio::test(start_paused = true)]
async fn a_retired_schedule_re_enabled_retires_again_at_its_next_fire_without_running() {
    let h = Harness::new(Zone::default(), Duration::ZERO);
    h.add("tick", "*/2 * * * * *", Some(1), None).await;
    h.run_for(Duration::from_secs(5), CatchUp::Skip).await;
    assert_eq!(h.recorder.times("tick").len(), 1);
    let later = h.clock.now();
    h.store
        .modify_schedule(
            "default",
            "tick",
            ScheduleUpdate {
                enabled: Some(true),
                next_fire: Some(next_fire(
                    ScheduleKind::Cron,
                    "*/2 * * * * *",
                    later,
                    h.zone,
                )),
                ..ScheduleUpdate::default()
            },
        )
        .await
        .unwrap();
    h.run_for(Duration::from_secs(5), CatchUp::Skip).await;
    assert_eq!(h.recorder.times("tick").len(), 1, "no second run");
    assert_eq!(
        h.statuses("tick").await,
        vec![FireStatus::Ok, FireStatus::Retired]
    );
    let s = h
        .store
        .get_schedule("default", "tick")
        .await
        .unwrap()
        .unwrap();
    assert!(!s.enabled);
    assert_eq!(s.fire_count, 1);
}

#[tokio::test(start_paused = true)]
async fn nine_in_the_morning_in_berlin_fires_at_eight_then_seven_utc_across_dst() {
    let zone = Zone::parse("Europe/Berlin").unwrap();
    let h = Harness::new(zone, Duration::ZERO);
    h.add("morning", "0 0 9 * * *", None, None).await;
    h.run_for(Duration::from_secs(3 * 24 * 3600), CatchUp::Skip)
        .await;
    assert_eq!(
        h.recorder.times("morning"),
        vec![
            datetime!(2026-03-28 08:00 UTC),
            datetime!(2026-03-29 07:00 UTC),
            datetime!(2026-03-30 07:00 UTC)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn month_end_schedule_skips_months_without_the_day() {
    let h = Harness::new(Zone::default(), Duration::ZERO);
    h.add("eom", "0 0 0 31 * *", None, None).await;
    h.run_for(Duration::from_secs(70 * 24 * 3600), CatchUp::Skip)
        .await;
    assert_eq!(
        h.recorder.times("eom"),
        vec![
            datetime!(2026-03-31 0:00 UTC),
            datetime!(2026-05-31 0:00 UTC)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn catch_up_skip_records_missed_fires_and_runs_none_of_them() {
    let h = Harness::new(Zone::default(), Duration::ZERO);
    // Due an hour before the engine started: it was down.
    h.add_at(
        "hourly",
        "0 0 * * * *",
        None,
        None,
        Some(datetime!(2026-03-27 11:00 UTC)),
    )
    .await;
    h.run_for(Duration::from_secs(10), CatchUp::Skip).await;
    assert!(h.recorder.times("hourly").is_empty());
    let fires = h.store.fires("default", "hourly", 10).await.unwrap();
    assert_eq!(fires.len(), 1);
    assert_eq!(fires[0].status, FireStatus::Missed);
    assert!(
        fires[0].detail.contains("2 fire(s) missed"),
        "{}",
        fires[0].detail
    );
    let s = h
        .store
        .get_schedule("default", "hourly")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(s.next_fire, Some(datetime!(2026-03-27 13:00 UTC)));
    assert_eq!(s.fire_count, 0);
}

#[tokio::test(start_paused = true)]
async fn catch_up_once_runs_one_fire_for_all_that_were_missed() {
    let h = Harness::new(Zone::default(), Duration::ZERO);
    h.add_at(
        "hourly",
        "0 0 * * * *",
        None,
        None,
        Some(datetime!(2026-03-27 08:00 UTC)),
    )
    .await;
    h.run_for(Duration::from_secs(10), CatchUp::Once).await;
    assert_eq!(h.recorder.times("hourly"), vec![START]);
    let s = h
        .store
        .get_schedule("default", "hourly")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(s.next_fire, Some(datetime!(2026-03-27 13:00 UTC)));
    assert_eq!(s.fire_count, 1);
}

#[tokio::test(start_paused = true)]
async fn a_fire_whose_previous_run_is_still_going_is_skipped_and_recorded() {
    // Each run takes 5 s; the schedule fires every 2 s.
    let h = Harness::new(Zone::default(), Duration::from_secs(5));
    h.add("slow", "*/2 * * * * *", Some(2), None).await;
    h.run_for(Duration::from_secs(30), CatchUp::Skip).await;
    let statuses = h.statuses("slow").await;
    assert_eq!(
        statuses.iter().filter(|s| **s == FireStatus::Ok).count(),
        2,
        "{statuses:?}"
    );
    assert!(statuses.contains(&FireStatus::Skipped), "{statuses:?}");
    assert_eq!(h.recorder.times("slow").len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_one_shot_fires_once_and_is_deleted_after_its_run() {
    let h = Harness::new(Zone::default(), Duration::ZERO);
    let at = START + time::Duration::seconds(45);
    h.store
        .add_schedule(NewSchedule {
            agent: "default".into(),
            name: "wakeup-1".into(),
            kind: ScheduleKind::Once,
            spec: "@2026-03-27 12:00:45Z".into(),
            message: "wake".into(),
            next_fire: Some(at),
            target: Target::Fresh,
            session_id: None,
            max_fires: Some(1),
            expires_at: None,
        })
        .await
        .unwrap();
    h.run_for(Duration::from_secs(120), CatchUp::Skip).await;
    assert_eq!(h.recorder.times("wakeup-1"), vec![at]);
    assert!(h
        .store
        .get_schedule("default", "wakeup-1")
        .await
        .unwrap()
        .is_none());
    assert_eq!(h.statuses("wakeup-1").await, vec![FireStatus::Ok]);
}

#[tokio::test(start_paused = true)]
async fn a_schedule_added_while_the_engine_sleeps_fires_when_it_is_woken() {
    let h = Harness::new(Zone::default(), Duration::ZERO);
    let mut config = EngineConfig::new("engine-a");
    config.zone = h.zone;
    let engine = RoutineEngine::new(
        h.store.clone(),
        Arc::clone(&h.recorder) as Arc<dyn FireRunner>,
        config,
    )
    .with_clock(Arc::clone(&h.clock) as Arc<dyn Clock>);
    let wake = engine.waker();
    let stop = CancellationToken::new();
    let handle = tokio::spawn(engine.run(stop.clone()));
    tokio::time::sleep(Duration::from_secs(1)).await;
    // Nothing was due: the engine sleeps its longest. A new schedule and a wake re-plan it.
    h.add_at(
        "soon",
        "*/2 * * * * *",
        Some(1),
        None,
        Some(START + time::Duration::seconds(4)),
    )
    .await;
    wake.notify_one();
    tokio::time::sleep(Duration::from_secs(10)).await;
    stop.cancel();
    handle.await.unwrap().unwrap();
    assert_eq!(
        h.recorder.times("soon"),
        vec![START + time::Duration::seconds(4)]
    );
}
