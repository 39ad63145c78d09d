//! Each shard's registry of its established connections, for CLIENT LIST / CLIENT KILL
//! across shards (Redis 7.0 networking.c `clientsCommand`). The connection copies its
//! session's figures into its entry after each command; a kill is a oneshot signal the
//! connection's request loop waits on.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Instant;

use bytes::Bytes;
use futures_channel::oneshot;

use crate::connection::query_buffer::QueryBufferSize;
use crate::connection::Session;
use crate::resp::Protocol;

/// A command as CLIENT LIST's `cmd` names it: the command and, for a container command
/// (CLIENT, CONFIG, …), its subcommand.
pub type CommandName = (&'static str, Option<&'static str>);

/// What CLIENT LIST shows of one connection (Redis's `client` fields we have).
#[derive(Debug, Clone)]
pub struct ClientState {
    /// CLIENT SETNAME.
    pub name: Option<Bytes>,
    /// The authenticated user.
    pub user: Option<String>,
    /// CLIENT SETINFO LIB-NAME / LIB-VER.
    pub lib_name: Option<Bytes>,
    /// CLIENT SETINFO LIB-VER.
    pub lib_ver: Option<Bytes>,
    /// Last read from the client.
    pub last_interaction: Instant,
    /// Selected database.
    pub db: usize,
    /// Commands queued in MULTI, -1 outside a transaction.
    pub multi: i64,
    /// Unparsed request bytes, as of the last command (or of the last read that left them).
    pub qbuf: usize,
    /// The query buffer's modelled allocation (`qbuf-free`).
    pub qbuf_size: QueryBufferSize,
    /// Unwritten reply bytes, as of the last command.
    pub omem: usize,
    /// The last command, `None` before the first.
    pub cmd: Option<CommandName>,
    /// 2 or 3.
    pub resp: u8,
    /// CLIENT NO-EVICT on.
    pub no_evict: bool,
    /// Channels subscribed (`sub`).
    pub sub: usize,
    /// Patterns subscribed (`psub`).
    pub psub: usize,
    /// Waiting in a blocking command (flag `b`).
    pub blocked: bool,
}

impl ClientState {
    /// The session's figures now, `cmd` being its current or last command.
    fn of(session: &Session, cmd: Option<CommandName>) -> Self {
        Self {
            name: session.name.clone(),
            user: session.user.clone(),
            lib_name: session.lib_name.clone(),
            lib_ver: session.lib_ver.clone(),
            last_interaction: session.last_interaction,
            db: session.db,
            multi: multi(session),
            qbuf: session.query_buffer_bytes,
            qbuf_size: session.query_buffer,
            omem: session.output_buffer_bytes,
            cmd,
            resp: resp(session.protocol),
            no_evict: session.no_evict,
            sub: subscriptions(session).0,
            psub: subscriptions(session).1,
            blocked: session.blocked.is_some(),
        }
    }
}

/// What never changes about a connection.
#[derive(Debug, Clone, Copy)]
pub struct ClientIdentity {
    /// CLIENT ID.
    pub id: u64,
    /// The client's address.
    pub peer: Option<SocketAddr>,
    /// Our address.
    pub local: Option<SocketAddr>,
    /// The socket's descriptor, -1 when unknown.
    pub fd: i32,
    /// Accept time.
    pub created: Instant,
    /// The shard serving the connection.
    pub shard: usize,
}

impl ClientIdentity {
    fn of(session: &Session) -> Self {
        Self {
            id: session.id,
            peer: session.peer,
            local: session.local,
            fd: session.socket_fd.unwrap_or(-1),
            created: session.created,
            shard: session.shard,
        }
    }
}

/// One registered connection.
#[derive(Debug)]
pub struct ClientHandle {
    /// What never changes.
    pub identity: ClientIdentity,
    /// Figures as of the last command.
    pub state: RefCell<ClientState>,
    kill: RefCell<Option<oneshot::Sender<()>>>,
}

