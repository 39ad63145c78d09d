//! The request loop of an established connection: read, parse, dispatch, reply, with reading
//! and reply writing overlapped ([`super::duplex`]) so a client may send a whole pipeline
//! before it reads; unwritten replies queue in memory up to `--client-output-buffer-limit`.

use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures_channel::oneshot;
use futures_lite::{AsyncRead, AsyncWrite, AsyncWriteExt};

use super::commands::blocking as blocking_cmd;
use super::dispatch::{self, Flow};
use super::duplex::{self, StreamEvent};
use super::output_limit::OutputBufferCheck;
use super::pipeline::Pipeline;
use super::probe::ProbeRecord;
use super::session::Session;
use super::{CloseReason, UNAUTHENTICATED_LIMITS};
use crate::blocking::slots::Wakeup;
use crate::blocking::BlockedWait;
use crate::introspection::clients::ClientHandle;
use crate::resp::{Frame, RequestLimits, RequestParser};
use crate::shard::Shard;

/// Bytes read from the socket per read call.
const READ_CHUNK: usize = 16 * 1024;
/// While a batch of requests executes, unwritten replies are handed to the socket (without
/// waiting) each time this many bytes are pending.
const WRITE_AHEAD: usize = 64 * 1024;
/// An output buffer that grew past this is given back to the allocator once it is empty.
const KEEP_OUTPUT_CAPACITY: usize = 1024 * 1024;
/// An input buffer that grew past this (a large request) is given back to the allocator once
/// every request in it has been parsed, as Redis shrinks a large idle query buffer: the
/// parsed arguments are slices of it and would otherwise keep its whole allocation alive.
const KEEP_INPUT_CAPACITY: usize = 64 * 1024;

/// Capacity of the reused argument vector kept after a request (a request with more arguments
/// gives its extra memory back).
const KEPT_ARGS: usize = 64;

/// One connection's buffers and limits.
struct Connection<'a, S> {
    shard: &'a Rc<Shard>,
    stream: S,
    session: Session,
    parser: RequestParser,
    /// The arguments of the request being run, kept from request to request (a command run
    /// on this shard borrows them; one handed elsewhere takes them).
    args: Vec<Bytes>,
    authenticated_limits: RequestLimits,
    input: BytesMut,
    pipeline: Pipeline,
    output_check: OutputBufferCheck,
    /// Unwritten reply bytes last added to the shard's `client_output_buffer_bytes`.
    output_reported: usize,
    /// This connection's entry in the shard's registry (CLIENT LIST).
    client: Rc<ClientHandle>,
    /// Resolves when CLIENT KILL selects this connection.
    killed: oneshot::Receiver<()>,
}

/// Serves requests on an established stream (TLS or, with `--tls off`, plain TCP) until the
/// client leaves, QUIT, a protocol error, a limit or shutdown; returns why it ended.
pub async fn run<S>(shard: &Rc<Shard>, stream: S, session: Session) -> CloseReason
where
    S: AsyncRead + AsyncWrite + ProbeRecord + Unpin,
{
    let config = &shard.shared.config;
    let (registration, killed) = shard.info.clients.register(&session);
    let mut conn = Connection {
        shard,
        stream,
        session,
        parser: RequestParser::new(),
        args: Vec::new(),
        authenticated_limits: RequestLimits {
            max_args: config.max_multibulk_len,
            max_bulk_bytes: config.proto_max_bulk_len,
            max_inline_bytes: 64 * 1024,
            unauthenticated: false,
        },
        input: BytesMut::with_capacity(READ_CHUNK),
        pipeline: Pipeline::with_capacity(READ_CHUNK, Rc::clone(&shard.info.calls)),
        output_check: OutputBufferCheck::new(config.client_output_buffer_limit),
        output_reported: 0,
        client: Rc::clone(&registration.handle),
        killed,
    };
    let reason = conn.serve().await;
    super::commands::pubsub::leave_all(shard, &mut conn.session);
    if let Some(wait) = conn.session.blocked.take() {
        // Killed, shut down or gone while blocked: no owner may serve it any more.
        crate::blocking::abandon(shard, wait.id);
    }
    drop(registration);
    conn.account_output();
    let Connection {
        mut stream,
        output_reported,
        ..
    } = conn;
    shard
        .metrics
        .client_output_buffer_changed(-(output_reported as i64));
    // Orderly close: TLS close_notify (async-openssl's or futures-rustls's poll_close), then
    // the TCP close.
    if !matches!(
        reason,
        CloseReason::IoError | CloseReason::OutputBufferLimit
    ) {
        let _ = glommio::timer::timeout(Duration::from_secs(1), async {
            let _ = stream.close().await;
            Ok(())
        })
        .await;
    }
    reason
}

