//! `schedules:` how cron expressions are read and fired.

use serde::{Deserialize, Serialize};

/// `schedules:` how cron expressions are read and how the daemon fires them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulesConfig {
    /// The IANA zone cron expressions are evaluated in.
    #[serde(default = "default_timezone")]
    pub timezone: String,
    /// The shortest interval between two fires of one schedule an agent may plant.
    #[serde(default = "default_min_interval_secs")]
    pub min_interval_secs: u64,
    /// Fires that fell due while no daemon ran: `skip` records them as missed, `once` runs
    /// one catch-up fire.
    #[serde(default)]
    pub catch_up: CatchUp,
    /// Runs of one agent's schedules going at once; more wait for a slot.
    #[serde(default = "default_max_concurrent_per_agent")]
    pub max_concurrent_per_agent: usize,
    /// On SIGINT/SIGTERM, how long running fires may take to finish before they are stopped.
    #[serde(default = "default_shutdown_grace_secs")]
    pub shutdown_grace_secs: u64,
    /// How long a daemon's claim on a running fire holds without renewal (it renews every
    /// third of it): after a crash, the schedule fires again this long after the last renewal.
    #[serde(default = "default_lease_secs")]
    pub lease_secs: u64,
    /// How long a fire's call that needs approval waits in the approval queue
    /// (`tackle approvals`) for an answer before it ends `needs_approval`; 0: no one is asked,
    /// such calls end `needs_approval` at once (docs/decisions/0030-one-approval-queue.md).
    #[serde(default = "default_approval_timeout_secs")]
    pub approval_timeout_secs: u64,
}

impl Default for SchedulesConfig {
    fn default() -> Self {
        Self {
            timezone: default_timezone(),
            min_interval_secs: default_min_interval_secs(),
            catch_up: CatchUp::default(),
            max_concurrent_per_agent: default_max_concurrent_per_agent(),
            shutdown_grace_secs: default_shutdown_grace_secs(),
            lease_secs: default_lease_secs(),
            approval_timeout_secs: default_approval_timeout_secs(),
        }
    }
}

/// `schedules.catch_up`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CatchUp {
    /// Missed fires are recorded as missed and not run (the default).
    #[default]
    Skip,
    /// One catch-up fire runs, however many were missed.
    Once,
}

fn default_timezone() -> String {
    "UTC".into()
}

fn default_min_interval_secs() -> u64 {
    60
}

fn default_max_concurrent_per_agent() -> usize {
    2
}

fn default_shutdown_grace_secs() -> u64 {
    30
}

fn default_approval_timeout_secs() -> u64 {
    300
}

fn default_lease_secs() -> u64 {
    30
}