impl ClientHandle {
    /// Copies the session's figures after a command whose name was `cmd`. The name, user
    /// and library fields are compared only when `identity_may_change` (a command other than
    /// a single- or multi-key keyspace command ran: only connection commands — AUTH, HELLO,
    /// CLIENT SETNAME / SETINFO, RESET, EXEC of those — change them).
    pub fn sync(&self, session: &Session, cmd: Option<CommandName>, identity_may_change: bool) {
        let mut st = self.state.borrow_mut();
        st.last_interaction = session.last_interaction;
        st.db = session.db;
        st.multi = multi(session);
        st.qbuf = session.query_buffer_bytes;
        st.qbuf_size = session.query_buffer;
        st.omem = session.output_buffer_bytes;
        st.resp = resp(session.protocol);
        st.no_evict = session.no_evict;
        if session.pubsub.is_some() {
            (st.sub, st.psub) = subscriptions(session);
        }
        st.blocked = session.blocked.is_some();
        if cmd.is_some() {
            st.cmd = cmd;
        }
        if !identity_may_change {
            return;
        }
        if st.name != session.name {
            st.name.clone_from(&session.name);
        }
        if st.user != session.user {
            st.user.clone_from(&session.user);
        }
        if st.lib_name != session.lib_name || st.lib_ver != session.lib_ver {
            st.lib_name.clone_from(&session.lib_name);
            st.lib_ver.clone_from(&session.lib_ver);
        }
    }

    /// Closes the connection: its request loop ends after writing what it owes.
    pub fn kill(&self) -> bool {
        self.kill
            .borrow_mut()
            .take()
            .is_some_and(|sender| sender.send(()).is_ok())
    }

    /// The CLIENT LIST line (without the line end).
    pub fn line(&self) -> String {
        format_line(&self.identity, &self.state.borrow())
    }
}

fn multi(session: &Session) -> i64 {
    session
        .transaction
        .as_ref()
        .map_or(-1, |t| t.queued.len() as i64)
}

/// Channels and patterns the session is subscribed to.
fn subscriptions(session: &Session) -> (usize, usize) {
    session
        .pubsub
        .as_ref()
        .map_or((0, 0), |p| (p.channel_count(), p.pattern_count()))
}

fn resp(protocol: Protocol) -> u8 {
    match protocol {
        Protocol::Resp2 => 2,
        Protocol::Resp3 => 3,
    }
}

/// The session's own line, with `cmd` the command running now (CLIENT INFO, and the
/// caller's own line in CLIENT LIST).
pub fn session_line(session: &Session, cmd: CommandName) -> String {
    format_line(
        &ClientIdentity::of(session),
        &ClientState::of(session, Some(cmd)),
    )
}

/// Redis 7.0's `catClientInfoString` field order, plus `shard=` (the serving shard) last;
/// `qbuf-free` is what Redis's query buffer would have free
/// ([`crate::connection::query_buffer`]); `argv-mem`, `rbs`, `rbp`, `multi-mem`, `obl` and
/// `oll` have no counterpart here and read 0.
pub fn format_line(f: &ClientIdentity, st: &ClientState) -> String {
    let text = |v: &Option<Bytes>| {
        v.as_ref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    };
    let mut flags = String::new();
    if st.sub + st.psub > 0 {
        flags.push('P');
    }
    if st.multi >= 0 {
        flags.push('x');
    }
    if st.blocked {
        flags.push('b');
    }
    if st.no_evict {
        flags.push('e');
    }
    if flags.is_empty() {
        flags.push('N');
    }
    let idle = st.last_interaction.elapsed();
    let qbuf_free = st.qbuf_size.allocated(st.qbuf, idle) - st.qbuf;
    format!(
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={flags} db={} sub={} psub={} \
         ssub=0 multi={} qbuf={} qbuf-free={} argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 \
         omem={} tot-mem={} events=r cmd={} user={} redir=-1 resp={} lib-name={} lib-ver={} shard={}",
        f.id,
        address(f.peer),
        address(f.local),
        f.fd,
        text(&st.name),
        f.created.elapsed().as_secs(),
        idle.as_secs(),
        st.db,
        st.sub,
        st.psub,
        st.multi,
        st.qbuf,
        qbuf_free,
        st.omem,
        st.qbuf + qbuf_free + st.omem,
        match st.cmd {
            None => "NULL".to_owned(),
            Some((name, None)) => name.to_owned(),
            Some((name, Some(sub))) => format!("{name}|{sub}"),
        },
        st.user.as_deref().unwrap_or(""),
        st.resp,
        text(&st.lib_name),
        text(&st.lib_ver),
        f.shard,
    )
}

/// A shard's connections by CLIENT ID.
#[derive(Debug, Default)]
pub struct ClientRegistry {
    clients: RefCell<BTreeMap<u64, Rc<ClientHandle>>>,
}

