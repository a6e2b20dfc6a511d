//! Chat channels `tackle daemon` reads (`channels.NAME.inbound`): a message from an allowed
//! sender is answered by a turn of the channel's agent, in a stored session of its own per
//! chat, and every call that needs approval is asked in the chat, as one entry of the one
//! approval queue (docs/decisions/0030-one-approval-queue.md).
//!
//! Each platform is an adapter behind [`Channel`] (one file each); the runner
//! (`runner.rs`) holds what they share: who may talk and approve, the session per chat, the
//! approval buttons, the audit lines; `stream.rs` shows an answer as it streams. A new platform is one new file
//! and its entry in the config table ([`open`]).

mod lease;
mod matrix;
mod retry;
mod runner;
mod slack;
mod stream;
mod telegram;
mod turns;

use anyhow::Result;
use async_trait::async_trait;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::config::{ChannelConfig, Config};
use tackle_store::{Approval, Store};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// What a long poll brought.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    /// A message in a chat: its text, empty when it had none (a photo, a sticker).
    Message {
        chat: String,
        /// The sender's user id on the platform.
        sender: String,
        text: String,
    },
    /// A press of one of the buttons [`Channel::ask_approval`] sent.
    Press {
        chat: String,
        sender: String,
        /// What the press is answered with ([`Channel::answer_press`]).
        press: String,
        /// The button's data: `a:ID`, `s:ID` or `d:ID`.
        data: String,
    },
}

/// A message the channel sent, to edit later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub chat: String,
    pub id: String,
}

/// Why a call to the platform failed, once its retries are spent.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    /// The platform refused the credentials: nothing will work until the operator fixes
    /// them, so the channel stops.
    #[error("the platform refused the bot's credentials: {0}")]
    Unauthorized(String),
    #[error("{0}")]
    Failed(String),
}

/// One chat platform.
#[async_trait]
pub trait Channel: Send + Sync {
    /// The platform's name (`telegram`): approvers are written `telegram:USERID`.
    fn kind(&self) -> &'static str;
    /// The longest text one message may carry; longer answers are split.
    fn max_len(&self) -> usize;
    /// Waits (long polling) for what arrived since the last call; an empty list when the
    /// wait ended with nothing. Retries what is worth retrying itself.
    async fn receive(&self, stop: &CancellationToken) -> Result<Vec<Update>, ChannelError>;
    async fn send(&self, chat: &str, text: &str) -> Result<Sent, ChannelError>;
    /// Replaces a sent message's text (a streamed answer as it grows, an approval's outcome).
    async fn edit(&self, sent: &Sent, text: &str) -> Result<(), ChannelError>;
    /// Asks for an approval in `chat`: the entry's preview and the ways to answer it
    /// (buttons, or the reply words the runner reads).
    async fn ask_approval(&self, chat: &str, approval: &Approval) -> Result<Sent, ChannelError>;
    /// Tells the presser what became of a press (a platform that needs no answer does nothing).
    async fn answer_press(&self, press: &str, text: &str) -> Result<(), ChannelError>;
    /// Where the platform's stream stands after the last [`Self::receive`] (an offset, a
    /// sync token), kept with what that call brought so a restarted daemon reads on from
    /// there; `None` for a platform that keeps no position.
    async fn position(&self) -> Option<String> {
        None
    }
    /// Reads on from a position [`Self::position`] gave, before the first receive.
    async fn resume_from(&self, _position: &str) {}
    /// Asks the platform, once, who the credentials belong to (`tackle doctor`'s probe):
    /// the bot's name or user id.
    async fn whoami(&self) -> Result<String, ChannelError> {
        Err(ChannelError::Failed(format!(
            "{} channels cannot be probed",
            self.kind()
        )))
    }
}

/// The channels the daemon reads, running until `stop`.
pub struct Channels {
    tasks: Vec<JoinHandle<()>>,
    turns: Arc<turns::ChannelTurns>,
}

