//! `shardline`: a thread-per-core, Redis-compatible key-value server over TLS.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use shardline::config::{Cli, Command};
use shardline_auth::PasswdLimits;

/// mimalloc instead of glibc malloc: per-thread heaps with cheap frees of memory another shard
/// allocated (a forwarded command's arguments, its reply), as Redis uses jemalloc; wrapped to
/// count the bytes allocated per thread (INFO `used_memory`).
#[global_allocator]
static ALLOCATOR: shardline::introspection::allocated::Counting<mimalloc::MiMalloc> =
    shardline::introspection::allocated::Counting(mimalloc::MiMalloc);

fn main() -> ExitCode {
    shardline::introspection::allocated::mark_installed();
    let cli = Cli::parse();
    shardline::logging::init();
    let result = match cli.command {
        Some(Command::Passwd {
            user,
            users,
            rounds,
            data_dir,
            max_password_bytes,
            max_hash_rounds,
        }) => {
            let limits = PasswdLimits {
                max_password_bytes,
                max_hash_rounds,
            };
            users_file(users, &data_dir).and_then(|path| passwd(&user, &path, rounds, limits))
        }
        Some(Command::CheckAof { fix, file }) => shardline::aof::check::run(&file, fix),
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

/// The users file `shardline passwd` edits: `--users` (created if missing), or
/// `<data-dir>/users`, which must exist — a missing one most likely means the wrong working
/// directory, and a new file there would not be the one the server reads.
fn users_file(users: Option<PathBuf>, data_dir: &Path) -> Result<PathBuf, String> {
    if let Some(users) = users {
        return Ok(users);
    }
    let path = data_dir.join("users");
    match std::fs::metadata(&path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            let shown = std::path::absolute(&path).unwrap_or(path);
            Err(format!(
                "no users file at {} ({err}); without --users, passwd edits the users file in \
                 --data-dir ({}). Run the server once to create it (`shardline --data-dir DIR` \
                 writes DIR/users), pass the server's --data-dir, or pass --users FILE (created \
                 if missing)",
                shown.display(),
                data_dir.display()
            ))
        }
        // Other errors (e.g. permission denied) are reported by the write, with the path.
        _ => Ok(path),
    }
}

/// `shardline passwd`: warns about rounds SHA-512-crypt raises to its minimum, writes the user
/// (refusing rounds the server would refuse), and says how to make a running server see it.
fn passwd(user: &str, path: &Path, rounds: u32, limits: PasswdLimits) -> Result<(), String> {
    if rounds < 1000 {
        eprintln!(
            "shardline passwd: --rounds {rounds} is below SHA-512-crypt's minimum; using 1000"
        );
    }
    shardline_auth::run_passwd(user, path, rounds, limits).map_err(|err| err.to_string())?;
    eprintln!(
        "shardline passwd: user '{user}' written to {}; a running server picks it up on SIGHUP \
         (kill -HUP <pid>)",
        path.display()
    );
    Ok(())
}
