//! Keyspace notifications (Redis 7.0 `notify.c`, `notify-keyspace-events`): the classes a
//! configuration string selects ([`flags`]), and the publishing of what a command did
//! ([`publish`]).
//!
//! Where events come from: a command handler reports each event on its [`crate::keyspace::Db`]
//! with one call, at the place Redis calls `notifyKeyspaceEvent`:
//! `db.notify(flags::LIST, "lpush", key)`. The database itself reports what happens to keys
//! below the commands: `expired` (a key found expired, lazily or by the sweep), `new` (a key
//! added), `evicted`, `keymiss`, and the `del` of a collection a command emptied
//! ([`crate::keyspace::Db::remove_if_empty`]). Each report costs one test of the database's
//! flags when the class is off; with `notify-keyspace-events` empty (the default) every class
//! is off.
//!
//! Adding a command's events is one line per Redis call, in its handler:
//! `db.notify(flags::ZSET, "zadd", &args[1]);` (after the change, before
//! [`crate::keyspace::Db::remove_if_empty`], which adds the `del` of an emptied key). A command
//! composed of steps on several shards runs its writing steps with
//! [`crate::shard::Shard::execute_step`] (their own events dropped) and, once it succeeded,
//! publishes Redis's events with one [`publish::composed`] call.
//!
//! Where events go: after each command the shard that ran it (the key's owner) publishes the
//! events the command left, in order, on `__keyspace@<db>__:<key>` and
//! `__keyevent@<db>__:<event>`: at once to its own subscribers and, as one job per other
//! shard, over the cross-shard mesh (FIFO per pair of shards), so every subscriber gets one
//! owner shard's events in the order of its commands.

pub mod flags;
pub mod publish;

pub use flags::{parse, render};