/// Starts every channel with an `inbound:` section. A channel whose agent is not configured
/// stops the start, as a bad address does.
pub fn start(
    global: &crate::cli::Global,
    config: &Config,
    store: &Store,
    stop: &CancellationToken,
) -> Result<Channels> {
    let turns = Arc::new(turns::ChannelTurns::new(global.clone(), config.clone()));
    let queue = crate::approval_queue::ApprovalQueue::new(store.clone());
    let mut tasks = Vec::new();
    for (name, entry) in &config.channels {
        let Some(inbound) = entry.inbound() else {
            continue;
        };
        let agent = match &inbound.agent {
            Some(a) => a.clone(),
            None => turns.default_agent(),
        };
        if !turns.agents().contains(&agent) {
            return Err(crate::exit::usage(format!(
                "channels.{name}.inbound.agent: {}",
                crate::exit::unknown_agent(config, &agent)
            )));
        }
        let channel = open(name, entry, &crate::app::App::state_dir_for(config)).map_err(|e| {
            // A missing field stays a usage error (its exit code).
            if e.is::<crate::exit::UsageError>() {
                e
            } else {
                anyhow::anyhow!("channels.{name}: {e}")
            }
        })?;
        if !global.quiet {
            let who = match inbound.allowed_senders.len() {
                0 => "nobody (channels.NAME.inbound.allowed_senders is empty)".to_string(),
                1 => "1 sender".to_string(),
                n => format!("{n} senders"),
            };
            eprintln!(
                "daemon: channel {name} ({}) answers {who} as agent `{agent}`",
                channel.kind()
            );
        }
        let runner = runner::Runner::new(runner::Setup {
            name: name.clone(),
            channel,
            agent,
            allowed: inbound.allowed_senders.clone(),
            approvers: inbound.approvers().to_vec(),
            approval_timeout: Duration::from_secs(inbound.approval_timeout_secs),
            store: store.clone(),
            queue: Arc::clone(&queue),
            turns: Arc::clone(&turns),
            poll: Duration::from_secs(inbound.poll_timeout_secs.clamp(1, 50)),
        });
        tasks.push(tokio::spawn(runner.run(stop.clone())));
    }
    Ok(Channels { tasks, turns })
}

/// The adapter of a channel entry: the one place that knows every platform.
pub(crate) fn open(
    name: &str,
    entry: &ChannelConfig,
    state_dir: &Path,
) -> Result<Arc<dyn Channel>> {
    let inbound = entry.inbound();
    let poll = Duration::from_secs(inbound.map_or(25, |i| i.poll_timeout_secs).clamp(1, 50));
    let timeout = entry.timeout_secs().map(Duration::from_secs);
    match entry {
        ChannelConfig::Telegram { bot_token, .. } => Ok(Arc::new(telegram::Telegram::new(
            &entry.operator_url(),
            bot_token.expose(),
            poll,
            timeout,
        )?)),
        ChannelConfig::Matrix { access_token, .. } => Ok(Arc::new(matrix::Matrix::new(
            &entry.operator_url(),
            access_token.expose(),
            poll,
            timeout,
            // Where earlier versions kept the sync position: read once, when the store has
            // none. A file name safe whatever the config's key holds.
            state_dir
                .join("channels")
                .join(format!("{}.matrix-since", runner::session_id(name, "sync"))),
            inbound
                .map(|i| i.allowed_senders.clone())
                .unwrap_or_default(),
        )?)),
        ChannelConfig::Slack {
            bot_token,
            app_token,
            ..
        } => {
            let Some(app_token) = app_token.as_ref().filter(|t| !t.expose().trim().is_empty())
            else {
                return Err(crate::exit::usage(format!(
                    "channels.{name}.app_token is not set: Slack is read over Socket Mode, which takes the app-level token (xapp-…, scope connections:write)"
                )));
            };
            Ok(Arc::new(slack::Slack::new(
                &entry.operator_url(),
                bot_token.expose(),
                app_token.expose(),
                poll,
                timeout,
            )?))
        }
        other => Err(anyhow::anyhow!(
            "channels of type {} cannot be read yet, only sent to",
            other.kind()
        )),
    }
}

impl Channels {
    /// Once `stop` fired: lets running turns finish for `grace`, then cancels them, and
    /// stops what their runtimes started.
    pub async fn finish(self, grace: Duration) {
        let all = futures::future::join_all(self.tasks);
        tokio::pin!(all);
        if tokio::time::timeout(grace, &mut all).await.is_err() {
            // Cancelled turns are recorded and their chats told; that takes a moment.
            self.turns.cancel_all();
            let _ = tokio::time::timeout(Duration::from_secs(5), all).await;
        }
        self.turns.shutdown().await;
    }
}