/// Removes the connection from its shard's registry when dropped.
pub struct Registration<'a> {
    registry: &'a ClientRegistry,
    /// The entry.
    pub handle: Rc<ClientHandle>,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.registry
            .clients
            .borrow_mut()
            .remove(&self.handle.identity.id);
    }
}

/// Which connections CLIENT KILL (new form) or CLIENT LIST ID selects; every given filter
/// must match. Plain data, so it can travel to other shards.
#[derive(Debug, Clone, Default)]
pub struct ClientFilter {
    /// `ID id …`.
    pub ids: Option<Vec<u64>>,
    /// `ADDR ip:port`.
    pub addr: Option<String>,
    /// `LADDR ip:port`.
    pub laddr: Option<String>,
    /// `USER name`.
    pub user: Option<String>,
    /// `SKIPME yes` (the default): not the connection with this id.
    pub skip: Option<u64>,
    /// `TYPE master|replica`: no connection here matches.
    pub none: bool,
    /// `TYPE pubsub` (`Some(true)`: subscribed connections only) or `TYPE normal`
    /// (`Some(false)`: the others), Redis 7.0 `getClientType`.
    pub pubsub: Option<bool>,
}

fn address(a: Option<SocketAddr>) -> String {
    a.map(|a| a.to_string()).unwrap_or_default()
}

impl ClientFilter {
    /// Whether the filter (SKIPME aside) selects the connection of `session`.
    pub fn matches_session(&self, session: &Session) -> bool {
        self.selects(
            &ClientIdentity::of(session),
            session.user.as_deref(),
            session.is_subscribed(),
        )
    }

    fn matches(&self, c: &ClientHandle) -> bool {
        let state = c.state.borrow();
        self.skip != Some(c.identity.id)
            && self.selects(
                &c.identity,
                state.user.as_deref(),
                state.sub + state.psub > 0,
            )
    }

    fn selects(&self, c: &ClientIdentity, user: Option<&str>, subscribed: bool) -> bool {
        !self.none
            && self.pubsub.is_none_or(|p| p == subscribed)
            && self.ids.as_ref().is_none_or(|ids| ids.contains(&c.id))
            && self.addr.as_ref().is_none_or(|a| *a == address(c.peer))
            && self.laddr.as_ref().is_none_or(|a| *a == address(c.local))
            && self.user.as_ref().is_none_or(|u| user == Some(u.as_str()))
    }
}

impl ClientRegistry {
    /// Registers a connection for the life of the returned guard; the receiver resolves when
    /// CLIENT KILL selects it.
    pub fn register(&self, session: &Session) -> (Registration<'_>, oneshot::Receiver<()>) {
        let (sender, receiver) = oneshot::channel();
        let handle = Rc::new(ClientHandle {
            identity: ClientIdentity::of(session),
            state: RefCell::new(ClientState::of(session, None)),
            kill: RefCell::new(Some(sender)),
        });
        self.clients
            .borrow_mut()
            .insert(session.id, Rc::clone(&handle));
        (
            Registration {
                registry: self,
                handle,
            },
            receiver,
        )
    }

    /// `(id, line)` of every connection `filter` selects.
    pub fn lines(&self, filter: &ClientFilter) -> Vec<(u64, String)> {
        self.clients
            .borrow()
            .values()
            .filter(|c| filter.matches(c))
            .map(|c| (c.identity.id, c.line()))
            .collect()
    }

    /// The largest query buffer and output buffer of this shard's connections, in bytes, as
    /// of their last command (INFO `client_recent_max_input_buffer` / `…_output_buffer`).
    pub fn max_buffers(&self) -> (usize, usize) {
        self.clients
            .borrow()
            .values()
            .map(|c| {
                let st = c.state.borrow();
                (st.qbuf, st.omem)
            })
            .fold((0, 0), |acc, (q, o)| (acc.0.max(q), acc.1.max(o)))
    }

    /// Kills every connection `filter` selects; returns how many.
    pub fn kill(&self, filter: &ClientFilter) -> usize {
        let selected: Vec<Rc<ClientHandle>> = self
            .clients
            .borrow()
            .values()
            .filter(|c| filter.matches(c))
            .cloned()
            .collect();
        selected.iter().filter(|c| c.kill()).count()
    }
}
