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
            max_password_bytes,
        }) => {
            let path = users.unwrap_or_else(|| data_dir.join("users"));
            passwd(&user, &path, rounds, max_password_bytes)
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

/// `shardline passwd`: warns about rounds the server would clamp or refuse, writes the user,
/// and says how to make a running server see it.
fn passwd(
    user: &str,
    path: &std::path::Path,
    rounds: u32,
    max_password_bytes: usize,
) -> Result<(), String> {
    let default_max = shardline::config::DEFAULT_MAX_HASH_ROUNDS;
    if rounds < 1000 {
        eprintln!(
            "shardline passwd: --rounds {rounds} is below SHA-512-crypt's minimum; using 1000"
        );
    }
    if rounds > default_max {
        eprintln!(
            "shardline passwd: warning: {rounds} rounds is more than the server accepts by default \
             (--max-hash-rounds {default_max}); start it with a larger --max-hash-rounds"
        );
    }
    shardline_auth::run_passwd(user, path, rounds, max_password_bytes)
        .map_err(|err| err.to_string())?;
    eprintln!(
        "shardline passwd: user '{user}' written to {}; a running server picks it up on SIGHUP \
         (kill -HUP <pid>)",
        path.display()
    );
    Ok(())
}
