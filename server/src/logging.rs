//! Log output: `tracing` to standard error, filtered by `RUST_LOG` (default `info`).

/// Installs the global subscriber once; later calls do nothing.
pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        // Its fallback report of a failed write is an eprintln!, which panics when stderr is a
        // closed pipe (`shardline 2>&1 | head`): a lost log line must not kill a thread.
        .log_internal_errors(false)
        .with_thread_names(true)
        .try_init();
}
