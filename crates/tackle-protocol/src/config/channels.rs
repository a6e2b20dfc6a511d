//! `channels:` where the `message` tool sends, and which channels `tackle daemon` reads.

use crate::secret::Secret;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `channels.NAME`: where the `message` tool may send besides the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ChannelConfig {
    /// A JSON POST to the operator's URL (pinned, timed out; loopback allowed because the
    /// operator wrote it).
    Webhook {
        /// A credential too: some webhooks carry their token in the path.
        url: Secret,
        /// Headers sent with every POST (e.g. `Authorization`); values are credentials, kept out of
        /// output.
        #[serde(default)]
        headers: BTreeMap<String, Secret>,
        /// Seconds one POST may take (default 10).
        #[serde(default)]
        timeout_secs: Option<u64>,
    },
    /// A Telegram bot: `POST {api_base}/bot{bot_token}/sendMessage`.
    Telegram {
        /// The bot's token from BotFather (usually `${TELEGRAM_BOT_TOKEN}`); part of the request
        /// path.
        bot_token: Secret,
        /// The chat sent to when the call names none.
        #[serde(default)]
        chat_id: Option<String>,
        /// Unset = `https://api.telegram.org`.
        #[serde(default)]
        api_base: Option<String>,
        /// Seconds one request may take (default 10).
        #[serde(default)]
        timeout_secs: Option<u64>,
        /// Set: `tackle daemon` also reads the bot's messages (`getUpdates` long polling) and
        /// answers them with an agent.
        #[serde(default)]
        inbound: Option<InboundConfig>,
    },
    /// A Slack app: `POST {api_base}/chat.postMessage`, `Authorization: Bearer {bot_token}`.
    Slack {
        /// The bot token (`xoxb-…`), sent as `Authorization: Bearer`.
        bot_token: Secret,
        /// The channel id (or name) sent to when the call names none.
        #[serde(default)]
        channel: Option<String>,
        /// Unset = `https://slack.com/api`.
        #[serde(default)]
        api_base: Option<String>,
        /// Seconds one request may take (default 10).
        #[serde(default)]
        timeout_secs: Option<u64>,
        /// The app-level token (`xapp-…`, scope `connections:write`) Socket Mode connects
        /// with; required by `inbound`.
        #[serde(default)]
        app_token: Option<Secret>,
        /// Set: `tackle daemon` also reads the app's messages (Socket Mode, no public URL)
        /// and answers them with an agent.
        #[serde(default)]
        inbound: Option<InboundConfig>,
    },
    /// A Discord bot: `POST {api_base}/channels/{channel_id}/messages`,
    /// `Authorization: Bot {bot_token}`.
    Discord {
        /// The bot token, sent as `Authorization: Bot …`.
        bot_token: Secret,
        /// The channel sent to when the call names none (a snowflake id).
        #[serde(default)]
        channel_id: Option<String>,
        /// Unset = `https://discord.com/api/v10`.
        #[serde(default)]
        api_base: Option<String>,
        /// Seconds one request may take (default 10).
        #[serde(default)]
        timeout_secs: Option<u64>,
    },
    /// The WhatsApp Cloud API: `POST {api_base}/v18.0/{phone_number_id}/messages`, as
    /// `services.whatsapp` sends it.
    Whatsapp {
        /// The Cloud API access token, sent as `Authorization: Bearer …`.
        access_token: Secret,
        /// The sending number's id (digits).
        phone_number_id: String,
        /// The recipient sent to when the call names none (digits with country code).
        #[serde(default)]
        to: Option<String>,
        /// Unset = `https://graph.facebook.com` (as `services.whatsapp.api_base`).
        #[serde(default)]
        api_base: Option<String>,
        /// Seconds one request may take (default 10).
        #[serde(default)]
        timeout_secs: Option<u64>,
    },
    /// A Matrix account (client-server API), read by `tackle daemon` (`/sync` long polling)
    /// when `inbound` is set; each room it is in is a conversation.
    Matrix {
        /// The bot account's access token.
        access_token: Secret,
        /// The homeserver's base URL (`https://matrix.example.org`).
        homeserver: String,
        /// Seconds one request may take (default 10).
        #[serde(default)]
        timeout_secs: Option<u64>,
        /// Set: `tackle daemon` reads the rooms (`/sync` long polling) and answers them with an
        /// agent.
        #[serde(default)]
        inbound: Option<InboundConfig>,
    },
}

