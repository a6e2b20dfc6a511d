//! `tackle completions SHELL`: the shell's completion script on stdout, generated from the
//! same command-line definition the binary parses.

use crate::cli::Cli;
use crate::exit;
use anyhow::Result;
use clap::CommandFactory;
use clap_complete::Shell;

pub fn run(shell: Shell) -> Result<i32> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "tackle", &mut script);
    let text = String::from_utf8_lossy(&script);
    exit::unless_closed(write!(exit::stdout(), "{text}"))?;
    Ok(exit::OK)
}
