//! Replies in request order, some ready now and some still on other shards.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use bytes::{Bytes, BytesMut};

use crate::aof::SyncPoint;
use crate::clock::CommandInstant;
use crate::cmd::table::{CommandSpec, KeyRouting};
use crate::introspection::clients::CommandName;
use crate::introspection::command_stats::{is_rejection, CommandStats};
use crate::resp::{Frame, Protocol};

/// A reply not yet known: its frame arrives from another shard.
pub type LaterReply = Pin<Box<dyn Future<Output = Frame>>>;

/// The replies of one connection's pipelined requests, encoded into `out` strictly in request
/// order. Ready replies behind a pending one wait in the queue.
pub struct Pipeline {
    queue: VecDeque<(Protocol, Entry)>,
    /// Encoded replies waiting to be written to the socket.
    pub out: BytesMut,
    /// The shard's INFO commandstats / errorstats, fed by the replies added here.
    stats: Rc<CommandStats>,
    /// The command whose replies are being added.
    current: Option<Call>,
    /// When the last command ended, while the connection runs its requests back to back
    /// without waiting: the next command's time starts there, so each command costs one clock
    /// read instead of two. Cleared by [`Pipeline::restart_clock`] before any wait.
    carried_clock: Option<CommandInstant>,
    /// The last command begun and its subcommand (CLIENT LIST `cmd`).
    last: Option<CommandName>,
    /// The last command begun runs on key owners (routing `SingleKey` / `MultiKey`), so it
    /// cannot have changed the connection's name, user or library.
    last_on_keys: bool,
    /// CLIENT REPLY state.
    reply_mode: ReplyMode,
    /// The replies of the current request are dropped (CLIENT REPLY OFF / SKIP).
    silent: bool,
}

/// CLIENT REPLY ON | OFF | SKIP (Redis 7.0 `CLIENT_REPLY_OFF` / `CLIENT_REPLY_SKIP`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyMode {
    /// Every reply is sent.
    On,
    /// No reply is sent until CLIENT REPLY ON.
    Off,
    /// The reply of the next request is dropped.
    SkipNext,
}

/// The call being accounted (INFO commandstats).
#[derive(Clone, Copy)]
struct Call {
    spec: &'static CommandSpec,
    started: CommandInstant,
    /// When it finished, if the code that ran it said so (saves a clock read).
    finished: Option<CommandInstant>,
    /// Refused before running: not counted as a call.
    rejected: bool,
}

enum Entry {
    Ready(Frame),
    Durable(SyncPoint, Frame),
    Later(LaterReply, Option<&'static CommandSpec>),
    Raw(Bytes),
}

impl Pipeline {
    /// An empty pipeline with an output buffer of `capacity` bytes, counting its calls and
    /// error replies into `stats`.
    pub fn with_capacity(capacity: usize, stats: Rc<CommandStats>) -> Self {
        Self {
            queue: VecDeque::new(),
            out: BytesMut::with_capacity(capacity),
            stats,
            current: None,
            carried_clock: None,
            last: None,
            last_on_keys: false,
            reply_mode: ReplyMode::On,
            silent: false,
        }
    }

    /// Called before each request: whether its replies are dropped (CLIENT REPLY).
    pub fn start_request(&mut self) {
        self.silent = match self.reply_mode {
            ReplyMode::On => false,
            ReplyMode::Off => true,
            ReplyMode::SkipNext => {
                self.reply_mode = ReplyMode::On;
                true
            }
        };
    }

    /// CLIENT REPLY: OFF and SKIP drop their own reply, ON sends its `+OK`.
    pub fn set_reply_mode(&mut self, mode: ReplyMode) {
        self.reply_mode = mode;
        self.silent = mode != ReplyMode::On;
    }

    /// Starts accounting a call of `spec` with arguments `args`: the replies added until
    /// [`Pipeline::end_command`] are its replies (INFO commandstats).
    pub fn begin_command(&mut self, spec: &'static CommandSpec, args: &[Bytes]) {
        self.current = Some(Call {
            spec,
            started: self
                .carried_clock
                .take()
                .unwrap_or_else(CommandInstant::now),
            finished: None,
            rejected: false,
        });
        let sub = super::commands::subcommand_name(spec.name, args.get(1).map(|a| &a[..]));
        self.last = Some((spec.name, sub));
        self.last_on_keys = matches!(
            spec.routing,
            KeyRouting::SingleKey | KeyRouting::MultiKey { .. }
        );
    }

    /// When the current command began (read once by [`Pipeline::begin_command`]; a command
    /// run on this shard starts its own timing from it too: `Shard::execute_local_at`).
    pub fn command_started(&self) -> Option<CommandInstant> {
        self.current.map(|call| call.started)
    }

    /// The current command finished executing at `at`: [`Pipeline::end_command`] counts its
    /// time up to there instead of reading the clock again.
    pub fn command_finished(&mut self, at: CommandInstant) {
        if let Some(call) = &mut self.current {
            call.finished = Some(at);
        }
    }