/// What ends one wait of [`Connection::serve`].
/// What ended a wait of the request loop.
enum Wake {
    Stream(StreamEvent),
    Shutdown,
    Killed,
    /// `timeout` seconds may have passed since the last read or write.
    Idle,
    /// CONFIG SET ran: `timeout` may have changed.
    ConfigChanged,
    /// Pub/Sub deliveries wait in the connection's mailbox (or it overflowed).
    Pubsub,
    /// The blocking command waited for was served, unblocked or timed out.
    Unblocked(Wakeup),
    /// The blocking command's timeout passed.
    BlockTimeout,
}

impl<S: AsyncRead + AsyncWrite + ProbeRecord + Unpin> Connection<'_, S> {
    async fn serve(&mut self) -> CloseReason {
        let mut chunk = vec![0u8; READ_CHUNK];
        // One shutdown listener for the connection's life: registering one per read costs an
        // allocation and a lock on the shared event each time.
        let shard = self.shard;
        let mut shutdown = std::pin::pin!(shard.shared.shutdown.wait());
        // Wakes the wait below when CONFIG SET changes `timeout`.
        let mut config_changed = shard.config_changed.listen();
        loop {
            if self.session.blocked.is_none() {
                if let Err(reason) = self.execute_buffered().await {
                    return reason;
                }
            }
            if self.session.pubsub.is_some() {
                if let Err(reason) = self.deliver_pubsub() {
                    return reason;
                }
            }
            if !self.pipeline.out.is_empty() {
                // Redis writes the replies of a loop turn in one burst before it sleeps
                // (`handleClientsWithPendingWrites`). The same here: the other connections
                // woken in this turn execute their requests first, then the sends go out
                // together, so a client woken by one reply finds its next ones there instead
                // of sleeping between them; waking a sleeping client costs the shard an
                // inter-processor interrupt in the send. benches/README.md, "Replies sent
                // in one burst per turn".
                futures_lite::future::yield_now().await;
            }
            if self.shard.shared.shutdown.is_requested() {
                return self.finish(CloseReason::Shutdown).await;
            }
            if let Ok(Some(())) = self.killed.try_recv() {
                return self.finish(CloseReason::Killed).await;
            }
            let mut sent = 0;
            let killed = &mut self.killed;
            let blocked = &mut self.session.blocked;
            // Redis's `timeout`: idle clients are closed (0 = never; CONFIG SET changes it).
            let idle_limit = self.shard.runtime.borrow().timeout_seconds;
            let idle_deadline = (idle_limit > 0)
                .then(|| self.session.last_interaction + Duration::from_secs(idle_limit));
            // Polled only once the connection has subscribed: the others pay nothing.
            let mailbox = self.session.pubsub.as_ref().map(|p| Rc::clone(&p.mailbox));
            let waits = futures_lite::future::or(
                async {
                    match blocked {
                        Some(wait) => wait_unblocked(wait).await,
                        None => std::future::pending().await,
                    }
                },
                futures_lite::future::or(
                    async {
                        Wake::Stream(
                            duplex::write_while_reading(
                                &mut self.stream,
                                &mut self.pipeline.out,
                                &mut chunk,
                                &mut sent,
                            )
                            .await,
                        )
                    },
                    futures_lite::future::or(
                        async {
                            shutdown.as_mut().await;
                            Wake::Shutdown
                        },
                        futures_lite::future::or(
                            async {
                                // A dropped sender (never: the registry outlives the loop) is no kill.
                                match killed.await {
                                    Ok(()) => Wake::Killed,
                                    Err(_) => std::future::pending().await,
                                }
                            },
                            futures_lite::future::or(
                                async {
                                    match idle_deadline {
                                        Some(at) => {
                                            let left = at.saturating_duration_since(Instant::now());
                                            glommio::timer::sleep(left).await;
                                            Wake::Idle
                                        }
                                        None => std::future::pending().await,
                                    }
                                },
                                async {
                                    (&mut config_changed).await;
                                    Wake::ConfigChanged
                                },
                            ),
                        ),
                    ),
                ),
            );
            let event = match &mailbox {
                None => waits.await,
                Some(mailbox) => {
                    futures_lite::future::or(waits, async {
                        mailbox.ready().await;
                        Wake::Pubsub
                    })
                    .await
                }
            };
            self.sent(sent);
            // Redis's `lastinteraction` (CLIENT LIST `idle`) moves on reads and on writes:
            // one clock read per wake-up serves both.
            if sent > 0 || matches!(event, Wake::Stream(StreamEvent::Read(_))) {
                self.session.last_interaction = Instant::now();
            }
            let event = match event {
                Wake::Shutdown => return self.finish(CloseReason::Shutdown).await,
                Wake::Killed => return self.finish(CloseReason::Killed).await,
                Wake::Idle
                    if self.session.blocked.is_none()
                        && self.session.last_interaction.elapsed()
                            >= Duration::from_secs(idle_limit) =>
                {
                    return CloseReason::IdleTimeout;
                }
                Wake::Idle => continue,
                Wake::ConfigChanged => {
                    config_changed = shard.config_changed.listen();
                    continue;
                }
                Wake::Pubsub => {
                    if let Err(reason) = self.deliver_pubsub().and_then(|()| self.check_output()) {
                        return reason;
                    }
                    continue;
                }
                Wake::BlockTimeout => {
                    if let Some(wait) = &mut self.session.blocked {
                        wait.deadline = None;
                        crate::blocking::end(shard, wait.id, None);
                    }
                    continue;
                }
                Wake::Unblocked(wakeup) => {
                    self.unblocked(wakeup).await;
                    continue;
                }
                Wake::Stream(event) => event,
            };
            match event {
                StreamEvent::Read(n) => {
                    self.shard.metrics.bytes_received(n);
                    let info = &self.shard.info;
                    info.net_input_bytes
                        .set(info.net_input_bytes.get() + n as u64);
                    let before = self.input.len();
                    self.input.extend_from_slice(&chunk[..n]);
                    self.session.query_buffer.read(
                        before,
                        self.input.len(),
                        self.session.last_interaction,
                    );
                    let limit = self.shard.runtime.borrow().client_query_buffer_limit;
                    if self.input.len() > limit {
                        return self
                            .fail(
                                "ERR Protocol error: query buffer limit exceeded \
                                 (client-query-buffer-limit)",
                            )
                            .await;
                    }
                }
                StreamEvent::Flushed => self.shrink_output(),
                // Replies to requests sent before a half-close still go out.
                StreamEvent::Eof => return self.finish(CloseReason::ClientClosed).await,
                StreamEvent::Failed => return CloseReason::IoError,
            }
            if let Err(reason) = self.check_output() {
                return reason;
            }
        }
    }

    /// Parses and dispatches every complete request in the input buffer, then waits for the
    /// replies other shards owe. Unwritten replies are handed to the socket along the way.
    async fn execute_buffered(&mut self) -> Result<(), CloseReason> {
        // `proto-max-bulk-len` as CONFIG SET last left it.
        self.authenticated_limits.max_bulk_bytes = self.shard.runtime.borrow().proto_max_bulk_len;
        loop {
            let limits = if self.session.is_authenticated() {
                &self.authenticated_limits
            } else {
                &UNAUTHENTICATED_LIMITS
            };
            // Redis's `qbuf`: the query buffer as the command runs, the command included.
            let buffered = self.input.len();
            let mut args = std::mem::take(&mut self.args);
            args.clear();
            match self.parser.parse_into(&mut self.input, limits, &mut args) {
                Ok(true) => {
                    self.session.output_buffer_bytes = self.pipeline.out.len();
                    self.session.query_buffer_bytes = buffered;
                    self.pipeline.start_request();
                    let flow = dispatch::dispatch(
                        self.shard,
                        &mut self.session,
                        &mut args,
                        &mut self.pipeline,
                        &mut self.stream,
                    )
                    .await;
                    args.clear();
                    args.shrink_to(KEPT_ARGS);
                    self.args = args;
                    self.pipeline.end_command();
                    self.sync_client();
                    if let Flow::Close(reason) = flow {
                        return Err(self.finish(reason).await);
                    }
                    if self.session.blocked.is_some() {
                        // The requests after a blocking command wait for its reply.
                        break;
                    }
                }
                Ok(false) => {
                    self.args = args;
                    self.pipeline.restart_clock();
                    // CLIENT LIST's `qbuf` of a connection waiting for input: what is left
                    // unparsed (Redis trims what it executed).
                    if self.session.query_buffer_bytes != self.input.len() {
                        self.session.query_buffer_bytes = self.input.len();
                        self.sync_client();
                    }
                    break;
                }
                Err(err) => {
                    return Err(self.fail(&format!("ERR {err}")).await);
                }
            }
            if self.pipeline.out.len() >= WRITE_AHEAD {
                self.pipeline.restart_clock();
                let mut sent = 0;
                let written =
                    duplex::write_ready(&mut self.stream, &mut self.pipeline.out, &mut sent).await;
                self.sent(sent);
                if written.is_err() {
                    return Err(CloseReason::IoError);
                }
                self.check_output()?;
            }
            // A long pipeline, or a client whose next requests are always already in the
            // socket, must not keep the shard past its task quota.
            if glommio::executor().need_preempt() {
                self.pipeline.restart_clock();
                glommio::yield_if_needed().await;
            }
        }
        if self.input.is_empty() && self.input.capacity() > KEEP_INPUT_CAPACITY {
            self.input = BytesMut::with_capacity(READ_CHUNK);
        }
        self.pipeline.drain().await;
        self.check_output()
    }

    /// The blocking command waited for ended: its reply, or (a move whose destination another
    /// shard owns) its turn to run the move itself, blocking again if the source was
    /// emptied meanwhile.
    async fn unblocked(&mut self, wakeup: Wakeup) {
        let Some(wait) = self.session.blocked.take() else {
            return;
        };
        let started = crate::clock::CommandInstant::now();
        let logged =
            (self.shard.runtime.borrow().slowlog_log_slower_than >= 0).then(|| wait.args.clone());
        let reply = match wakeup {
            Wakeup::Reply(reply) => reply,
            Wakeup::Handoff => {
                let name = crate::cmd::table::lookup(&wait.args[0]).map_or("blmove", |s| s.name);
                let deadline = Some(wait.deadline);
                match blocking_cmd::start(self.shard, &self.session, name, wait.args, deadline)
                    .await
                {
                    blocking_cmd::Start::Reply(reply) => reply,
                    blocking_cmd::Start::Blocked(wait) => {
                        self.session.blocked = Some(wait);
                        return;
                    }
                }
            }
        };
        if reply.is_error() {
            self.shard.metrics.command_error("command");
        }
        // Logged once served, timed from its wake-up (Redis logs a blocked command when it
        // is unblocked, without the time it waited).
        if let Some(args) = logged {
            self.shard
                .log_if_slow(&args, started, &self.session.client_tag());
        }
        self.pipeline.ready(self.session.protocol, reply);
        self.sync_client();
    }

    /// Closes for `--client-output-buffer-limit` (`--client-output-buffer-limit-pubsub`
    /// while subscribed, Redis's `pubsub` class) when the unwritten replies exceed it, and
    /// reports their size to the shard's gauge.
    fn check_output(&mut self) -> Result<(), CloseReason> {
        self.account_output();
        let subscribed = self.session.pubsub.is_some() && self.session.is_subscribed();
        let limit = {
            let runtime = self.shard.runtime.borrow();
            if subscribed {
                runtime.pubsub_output_limit
            } else {
                runtime.client_output_buffer_limit
            }
        };
        self.output_check.set_limit(limit);
        let pending = self.pipeline.out.len();
        if let Some(subs) = &self.session.pubsub {
            subs.mailbox
                .set_output(pending, if subscribed { limit.hard_bytes } else { 0 });
        }
        if self.output_check.exceeded(pending, Instant::now) {
            self.output_limit_reached(pending, subscribed);
            return Err(CloseReason::OutputBufferLimit);
        }
        Ok(())
    }

    fn output_limit_reached(&self, pending: usize, pubsub: bool) {
        tracing::warn!(
            "shard {}: client id={} addr={} closed for overcoming its output buffer limit: \
             {pending} unwritten reply bytes ({})",
            self.shard.id,
            self.session.id,
            self.session.peer.map(|a| a.to_string()).unwrap_or_default(),
            if pubsub {
                "--client-output-buffer-limit-pubsub"
            } else {
                "--client-output-buffer-limit"
            }
        );
    }

    /// Moves the Pub/Sub deliveries waiting in the mailbox after the replies owed; closes
    /// when the mailbox overflowed the `pubsub` class's hard limit.
    fn deliver_pubsub(&mut self) -> Result<(), CloseReason> {
        let Some(subs) = &self.session.pubsub else {
            return Ok(());
        };
        if subs.mailbox.overflowed() {
            self.output_limit_reached(self.pipeline.out.len(), true);
            return Err(CloseReason::OutputBufferLimit);
        }
        let mut frames = Vec::new();
        subs.mailbox.take_into(&mut frames);
        for frame in frames {
            self.pipeline.push(self.session.protocol, frame);
        }
        Ok(())
    }

    /// Copies the session's figures into its CLIENT LIST entry after a command.
    fn sync_client(&self) {
        self.client.sync(
            &self.session,
            self.pipeline.last_command(),
            self.pipeline.last_may_change_identity(),
        );
    }

    fn account_output(&mut self) {
        let pending = self.pipeline.out.len();
        if pending != self.output_reported {
            self.shard
                .metrics
                .client_output_buffer_changed(pending as i64 - self.output_reported as i64);
            self.output_reported = pending;
        }
        self.session.output_buffer_bytes = pending;
    }

    fn sent(&self, bytes: usize) {
        if bytes > 0 {
            self.shard.metrics.bytes_sent(bytes);
            let info = &self.shard.info;
            info.net_output_bytes
                .set(info.net_output_bytes.get() + bytes as u64);
        }
    }

    fn shrink_output(&mut self) {
        if self.pipeline.out.is_empty() && self.pipeline.out.capacity() > KEEP_OUTPUT_CAPACITY {
            self.pipeline.out = BytesMut::with_capacity(READ_CHUNK);
        }
    }

    /// Replies with a protocol error after every earlier reply, then closes.
    async fn fail(&mut self, error: &str) -> CloseReason {
        self.pipeline.drain().await;
        self.pipeline
            .ready(self.session.protocol, Frame::error(error.to_owned()));
        self.shard.metrics.command_error("protocol");
        self.finish(CloseReason::ProtocolError).await
    }

    /// Writes every reply still owed, then ends with `reason` (or `IoError` if writing fails).
    async fn finish(&mut self, reason: CloseReason) -> CloseReason {
        self.pipeline.drain().await;
        let mut sent = 0;
        let written = duplex::write_all(&mut self.stream, &mut self.pipeline.out, &mut sent).await;
        self.sent(sent);
        match written {
            Ok(()) => reason,
            Err(()) => CloseReason::IoError,
        }
    }
}

/// Waits for a blocked connection's wake-up, or for its deadline.
async fn wait_unblocked(wait: &mut BlockedWait) -> Wake {
    let deadline = wait.deadline;
    futures_lite::future::or(
        async {
            match (&mut wait.receiver).await {
                Ok(wakeup) => Wake::Unblocked(wakeup),
                // The slot went without a word (never: every end sends one).
                Err(_) => Wake::Unblocked(Wakeup::Reply(Frame::Null)),
            }
        },
        async {
            match deadline {
                Some(at) => {
                    glommio::timer::sleep(at.saturating_duration_since(Instant::now())).await;
                    Wake::BlockTimeout
                }
                None => std::future::pending().await,
            }
        },
    )
    .await
}
