//! `tackle man`: the manual page (roff) on stdout, generated from the same command-line
//! definition the binary parses: `tackle man | man -l -`, or save it as `tackle.1`.

use crate::cli::Cli;
use crate::exit;
use anyhow::Result;
use clap::CommandFactory;

pub fn run() -> Result<i32> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut page)?;
    let text = String::from_utf8_lossy(&page);
    exit::unless_closed(write!(exit::stdout(), "{text}"))?;
    Ok(exit::OK)
}
