//! `tackle`: the command-line front end. Parses flags, loads config once, and hands typed
//! structs to the library crates.

mod app;
mod approval;
mod cli;
mod commands;
mod config;
mod exit;
mod mcp_service;
mod net_bridge;
mod render;
mod runtime;
mod spill;
mod turn;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    // The bridge a sandboxed command reaches the network through: no flags, no config.
    let mut argv = std::env::args_os();
    if argv.nth(1).is_some_and(|a| a == "__net-bridge") {
        return net_bridge::main(argv.collect());
    }
    let cli = cli::Cli::parse();
    init_tracing(cli.global.verbose, cli.global.quiet);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let code = match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            exit::for_error(&e)
        }
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

async fn run(cli: cli::Cli) -> anyhow::Result<i32> {
    match cli.command {
        cli::Command::Run(args) => commands::run::run(&cli.global, args).await,
        cli::Command::Chat(args) => commands::chat::run(&cli.global, args).await,
        cli::Command::Tools(cmd) => commands::tools::run(&cli.global, cmd).await,
        cli::Command::Mcp(cmd) => commands::mcp::run(&cli.global, cmd).await,
        cli::Command::Doctor => commands::doctor::run(&cli.global).await,
    }
}

fn init_tracing(verbose: u8, quiet: bool) {
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, _) => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("TACKLE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .without_time()
        .try_init();
}
