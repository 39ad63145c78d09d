//! shardline: a thread-per-core, Redis-compatible key-value server over TLS.
//!
//! Layers, bottom up: [`resp`] (RESP frames and the request parser), [`keyspace`] (one shard's
//! data and hash-slot ownership), [`cmd`] (keyspace commands and the command table),
//! [`connection`] (one client: handshake, authentication, dispatch), [`aof`] (the per-shard
//! append-only log and its replay), [`shard`] and
//! [`forward`] (per-shard state and hops to the owner shard), [`blocking`] (BLPOP and the
//! other blocking pops, across shards), [`accept`] (accept loop,
//! `--maxclients`, running out of descriptors), [`server`], [`fd_limit`] and [`bootstrap`]
//! (start-up and shutdown).

pub mod accept;
pub mod aof;
pub mod blocking;
pub mod bootstrap;
pub mod clock;
pub mod cmd;
pub mod config;
pub mod connection;
pub mod cpus;
pub mod eviction;
pub mod fd_limit;
pub mod forward;
pub mod introspection;
pub mod io_uring_probe;
pub mod keyspace;
pub mod listener;
pub mod logging;
pub mod notify;
pub mod pubsub;
pub mod rdb;
pub mod resp;
pub mod runtime;
pub mod scripting;
pub mod server;
pub mod shard;
pub mod shutdown;
pub mod slowlog;
pub mod stats;
pub mod thp;
pub mod tls;
pub mod txn;

/// The Redis version shardline reports in HELLO and INFO for client compatibility.
pub const REDIS_COMPAT_VERSION: &str = "7.0.0";
