//! The keyspace events a database gathers while commands run (Redis 7.0 `notify.c`
//! `notifyKeyspaceEvent`, called where Redis calls it), for the shard to publish after each
//! command ([`crate::notify::publish`]).

use bytes::Bytes;

use super::Db;
use crate::notify::flags;

/// One event: its class (a [`flags`] bit), Redis's event name and the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyEvent {
    /// The class bit ([`flags::GENERIC`], [`flags::LIST`], ...).
    pub class: u16,
    /// Redis's event name (`set`, `lpush`, `expired`, ...).
    pub event: &'static str,
    /// The key.
    pub key: Bytes,
    /// Order of the report on this thread (shard): orders the events of one command that
    /// touched several databases (MOVE, COPY … DB, an eviction elsewhere).
    pub seq: u64,
}

thread_local! {
    /// Events reported so far on this thread.
    static REPORTED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The next report's sequence number.
fn next_seq() -> u64 {
    REPORTED.with(|n| {
        let seq = n.get().wrapping_add(1);
        n.set(seq);
        seq
    })
}

/// A database's notification state: the classes reported and the events not yet published.
#[derive(Debug, Default)]
pub struct Notifications {
    /// Classes reported ([`flags::effective`] of `notify-keyspace-events`); 0 = off.
    flags: u16,
    events: Vec<KeyEvent>,
}

impl Notifications {
    /// [`Db::notify`].
    #[inline]
    pub(super) fn report(&mut self, class: u16, event: &'static str, key: &[u8]) {
        if self.flags & class != 0 {
            self.events.push(KeyEvent {
                class,
                event,
                key: Bytes::copy_from_slice(key),
                seq: next_seq(),
            });
        }
    }

    /// A read (`read`: Redis's `lookupKeyRead`) found no live `key`: Redis's `keymiss`.
    #[inline]
    pub(super) fn key_miss(&mut self, read: bool, key: &[u8]) {
        if read {
            self.report(flags::KEY_MISS, "keymiss", key);
        }
    }
}

impl Db {
    /// Reports event `event` of class `class` on `key` (Redis's `notifyKeyspaceEvent`):
    /// kept for publishing when `notify-keyspace-events` selects the class, else nothing
    /// (one test). To give a command its events, call this where Redis's handler calls
    /// `notifyKeyspaceEvent`, in the same order.
    #[inline]
    pub fn notify(&mut self, class: u16, event: &'static str, key: &[u8]) {
        self.notify.report(class, event, key);
    }

    /// Sets the classes reported (`notify-keyspace-events` parsed: [`crate::notify::parse`]).
    pub fn set_notify_flags(&mut self, classes: u16) {
        self.notify.flags = flags::effective(classes);
        if self.notify.flags == 0 {
            self.notify.events = Vec::new();
        }
    }

    /// Whether any class is reported.
    #[inline]
    pub fn notifies(&self) -> bool {
        self.notify.flags != 0
    }

    /// The classes reported (0 = off), with `K` and `E`.
    pub fn notify_classes(&self) -> u16 {
        self.notify.flags
    }

    /// The events reported since the last call, in order.
    pub fn take_events(&mut self) -> Vec<KeyEvent> {
        std::mem::take(&mut self.notify.events)
    }

    /// Drops the events reported since the last call (a step of a composed command whose
    /// events the composition reports itself).
    pub fn discard_events(&mut self) {
        self.notify.events.clear();
    }
}
