//! The command line (SPEC.md §1).

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "tackle",
    version,
    about = "A secure, local-first runtime for AI agents"
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
    /// More logging (-v info, -vv debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only errors.
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
    /// Config check and which protections are enforced on this machine.
    Doctor,
}

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// Every tool the agent would see: name, owner extension, risk, approval.
    List {
        #[arg(long)]
        json: bool,
        /// Show the tools of this agent (default: the first agent).
        #[arg(long)]
        agent: Option<String>,
        /// Include the opt-in coding tools (`grep`, `find`).
        #[arg(long, value_parser = ["coder"])]
        template: Option<String>,
    },
    /// Full description and JSON Schema of one tool.
    Describe {
        name: String,
        #[arg(long)]
        agent: Option<String>,
        #[arg(long, value_parser = ["coder"])]
        template: Option<String>,
    },
    /// One call through the whole dispatcher (validation, policy, approval, sandbox, sanitizer).
    Call {
        name: String,
        /// Arguments as a JSON object.
        arguments: String,
        /// Approve any call that needs approval.
        #[arg(long)]
        yes: bool,
        /// Print `{"ok", "content", "error"}` JSON.
        #[arg(long)]
        json: bool,
        /// Print the resolved policy and the decision with its why; run nothing.
        #[arg(long)]
        explain: bool,
        #[arg(long)]
        agent: Option<String>,
        #[arg(long, value_parser = ["coder"])]
        template: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The task.
    #[arg(short, long)]
    pub message: String,
    /// The agent to run (default: the first agent in the config).
    #[arg(long)]
    pub agent: Option<String>,
    /// Resume this session (created if new).
    #[arg(long)]
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
}

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// Resume this session.
    #[arg(long)]
    pub session: Option<String>,
    #[arg(long)]
    pub agent: Option<String>,
    #[arg(long, value_parser = ["coder"])]
    pub template: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Serve the tool layer over MCP (stdio by default).
    Serve {
        /// Serve Streamable HTTP at ADDR (e.g. 127.0.0.1:8765) instead of stdio.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        #[arg(long)]
        agent: Option<String>,
        #[arg(long, value_parser = ["coder"])]
        template: Option<String>,
    },
    /// Configured MCP servers, their state and their tools.
    List,
}
