//! `tackle`: the command-line front end. Parses flags, loads config once, and hands typed
//! structs to the library crates.

// Outside tests, data from outside never panics the process: no unwrap, expect or panic.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
// A build without the daemon's servers (the edge build, docs/decisions/0039-edge-build.md)
// leaves unused the helpers only they call; the default build still checks for dead code.
#![cfg_attr(not(all(feature = "gateway", feature = "channels")), allow(dead_code))]

/// `println!` that returns an error instead of panicking: a closed stdout is
/// [`exit::StdoutClosed`], which ends the command quietly.
macro_rules! outln {
    ($($arg:tt)*) => {
        writeln!($crate::exit::stdout(), $($arg)*)
    };
}

#[cfg(any(feature = "gateway", feature = "channels"))]
mod agent_pool;
mod app;
mod approval;
mod approval_queue;
mod background;
#[cfg(feature = "channels")]
mod channels;
// A build without chat channels (the edge build) answers for them with an error.
#[cfg(not(feature = "channels"))]
#[path = "channels_off.rs"]
mod channels;
mod cli;
mod cli_words;
mod commands;
mod config;
mod elicit;
mod errors;
mod exit;
mod extensions;
mod fs_watch;
#[cfg(feature = "gateway")]
mod gateway;
// A build without the HTTP API (the edge build) answers for it with an error.
#[cfg(not(feature = "gateway"))]
#[path = "gateway_off.rs"]
mod gateway;
mod grant_words;
mod log_format;
mod log_redact;
mod mcp_pins;
mod mcp_service;
mod net_bridge;
mod plugin_watch;
mod plugins;
mod profiles;
mod queued_prompt;
mod render;
mod runtime;
mod sampling;
mod schedules;
mod serve_addr;
mod services;
mod session_lease;
mod skills;
mod spill;
mod term;
mod turn;
mod waiter;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    // The bridge a sandboxed command reaches the network through: no flags, no config.
    let mut argv = std::env::args_os();
    match argv.nth(1) {
        Some(a) if a == "__net-bridge" => return net_bridge::main(argv.collect()),
        // The first process of a sandbox under an allow list (see tackle-host's sandbox_init).
        Some(a) if a == "__sandbox-exec" => return tackle_host::sandbox_exec_main(argv.collect()),
        _ => {}
    }
    exit::quiet_closed_stdout_panics();
    let cli = cli::Cli::parse();
    init_tracing(cli.global.verbose, cli.global.quiet);
    // Before any HTTP client exists (MCP's SDK builds its own): the one TLS backend.
    tackle_host::install_tls_provider();
    let runtime = match runtime_for(&cli.command).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    // A `println!` that found stdout closed panics; the hook above keeps it quiet, and here
    // it ends the command as a shell reports a reader that went away.
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runtime.block_on(run(cli))));
    let code = match ran {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => {
            if e.downcast_ref::<exit::StdoutClosed>().is_none() {
                eprintln!("error: {}", log_redact::redact(&errors::render(&e)));
            }
            exit::for_error(&e)
        }
        Err(_) if exit::stdout_closed() => exit::CLOSED_PIPE,
        Err(panic) => std::panic::resume_unwind(panic),
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

async fn run(cli: cli::Cli) -> anyhow::Result<i32> {
    match cli.command {
        cli::Command::Run(args) => commands::run::run(&cli.global, args).await,
        cli::Command::Chat(args) => commands::chat::run(&cli.global, args).await,
        cli::Command::Tools(cmd) => commands::tools::run(&cli.global, cmd).await,
        cli::Command::Mcp(cmd) => commands::mcp::run(&cli.global, cmd).await,
        cli::Command::Doctor(args) => commands::doctor::run(&cli.global, args).await,
        cli::Command::Audit(args) => commands::audit::run(&cli.global, args).await,
        cli::Command::Policy(cmd) => commands::policy::run(&cli.global, cmd).await,
        cli::Command::Sessions(cmd) => commands::sessions::run(&cli.global, cmd).await,
        cli::Command::Skills(cmd) => commands::skills::run(&cli.global, cmd).await,
        cli::Command::Memory(cmd) => commands::memory::run(&cli.global, cmd).await,
        cli::Command::Plugins(cmd) => commands::plugins::run(&cli.global, cmd).await,
        cli::Command::Schedule(cmd) => commands::schedule::run(&cli.global, cmd).await,
        cli::Command::Approvals(cmd) => commands::approvals::run(&cli.global, cmd).await,
        cli::Command::Daemon(args) => commands::daemon::run(&cli.global, args).await,
        cli::Command::Init(args) => commands::init::run(&cli.global, args),
        cli::Command::Config(cmd) => commands::config::run(&cli.global, cmd),
        cli::Command::Completions { shell } => commands::completions::run(shell),
        cli::Command::Man => commands::man::run(),
    }
}

/// Short commands that run no tools (listings, `init`, `config`, completions, the man page) run
/// on one thread: a worker pool costs more to start than they take. Everything that runs
/// tools, models or servers gets the multi-threaded runtime (chat's line editor blocks in
/// place, which only that runtime allows). `mcp serve` over stdio answers
/// one client, one message at a time on its pipe: a single worker (file and database work still
/// goes to the blocking pool) spares each call the wake-ups of idle workers looking for work to
/// steal, a third of the server's CPU time per call (docs/decisions/0022).
fn runtime_for(command: &cli::Command) -> tokio::runtime::Builder {
    use cli::{Command, McpCommand, ToolsCommand};
    let short = matches!(
        command,
        Command::Tools(ToolsCommand::List { mcp: false, .. })
            | Command::Audit(_)
            | Command::Sessions(_)
            | Command::Init(_)
            | Command::Config(_)
            | Command::Completions { .. }
            | Command::Man
    );
    if short {
        return tokio::runtime::Builder::new_current_thread();
    }
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if matches!(command, Command::Mcp(McpCommand::Serve { http: None, .. })) {
        builder.worker_threads(1);
    }
    builder
}

fn init_tracing(verbose: u8, quiet: bool) {
    // The libraries' own info and debug lines print their structs with `{:?}` (an MCP
    // server's `peer_info`, …): they stay at warnings until -vvv asks for everything.
    const LIBRARIES: &str = "rmcp=warn,hyper=warn,hyper_util=warn,reqwest=warn,h2=warn,rustls=warn,tower=warn,tower_http=warn,axum=warn";
    let level = match (quiet, verbose) {
        (true, _) => "error".to_string(),
        (false, 0) => "warn".to_string(),
        (false, 1) => format!("info,{LIBRARIES}"),
        (false, 2) => format!("debug,{LIBRARIES}"),
        (false, _) => "debug".to_string(),
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("TACKLE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(log_redact::Stderr)
        .with_ansi(ansi)
        .event_format(log_format::PlainEvents::new(ansi))
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn commands_that_run_no_tools_get_the_single_threaded_runtime() {
        for args in [
            &["tackle", "init"][..],
            &["tackle", "config", "show"],
            &["tackle", "config", "path"],
            &["tackle", "completions", "bash"],
            &["tackle", "man"],
        ] {
            let cli = cli::Cli::try_parse_from(args).unwrap();
            let rt = runtime_for(&cli.command).build().unwrap();
            assert_eq!(
                rt.handle().runtime_flavor(),
                tokio::runtime::RuntimeFlavor::CurrentThread,
                "{args:?}"
            );
        }
        let cli = cli::Cli::try_parse_from(["tackle", "run", "hi"]).unwrap();
        let rt = runtime_for(&cli.command).build().unwrap();
        assert_eq!(
            rt.handle().runtime_flavor(),
            tokio::runtime::RuntimeFlavor::MultiThread
        );
    }
}
