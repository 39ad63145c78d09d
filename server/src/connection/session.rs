//! What one client connection remembers between commands.

use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::time::Instant;

use bytes::Bytes;

use super::transaction::Transaction;
use crate::forward::TxnId;
use crate::resp::Protocol;
use crate::txn::watch::WatchedKeys;

/// Per-connection state (Redis's `client` struct, the parts we serve).
#[derive(Debug)]
pub struct Session {
    /// CLIENT ID: unique across shards for the life of the process.
    pub id: u64,
    /// The authenticated user; `None` until AUTH or HELLO … AUTH succeeds.
    pub user: Option<String>,
    /// Reply protocol: RESP2 until `HELLO 3`.
    pub protocol: Protocol,
    /// CLIENT SETNAME / HELLO SETNAME.
    pub name: Option<Bytes>,
    /// CLIENT SETINFO LIB-NAME.
    pub lib_name: Option<Bytes>,
    /// CLIENT SETINFO LIB-VER.
    pub lib_ver: Option<Bytes>,
    /// The client's address.
    pub peer: Option<SocketAddr>,
    /// Our address on this connection.
    pub local: Option<SocketAddr>,
    /// When the connection was accepted (CLIENT INFO age).
    pub created: Instant,
    /// When bytes last arrived from the client (Redis `lastinteraction`; CLIENT INFO idle).
    pub last_interaction: Instant,
    /// The shard serving this connection.
    pub shard: usize,
    /// The selected database (SELECT; Redis `c->db->id`), 0 to `--databases` - 1: every
    /// keyspace command runs on this database of its key's owner shard.
    pub db: usize,
    /// Commands queued since MULTI; `None` outside a transaction.
    pub transaction: Option<Transaction>,
    /// Encoded replies not yet written to the socket, in bytes (CLIENT INFO `omem`), as of
    /// the current command.
    pub output_buffer_bytes: usize,
    /// Received request bytes not yet executed, in bytes (CLIENT INFO `qbuf`), as of the
    /// current command.
    pub query_buffer_bytes: usize,
    /// The query buffer's allocation as Redis would hold it (CLIENT INFO `qbuf-free`).
    pub query_buffer: super::query_buffer::QueryBufferSize,
    /// The raw TCP socket, only to ask whether the client has gone
    /// ([`super::peer::peer_closed`]); valid while the connection is served.
    pub socket_fd: Option<RawFd>,
    /// WRONGPASS replies on this connection (`--max-auth-failures`).
    pub auth_failures: u32,
    /// Keys watched since WATCH (cleared by EXEC, DISCARD, UNWATCH, RESET; see
    /// [`WatchedKeys::clear`]).
    pub watched: WatchedKeys,
    /// The cross-shard transaction this connection's commands run in now (during EXEC or a
    /// multi-key command over several shards), whose gates they pass.
    pub txn_scope: Option<TxnId>,
    /// CLIENT NO-EVICT on (shown as flag `e` in CLIENT LIST).
    pub no_evict: bool,
    /// Pub/Sub subscriptions and mailbox; `None` until the first SUBSCRIBE or PSUBSCRIBE
    /// (a connection that never subscribes pays nothing for Pub/Sub).
    pub pubsub: Option<Box<crate::pubsub::Subscriptions>>,
    /// The wait of a blocking command (BLPOP …) in progress: the request loop runs no other
    /// request meanwhile (flag `b` in CLIENT LIST).
    pub blocked: Option<crate::blocking::BlockedWait>,
}

impl Session {
    /// A new, unauthenticated RESP2 session.
    pub fn new(id: u64, shard: usize, peer: Option<SocketAddr>, local: Option<SocketAddr>) -> Self {
        let now = Instant::now();
        Self {
            id,
            user: None,
            protocol: Protocol::Resp2,
            name: None,
            lib_name: None,
            lib_ver: None,
            peer,
            local,
            created: now,
            last_interaction: now,
            shard,
            db: 0,
            transaction: None,
            output_buffer_bytes: 0,
            query_buffer_bytes: 0,
            query_buffer: Default::default(),
            socket_fd: None,
            auth_failures: 0,
            watched: WatchedKeys::default(),
            txn_scope: None,
            no_evict: false,
            pubsub: None,
            blocked: None,
        }
    }

    /// The client as a SLOWLOG entry names it: address and name.
    pub fn client_tag(&self) -> crate::slowlog::ClientTag {
        crate::slowlog::ClientTag {
            addr: self.peer,
            name: self.name.clone(),
        }
    }

    /// Whether commands other than AUTH/HELLO/QUIT/RESET may run.
    pub fn is_authenticated(&self) -> bool {
        self.user.is_some()
    }

    /// Whether the connection has a channel or pattern subscription (Redis `CLIENT_PUBSUB`):
    /// in RESP2 only the Pub/Sub commands, PING, QUIT and RESET may run, and its output
    /// buffer counts against the `pubsub` class.
    pub fn is_subscribed(&self) -> bool {
        self.pubsub.as_ref().is_some_and(|p| p.count() > 0)
    }

    /// RESET: back to a fresh, unauthenticated RESP2 session on database 0 with the same id
    /// and NO-EVICT off (Redis 7 `clearClientConnectionState`; the caller logs it in as
    /// `default` again when that user needs no password). CLIENT REPLY goes back to ON in the connection's pipeline.
    pub fn reset(&mut self) {
        self.db = 0;
        self.user = None;
        self.protocol = Protocol::Resp2;
        self.name = None;
        self.transaction = None;
        self.no_evict = false;
    }
}
