//! `shardline`: a thread-per-core, Redis-compatible key-value server over TLS.

use std::process::ExitCode;

use clap::Parser;
use shardline::config::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    shardline::logging::init();
    let result = match cli.command {
        Some(Command::Passwd {
            user,
            users,
            rounds,
            data_dir,
        }) => {
            let path = users.unwrap_or_else(|| data_dir.join("users"));
            shardline_auth::run_passwd(&user, &path, rounds).map_err(|err| err.to_string())
        }
        None => shardline::bootstrap::run(cli.server),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("shardline: {message}");
            ExitCode::FAILURE
        }
    }
}