impl ChannelConfig {
    /// The `type:` this entry was written with.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Webhook { .. } => "webhook",
            Self::Telegram { .. } => "telegram",
            Self::Slack { .. } => "slack",
            Self::Discord { .. } => "discord",
            Self::Whatsapp { .. } => "whatsapp",
            Self::Matrix { .. } => "matrix",
        }
    }

    /// Where this channel sends: the webhook's `url`, or the provider's `api_base` (its
    /// public default when unset). Every one is an operator destination: writing
    /// `type: telegram` names the provider as surely as writing its URL.
    pub fn operator_url(&self) -> String {
        let or = |base: &Option<String>, default: &str| {
            base.as_deref()
                .map(str::trim)
                .filter(|b| !b.is_empty())
                .unwrap_or(default)
                .trim_end_matches('/')
                .to_string()
        };
        match self {
            Self::Webhook { url, .. } => url.expose().to_string(),
            Self::Telegram { api_base, .. } => or(api_base, DEFAULT_TELEGRAM_API),
            Self::Slack { api_base, .. } => or(api_base, DEFAULT_SLACK_API),
            Self::Discord { api_base, .. } => or(api_base, DEFAULT_DISCORD_API),
            Self::Whatsapp { api_base, .. } => or(api_base, DEFAULT_WHATSAPP_API),
            Self::Matrix { homeserver, .. } => homeserver.trim().trim_end_matches('/').to_string(),
        }
    }

    /// Every credential of this entry (its [`Secret`] fields: a webhook's headers and URL,
    /// a provider's token), for the output redactor.
    pub fn secrets(&self) -> Vec<String> {
        crate::secret::values(self)
    }

    /// Seconds one request may take, when set.
    pub fn timeout_secs(&self) -> Option<u64> {
        match self {
            Self::Webhook { timeout_secs, .. }
            | Self::Telegram { timeout_secs, .. }
            | Self::Slack { timeout_secs, .. }
            | Self::Discord { timeout_secs, .. }
            | Self::Whatsapp { timeout_secs, .. }
            | Self::Matrix { timeout_secs, .. } => *timeout_secs,
        }
    }
}

impl ChannelConfig {
    /// What `tackle daemon` answers on this channel, when it reads it at all.
    pub fn inbound(&self) -> Option<&InboundConfig> {
        match self {
            Self::Telegram { inbound, .. }
            | Self::Slack { inbound, .. }
            | Self::Matrix { inbound, .. } => inbound.as_ref(),
            _ => None,
        }
    }
}

/// `channels.NAME.inbound`: a channel `tackle daemon` reads, and who it answers. With no
/// `allowed_senders` nobody is answered, so a bot added to a public chat stays silent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InboundConfig {
    /// The agent that answers (unset: the first agent, or the built-in `default`).
    #[serde(default)]
    pub agent: Option<String>,
    /// The platform's user ids whose messages are answered; anyone else's are ignored and
    /// audited.
    #[serde(default)]
    pub allowed_senders: Vec<String>,
    /// The user ids whose answer to an approval counts (unset: the allowed senders).
    #[serde(default)]
    pub approvers: Option<Vec<String>>,
    /// How long a call waits for an answer in the chat (or from any front end with the
    /// `approve` scope) before it ends `needs_approval`.
    #[serde(default = "default_inbound_approval_timeout")]
    pub approval_timeout_secs: u64,
    /// Seconds one long poll waits for news.
    #[serde(default = "default_inbound_poll_secs")]
    pub poll_timeout_secs: u64,
}

impl InboundConfig {
    /// Who may answer approvals: `approvers`, or the allowed senders.
    pub fn approvers(&self) -> &[String] {
        self.approvers.as_deref().unwrap_or(&self.allowed_senders)
    }
}

fn default_inbound_approval_timeout() -> u64 {
    300
}

fn default_inbound_poll_secs() -> u64 {
    25
}

/// The providers' public API bases, used when a channel sets no `api_base`.
pub const DEFAULT_TELEGRAM_API: &str = "https://api.telegram.org";
/// Slack's public API base, used when a `slack` channel sets no `api_base`.
pub const DEFAULT_SLACK_API: &str = "https://slack.com/api";
/// Discord's public API base (v10), used when a `discord` channel sets no `api_base`.
pub const DEFAULT_DISCORD_API: &str = "https://discord.com/api/v10";
/// The WhatsApp Cloud API's public base, used when a `whatsapp` channel sets no `api_base`.
pub const DEFAULT_WHATSAPP_API: &str = "https://graph.facebook.com";
