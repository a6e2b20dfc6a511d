//! The command line (README, "Using it").

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "tackle",
    version,
    about = "A secure, local-first runtime for AI agents",
    after_help = crate::exit::help_text()
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args, Clone)]
pub struct Global {
    /// Config file (else $TACKLE_CONFIG, else $XDG_CONFIG_HOME/tackle/config.yaml, else defaults).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Workspace directory for fs and shell tools (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// More logging (-v info, -vv debug, -vvv with the libraries' own debug lines).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only errors on stderr: no tool-call lines, session line or warnings (the answer and
    /// --json output still go to stdout).
    #[arg(short, long, global = true)]
    pub quiet: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// One task: the answer streams on stdout, one line per tool call on stderr.
    Run(RunArgs),
    /// Interactive chat; approvals are an inline y/n/a prompt.
    Chat(ChatArgs),
    /// List, describe and call tools.
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// Serve Tackle's guarded tools over MCP, or list the configured MCP servers.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Check what is configured (backends, MCP servers, state store) and which protections
    /// are enforced on this machine; exit 1 when something configured is broken.
    Doctor(DoctorArgs),
    /// The audit log: one line per tool call, oldest first; verify its hash chain, print its
    /// signing key, export it for a SIEM.
    Audit(AuditArgs),
    /// What a configuration decides, with nothing run: replay the audit log's calls under the
    /// one given with --config and list the decisions that change; check a file of cases.
    #[command(subcommand)]
    Policy(crate::commands::policy::PolicyCommand),
    /// Stored sessions: list them, show one, remove one.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Skills: list, search and show the catalogue; install from the registry; add to a store.
    #[command(subcommand)]
    Skills(SkillsCommand),
    /// Agents' memory and shared memory banks: list, show, set, rm; banks and their grants.
    #[command(subcommand)]
    Memory(crate::commands::memory::MemoryCommand),
    /// Plugin manifests (`plugins.dirs`): list the loaded plugins, check them for problems.
    #[command(subcommand)]
    Plugins(crate::commands::plugins::PluginsCommand),
    /// Schedules: list them with their fires; add, remove, enable, disable one.
    #[command(subcommand)]
    Schedule(crate::commands::schedule::ScheduleCommand),
    /// Calls waiting for a person's answer (a schedule's fire in the daemon): list them,
    /// allow or deny one.
    #[command(subcommand)]
    Approvals(crate::commands::approvals::ApprovalsCommand),
    /// Fire schedules until SIGINT or SIGTERM (one stderr line per fire), then exit 0; with
    /// `gateway:` (or --http) also serve the HTTP API and the web console.
    Daemon(DaemonArgs),
    /// Write a minimal starter config to the config path (`tackle config path`); never
    /// over an existing file unless --force.
    Init(InitArgs),
    /// The configuration: the one in effect (secrets redacted), or where it is read from.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Print a shell completion script, e.g. `tackle completions bash > ~/.local/share/bash-completion/completions/tackle`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `tackle man | man -l -`, or save it as tackle.1.
    Man,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Replace an existing config file.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// The configuration in effect, after `${VAR}` and `TACKLE_*`, secrets redacted (YAML).
    Show {
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The config file Tackle reads: --config, else $TACKLE_CONFIG, else
    /// $XDG_CONFIG_HOME/tackle/config.yaml (~/.config/tackle/config.yaml).
    Path,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print `{"status", "checks": [{"name", "status", "detail"}]}` JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Only this session's calls.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Only calls of this tool.
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// Only calls since this long ago (`90s`, `30m`, `2h`, `7d`, `1w`) or this RFC 3339 time
    /// or date (`2026-01-02T03:04:05Z`, `2026-01-02`).
    #[arg(long, value_name = "DURATION|TIME")]
    pub since: Option<String>,
    /// At most the newest N calls.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Print a JSON array of the records.
    #[arg(long)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Option<crate::commands::audit::AuditCommand>,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// Sessions, most recently active first: id, times, messages, first user message.
    List {
        /// Print a JSON array (of every session unless --limit is given).
        #[arg(long)]
        json: bool,
        /// At most the N most recently active sessions (default 20; 0 lists all).
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Show child agents' sessions under the session that started them.
        #[arg(long)]
        tree: bool,
    },
    /// One session's messages and tool calls.
    Show {
        /// The session's id, as `tackle sessions list` shows it.
        id: String,
        /// Print the session and its stored entries as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete a session and its messages (the audit log keeps its records).
    Rm {
        /// The session's id, as `tackle sessions list` shows it.
        id: String,
    },
    /// Let a session frozen by a honeytoken (`security.honeytokens`) call tools again, from
    /// its next run; `tackle doctor` lists the frozen ones.
    Unfreeze {
        /// The session's id, as the refusal and `tackle doctor` show it.
        id: String,
    },
    /// Check a session's signed entries: each signed by its agent's identity key (or one it
    /// was rotated from), unchanged, none missing; exit 1 naming each entry that fails.
    Verify {
        /// The session's id, as `tackle sessions list` shows it.
        id: String,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Give an agent a new identity key for signing its session entries; the old key's
    /// entries still verify through the recorded succession.
    RotateKey {
        /// The agent's name, as under `agents:`.
        agent: String,
        /// Print the rotation as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete every session not active for this long (`30d`, `12h`, `2w`); the audit log
    /// keeps its records.
    Prune {
        /// Remove the sessions whose last activity is older than this (`90s`, `30m`, `2h`,
        /// `7d`, `1w`, or several: `1d12h`).
        #[arg(long, value_name = "DURATION", required = true)]
        older_than: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// Every tool the agent would see: name, owner extension, risk, approval.
    List {
        /// Print a JSON array of {name, owner, risk, approval, description}.
        #[arg(long)]
        json: bool,
        /// Also start the configured MCP servers and list their tools (waits for each, up
        /// to its start-up timeout); without it the listing starts no server.
        #[arg(long)]
        mcp: bool,
        /// Show the tools of this agent (default: the first agent).
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
        /// `coder`: include the opt-in coding tools (`grep`, `find`).
        #[arg(long, value_parser = ["coder"])]
        template: Option<String>,
    },
    /// Full description and JSON Schema of one tool.
    Describe {
        /// The tool's name, as `tackle tools list` shows it.
        name: String,
        /// Describe the tool as this agent has it (default: the first agent).
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
        /// `coder`: include the opt-in coding tools (`grep`, `find`).
        #[arg(long, value_parser = ["coder"])]
        template: Option<String>,
    },
    /// One call through the whole dispatcher (validation, policy, approval, sandbox, sanitizer).
    Call {
        /// The tool's name, as `tackle tools list` shows it.
        name: String,
        /// Arguments as a JSON object, e.g. '{"expression": "1+1"}'.
        arguments: String,
        /// Approve any call that needs approval.
        #[arg(long)]
        yes: bool,
        /// Print `{"ok", "content", "error"}` JSON.
        #[arg(long)]
        json: bool,
        /// Print the resolved policy and the decision with its why; run nothing (exit 3 when
        /// the decision is deny).
        #[arg(long)]
        explain: bool,
        /// Call the tool under this agent's policy (default: the first agent).
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
        /// `coder`: include the opt-in coding tools (`grep`, `find`).
        #[arg(long, value_parser = ["coder"])]
        template: Option<String>,
    },
    /// The Markdown reference of every built-in tool, from the built-in defaults (no config
    /// read): `tackle tools reference > docs/tools.md`.
    #[command(hide = true)]
    Reference,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The task (or give it as the positional TASK); `-` reads it from stdin.
    #[arg(short, long, value_name = "TEXT", conflicts_with = "task")]
    pub message: Option<String>,
    /// The task, as `tackle run "summarise README.md"`; `-` reads it from stdin.
    #[arg(value_name = "TASK")]
    pub task: Option<String>,
    #[command(flatten)]
    pub llm: LlmArgs,
    /// The agent to run (default: the first agent in the config).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Resume this session (created if new).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// `coder`: also register the coding tools (`grep`, `find`).
    #[arg(long, value_parser = ["coder"])]
    pub template: Option<String>,
    /// Approve every call that needs approval.
    #[arg(long)]
    pub yes: bool,
    /// Print the event stream as JSON lines.
    #[arg(long)]
    pub json: bool,
    /// Do not wait for background tasks (`spawn`) at the end: cancel them and say so.
    #[arg(long)]
    pub no_wait: bool,
}

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// Resume this session (an unknown id is an error unless --new is given).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// With --session: start that session when it does not exist yet.
    #[arg(long, requires = "session")]
    pub new: bool,
    #[command(flatten)]
    pub llm: LlmArgs,
    /// The agent to chat with (default: the first agent in the config).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// `coder`: also register the coding tools (`grep`, `find`).
    #[arg(long, value_parser = ["coder"])]
    pub template: Option<String>,
}

/// `--backend` / `--model` (`run`, `chat`).
#[derive(Debug, Args, Clone, Default)]
pub struct LlmArgs {
    /// Use this backend from `backends:` instead of the agent's.
    #[arg(long, value_name = "NAME")]
    pub backend: Option<String>,
    /// Use this model instead of the agent's (any model the backend serves).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
}

impl LlmArgs {
    pub fn choice(&self) -> crate::runtime::LlmChoice {
        crate::runtime::LlmChoice {
            backend: self.backend.clone(),
            model: self.model.clone(),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Serve the tool layer over MCP (stdio by default).
    Serve {
        /// Serve Streamable HTTP at ADDR (e.g. 127.0.0.1:8765) instead of stdio.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// Serve the tools of this agent, under its policy (default: the first agent).
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
        /// `coder`: include the opt-in coding tools (`grep`, `find`).
        #[arg(long, value_parser = ["coder"])]
        template: Option<String>,
    },
    /// Configured MCP servers, their state and their tools; exit 1 when every one failed.
    List {
        /// Print a JSON array of {name, state, error, tools}.
        #[arg(long)]
        json: bool,
    },
    /// Log in to a Streamable HTTP server that needs OAuth: prints the authorization URL,
    /// waits for the browser's redirect on 127.0.0.1 and keeps the token in the state dir.
    Login {
        /// The server's name under `mcp_servers`.
        name: String,
        /// Follow the authorization URL's redirects instead of waiting for a browser (for an
        /// authorization server that approves without a person).
        #[arg(long, hide = true)]
        unattended: bool,
    },
    /// Forget the OAuth token kept for a server.
    Logout {
        /// The server's name under `mcp_servers`.
        name: String,
    },
    /// Accept a server's tools as it offers them now: shows each definition against its
    /// earlier pin and pins it, so a quarantined tool is offered again and a later change
    /// quarantines it.
    Trust {
        /// The server's name under `mcp_servers`.
        name: String,
        /// Only this tool (its name on the server, or `server__tool`); default: each tool
        /// not pinned as offered.
        #[arg(long, value_name = "TOOL")]
        tool: Option<String>,
        /// Accept without asking (scripts); otherwise a terminal is asked y/n.
        #[arg(long)]
        yes: bool,
    },
    /// Pinned MCP tools, those not pinned yet, and those quarantined because their server
    /// changed them; with what was removed from their descriptions.
    Pins {
        /// Only this server.
        name: Option<String>,
        /// Print a JSON array of {server, tool, registry_name, state, digest, pinned_digest,
        /// pinned_by, pinned_at, removed, message}.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// Every skill the agent can use: name — description (triggers), where it comes from and
    /// the skills of the same name it hides. No bodies.
    List {
        /// Print a JSON array of {name, description, triggers, source, origin, shadows}.
        #[arg(long)]
        json: bool,
        /// The skills of this agent (default: the first agent).
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
    },
    /// Skills whose name, description or triggers contain QUERY (case-insensitive).
    Search {
        /// Text to look for, e.g. `git`.
        query: String,
        /// Print a JSON array of {name, description, triggers, source}.
        #[arg(long)]
        json: bool,
        /// The skills of this agent (default: the first agent).
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
    },
    /// One skill's full text.
    Show {
        /// The skill's name, as `tackle skills list` shows it.
        name: String,
        /// Print {name, description, text}.
        #[arg(long)]
        json: bool,
        /// The skills of this agent (default: the first agent).
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
    },
    /// Save a skill file into an agent's own store, or into a bank it may write (`--bank`),
    /// as the agent would with `skill_save`. Saving a name it already has there updates it.
    Add {
        /// The skill file: YAML front matter naming it, then the body; at most 64 KiB.
        file: PathBuf,
        /// The agent whose store and grants are used (default: the first agent).
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
        /// A bank the agent may write (a `memory_banks` grant); default: its own store.
        #[arg(long, value_name = "NAME")]
        bank: Option<String>,
        /// Print {name, bank, replaced, visible, time}.
        #[arg(long)]
        json: bool,
    },
    /// Download a skill from the registry (`skills.registry_url`) into the first skills dir.
    /// Running this command is the approval `install_skill` asks for.
    Install {
        /// The skill's slug, as `find_skills` or the registry shows it.
        slug: String,
        /// The archive's expected SHA-256 (64 hex digits).
        #[arg(long, value_name = "HEX")]
        sha256: Option<String>,
        /// Print {name, slug, path, sha256, verified, replaced, visible}.
        #[arg(long)]
        json: bool,
        /// Install under this agent's policy (default: the first agent).
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct DaemonArgs {
    /// Serve the HTTP API and the console at ADDR (HOST:PORT; a loopback address unless
    /// gateway.allow_remote), over gateway.bind; without a `gateway:` section, its defaults.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
}
