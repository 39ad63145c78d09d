//! Our own load client (`shardline-load`): std threads, blocking sockets, TLS through the
//! `openssl` crate, RESP2.
//!
//! - [`conn`]: one connection (TCP connect with time-out, optional TLS handshake, AUTH).
//! - [`storm`]: connection per request (connect, handshake, AUTH, one command, close), the
//!   login storm that redis-benchmark `-k 0` also drives.
//! - [`probe`]: a few persistent connections sending paced GETs, recording latency.
//! - [`pipeline`]: one connection writing a whole pipeline of GETs before reading a reply.
//!
//! Every loop is bounded by a duration and stops by itself; targets must be loopback addresses.

pub mod conn;
pub mod pipeline;
pub mod probe;
pub mod storm;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Where and how to connect.
#[derive(Debug, Clone)]
pub struct Target {
    /// Server address; must be a loopback address (this client never loads other hosts).
    pub addr: SocketAddr,
    /// TLS settings, `None` for plain TCP.
    pub tls: Option<TlsTarget>,
    /// Credentials sent as `AUTH user password` on every new connection, if any.
    pub credentials: Option<Credentials>,
    /// Longest a TCP connect may take.
    pub connect_timeout: Duration,
    /// Longest a single read or write may block.
    pub io_timeout: Duration,
}

/// TLS settings of a [`Target`].
#[derive(Debug, Clone)]
pub struct TlsTarget {
    /// PEM file of the CA (or self-signed certificate) that signed the server's certificate.
    pub ca_file: PathBuf,
    /// Name sent as SNI and checked against the certificate (e.g. `localhost`).
    pub server_name: String,
}

/// An ACL user and its password.
#[derive(Debug, Clone)]
pub struct Credentials {
    /// User name (`default` for the classic `AUTH password` user).
    pub user: String,
    /// Password, sent in clear inside the TLS session.
    pub password: String,
}

/// Errors of the load client.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The target is not on this machine.
    #[error("refusing to load {0}: only loopback addresses may be targets")]
    NotLoopback(SocketAddr),
    /// Building the TLS client context failed (e.g. unreadable CA file).
    #[error("TLS setup: {0}")]
    TlsSetup(#[from] openssl::error::ErrorStack),
    /// A connection failed at the given stage.
    #[error("{stage} failed: {source}")]
    Connection {
        /// Which step failed.
        stage: conn::Stage,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The server answered AUTH or a command with an error.
    #[error("server replied with an error: {0}")]
    Reply(String),
    /// Invalid settings.
    #[error("invalid settings: {0}")]
    Config(String),
}
