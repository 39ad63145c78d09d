//! Pub/Sub (Redis 7.0 `pubsub.c`) across shards, Seastar-style: each shard keeps a
//! [`Registry`] of its own connections' subscriptions; PUBLISH delivers on its shard and sends
//! one job to every other shard over the cross-shard mesh (FIFO per pair of shards, so the
//! messages of one publisher arrive in order everywhere), and replies with the sum of the
//! shards' deliveries. A subscribed connection receives its deliveries through its
//! [`Mailbox`], polled by its request loop only once it has subscribed.
//!
//! The commands themselves are in `connection/commands/pubsub.rs`.

mod mailbox;
mod registry;
mod subscriptions;

pub use mailbox::Mailbox;
pub use registry::Registry;
pub use subscriptions::{Kind, Subscriptions};