    /// The last command begun and its subcommand, if any.
    pub fn last_command(&self) -> Option<CommandName> {
        self.last
    }

    /// Whether the last command begun may have changed the connection's name, user or
    /// library (anything but a keyspace command run on its keys' owners).
    pub fn last_may_change_identity(&self) -> bool {
        !self.last_on_keys
    }

    /// Ends the call begun by [`Pipeline::begin_command`]: counts it with its time in µs,
    /// unless it was refused before running.
    ///
    /// The instant it ended is carried to the next [`Pipeline::begin_command`] (the time
    /// between them, parsing the next request, is counted in the next command).
    pub fn end_command(&mut self) {
        if let Some(call) = self.current.take() {
            let finished = call.finished.unwrap_or_else(CommandInstant::now);
            if !call.rejected {
                let usec = finished.saturating_duration_since(call.started).as_micros();
                self.stats.called(call.spec, usec as u64);
            }
            self.carried_clock = Some(finished);
        }
    }

    /// The current command's time starts now (after it waited for CLIENT PAUSE to end).
    pub fn restart_command_clock(&mut self) {
        if let Some(call) = &mut self.current {
            call.started = CommandInstant::now();
        }
    }

    /// The next command reads the clock to start its time (call before the connection may
    /// wait: for more requests, for the socket, or for its turn on the shard).
    pub fn restart_clock(&mut self) {
        self.carried_clock = None;
    }

    /// Counts an error reply of the current command (or of none: an unknown command).
    fn count_current_error(&mut self, message: &str) {
        self.stats.error_reply(message);
        let Some(call) = &mut self.current else {
            return;
        };
        if is_rejection(message) {
            self.stats.rejected(call.spec);
            call.rejected = true;
        } else {
            self.stats.failed(call.spec);
        }
    }

    /// Adds a reply that is known now.
    pub fn ready(&mut self, protocol: Protocol, frame: Frame) {
        if let Frame::Error(message) = &frame {
            self.count_current_error(message);
        }
        if self.silent {
            return;
        }
        if self.queue.is_empty() {
            frame.encode(protocol, &mut self.out);
        } else {
            self.queue.push_back((protocol, Entry::Ready(frame)));
        }
    }

    /// Adds a Pub/Sub frame (a confirmation or a delivery) after the replies before it. It is
    /// sent even under CLIENT REPLY OFF / SKIP, as Redis sends what it writes with
    /// `CLIENT_PUSHING` (Redis 7.0 pubsub.c `addReplyPubsubMessage`).
    pub fn push(&mut self, protocol: Protocol, frame: Frame) {
        if self.queue.is_empty() {
            frame.encode(protocol, &mut self.out);
        } else {
            self.queue.push_back((protocol, Entry::Ready(frame)));
        }
    }

    /// Adds a reply computed on this shard that may leave only once `durable` resolves (the
    /// append-only log's signal under `appendfsync always`, see `Shard::durable`).
    pub fn durable(&mut self, protocol: Protocol, frame: Frame, durable: Option<SyncPoint>) {
        if durable.is_some() {
            if let Frame::Error(message) = &frame {
                self.count_current_error(message);
            }
        }
        if self.silent {
            return;
        }
        match durable {
            None => self.ready(protocol, frame),
            Some(point) => self
                .queue
                .push_back((protocol, Entry::Durable(point, frame))),
        }
    }

    /// Adds bytes that are already encoded, e.g. the `*N` header of EXEC's reply whose N
    /// elements follow as their own replies.
    pub fn raw(&mut self, bytes: Bytes) {
        if self.silent {
            return;
        }
        if self.queue.is_empty() {
            self.out.extend_from_slice(&bytes);
        } else {
            // The protocol is not used for raw bytes.
            self.queue.push_back((Protocol::Resp2, Entry::Raw(bytes)));
        }
    }

    /// Adds a reply that another shard will produce.
    pub fn later(&mut self, protocol: Protocol, reply: LaterReply) {
        if self.silent {
            // Another shard still runs the command; only its reply is dropped.
            glommio::spawn_local(async move {
                reply.await;
            })
            .detach();
            return;
        }
        let spec = self.current.map(|call| call.spec);
        self.queue.push_back((protocol, Entry::Later(reply, spec)));
    }

    /// Awaits every queued reply and encodes all of them, in order, into `out`.
    pub async fn drain(&mut self) {
        while let Some((protocol, entry)) = self.queue.pop_front() {
            let frame = match entry {
                Entry::Ready(frame) => frame,
                Entry::Durable(point, frame) => {
                    point.reached().await;
                    frame
                }
                Entry::Later(reply, spec) => {
                    let frame = reply.await;
                    if let Frame::Error(message) = &frame {
                        // Answered by another shard after the call was counted: a failure.
                        self.stats.error_reply(message);
                        if let Some(spec) = spec {
                            self.stats.failed(spec);
                        }
                    }
                    frame
                }
                Entry::Raw(bytes) => {
                    self.out.extend_from_slice(&bytes);
                    continue;
                }
            };
            frame.encode(protocol, &mut self.out);
        }
    }
}
