//! Recommended label values for the labelled [`crate::ShardMetrics`] methods.
//!
//! The methods accept any `&'static str`; using these constants keeps dashboards and
//! alerts consistent across the server. Values are lowercase `snake_case`.

/// `result` of `shardline_logins_total` ([`crate::ShardMetrics::login`]).
pub mod login_result {
    /// Credentials verified; the connection is authenticated.
    pub const ACCEPTED: &str = "accepted";
    /// Wrong user or password (`-WRONGPASS`).
    pub const REJECTED: &str = "rejected";
    /// Password or request over the pre-authentication size limits.
    pub const OVERSIZE: &str = "oversize";
    /// Shed while waiting for login admission.
    pub const SHED: &str = "shed";
    /// The client closed the connection while its login waited for a slot: not hashed.
    pub const ABANDONED: &str = "abandoned";
    /// Internal failure (e.g. the offload pool failed).
    pub const ERROR: &str = "error";
    /// Every value, as exported at zero from the start.
    pub const ALL: [&str; 6] = [ACCEPTED, REJECTED, OVERSIZE, SHED, ABANDONED, ERROR];
}

/// `mode` of `shardline_password_hash_duration_seconds` (`--hash-mode`).
pub mod hash_mode {
    /// Hash to the end inside the task.
    pub const INLINE: &str = "inline";
    /// Hash inside the task, yielding when glommio asks to.
    pub const YIELD: &str = "yield";
    /// Hash on the offload thread pool.
    pub const OFFLOAD: &str = "offload";
}

/// `reason` of `shardline_connections_closed_total`.
pub mod close_reason {
    /// The client closed the connection (EOF).
    pub const CLIENT_CLOSED: &str = "client_closed";
    /// The client sent QUIT.
    pub const QUIT: &str = "quit";
    /// Malformed RESP input or an over-limit request.
    pub const PROTOCOL_ERROR: &str = "protocol_error";
    /// Read or write error on the socket.
    pub const IO_ERROR: &str = "io_error";
    /// The TLS handshake failed or timed out.
    pub const HANDSHAKE_FAILED: &str = "handshake_failed";
    /// Shed by login admission.
    pub const SHED: &str = "shed";
    /// `--max-auth-failures` wrong passwords on the connection.
    pub const AUTH_FAILURES: &str = "auth_failures";
    /// Server shutdown.
    pub const SHUTDOWN: &str = "shutdown";
    /// Unwritten replies went over `--client-output-buffer-limit`.
    pub const OUTPUT_BUFFER_LIMIT: &str = "output_buffer_limit";
    /// Silent since accept (no ClientHello byte), its `--maxclients` place given to a new
    /// connection.
    pub const SILENT_EVICTED: &str = "silent_evicted";
    /// Closed by CLIENT KILL.
    pub const KILLED: &str = "killed";
    /// Idle (nothing read) for longer than `--timeout` seconds (Redis's `timeout`).
    pub const IDLE_TIMEOUT: &str = "idle_timeout";
    /// Every value, as exported at zero from the start.
    pub const ALL: [&str; 12] = [
        CLIENT_CLOSED,
        QUIT,
        PROTOCOL_ERROR,
        IO_ERROR,
        HANDSHAKE_FAILED,
        SHED,
        AUTH_FAILURES,
        SHUTDOWN,
        OUTPUT_BUFFER_LIMIT,
        SILENT_EVICTED,
        KILLED,
        IDLE_TIMEOUT,
    ];
}

/// `reason` of `shardline_connections_rejected_total`: why a connection was closed right
/// after accept(2), before any handshake.
pub mod reject_reason {
    /// `--maxclients` clients were connected (Redis's `-ERR max number of clients reached`).
    pub const MAX_CLIENTS: &str = "max_clients";
    /// The process was out of file descriptors (accept failed with EMFILE, RLIMIT_NOFILE).
    pub const FD_LIMIT: &str = "fd_limit";
    /// The system was out of file descriptors (accept failed with ENFILE, fs.file-max).
    pub const SYSTEM_FD_LIMIT: &str = "system_fd_limit";
    /// Every value, as exported at zero from the start.
    pub const ALL: [&str; 3] = [MAX_CLIENTS, FD_LIMIT, SYSTEM_FD_LIMIT];
}

/// `reason` of `shardline_tls_handshakes_failed_total`.
pub mod tls_failure {
    /// No byte moved for `--handshake-timeout-ms`.
    pub const TIMEOUT: &str = "timeout";
    /// The handshake as a whole reached `--handshake-max-ms`.
    pub const MAX_DURATION: &str = "max_duration";
    /// An I/O error (including the peer closing) during the handshake.
    pub const IO: &str = "io";
    /// The TLS library rejected the handshake (protocol, certificate, cipher …).
    pub const PROTOCOL: &str = "protocol";
    /// Setting up the TLS session failed on our side.
    pub const INTERNAL: &str = "internal";
    /// The client closed while its ClientHello waited for a login slot: not answered.
    pub const ABANDONED: &str = "abandoned";
    /// The client's first byte was not a TLS record: a plaintext client on the TLS port.
    pub const PLAINTEXT: &str = "plaintext";
    /// Every value, as exported at zero from the start.
    pub const ALL: [&str; 7] = [
        TIMEOUT,
        MAX_DURATION,
        IO,
        PROTOCOL,
        INTERNAL,
        ABANDONED,
        PLAINTEXT,
    ];
}

/// `kind` of `shardline_command_errors_total`.
pub mod error_kind {
    /// `-ERR unknown command`.
    pub const UNKNOWN_COMMAND: &str = "unknown_command";
    /// `-ERR wrong number of arguments`.
    pub const ARITY: &str = "arity";
    /// `-NOAUTH`: command refused before authentication.
    pub const NOAUTH: &str = "noauth";
    /// Malformed RESP input.
    pub const PROTOCOL: &str = "protocol";
    /// `-WRONGPASS`.
    pub const WRONGPASS: &str = "wrongpass";
    /// `-WRONGTYPE` (not recorded apart by the server today: such replies count as
    /// [`COMMAND`]).
    pub const WRONGTYPE: &str = "wrongtype";
    /// Any other error reply from a command.
    pub const COMMAND: &str = "command";
    /// The kinds the server records; each shard exports them at zero from the start.
    pub const ALL: [&str; 6] = [UNKNOWN_COMMAND, ARITY, NOAUTH, PROTOCOL, WRONGPASS, COMMAND];

    /// The kind of a connection-level error reply: [`WRONGPASS`] for `WRONGPASS …`, else
    /// [`COMMAND`].
    pub fn of_reply(text: &str) -> &'static str {
        if text.starts_with("WRONGPASS") {
            WRONGPASS
        } else {
            COMMAND
        }
    }
}

/// `command` label values of `commands_total` exported at zero by every shard from the start:
/// the commands of the login path, so that a login-rate panel or alert has a series before
/// the first client logs in. Other commands appear at their first call (one series per
/// command name the server knows, never a client's spelling).
pub mod command {
    /// AUTH and HELLO, the commands that log a connection in.
    pub const AUTH_PATH: [&str; 2] = ["auth", "hello"];
}

/// `result` of `shardline_users_reloads_total` (SIGHUP re-reading the users file).
pub mod users_reload {
    /// The new file was loaded and is in use on every shard.
    pub const OK: &str = "ok";
    /// The file could not be read or parsed: the users loaded before stay.
    pub const REFUSED: &str = "refused";
    /// Every value, as exported at zero from the start.
    pub const ALL: [&str; 2] = [OK, REFUSED];
}
