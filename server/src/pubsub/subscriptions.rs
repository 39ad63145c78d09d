//! One connection's subscriptions (Redis 7.0 `client->pubsub_channels` /
//! `client->pubsub_patterns`) and the confirmation replies of SUBSCRIBE, UNSUBSCRIBE,
//! PSUBSCRIBE and PUNSUBSCRIBE (Redis 7.0 pubsub.c `addReplyPubsubSubscribed`,
//! `addReplyPubsubUnsubscribed`, …).

use std::collections::HashSet;
use std::rc::Rc;

use bytes::Bytes;

use super::mailbox::Mailbox;
use super::registry::Registry;
use crate::resp::Frame;

/// Channel or pattern subscriptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// SUBSCRIBE / UNSUBSCRIBE.
    Channel,
    /// PSUBSCRIBE / PUNSUBSCRIBE.
    Pattern,
}

/// What one connection is subscribed to, and its mailbox. Created at its first subscription
/// and kept (with its mailbox) for the connection's life.
#[derive(Debug, Default)]
pub struct Subscriptions {
    /// Deliveries for this connection.
    pub mailbox: Rc<Mailbox>,
    channels: HashSet<Bytes>,
    patterns: HashSet<Bytes>,
}

/// A confirmation `[kind, name, count]`: an array in RESP2, a push in RESP3; `name` `None`
/// is a null (UNSUBSCRIBE with nothing to leave).
fn confirmation(kind: &'static [u8], name: Option<Bytes>, count: usize) -> Frame {
    Frame::Push(vec![
        Frame::bulk_static(kind),
        name.map_or(Frame::Null, Frame::Bulk),
        Frame::Integer(count as i64),
    ])
}

impl Subscriptions {
    /// Channels plus patterns (Redis 7.0 `clientSubscriptionsCount`): the count in each
    /// confirmation; the connection is in Pub/Sub mode while it is not 0.
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// Channels subscribed (CLIENT LIST `sub`).
    pub fn channel_count(&self) -> usize {
        self.channels.len()
    }

    /// Patterns subscribed (CLIENT LIST `psub`).
    pub fn pattern_count(&self) -> usize {
        self.patterns.len()
    }

    /// SUBSCRIBE / PSUBSCRIBE `names` for connection `id`: registers each new one in
    /// `registry`; one confirmation per name, in order (Redis 7.0 `pubsubSubscribeChannel`,
    /// `pubsubSubscribePattern`).
    pub fn subscribe(
        &mut self,
        registry: &Registry,
        id: u64,
        kind: Kind,
        names: &[Bytes],
    ) -> Vec<Frame> {
        let mut replies = Vec::with_capacity(names.len());
        for name in names {
            let (set, word): (_, &'static [u8]) = match kind {
                Kind::Channel => (&mut self.channels, b"subscribe"),
                Kind::Pattern => (&mut self.patterns, b"psubscribe"),
            };
            if set.insert(name.clone()) {
                match kind {
                    Kind::Channel => registry.subscribe(name.clone(), id, &self.mailbox),
                    Kind::Pattern => registry.psubscribe(name.clone(), id, &self.mailbox),
                }
            }
            replies.push(confirmation(word, Some(name.clone()), self.count()));
        }
        replies
    }

    /// UNSUBSCRIBE / PUNSUBSCRIBE `names` for connection `id`, or every subscription of
    /// `kind` when `names` is empty: one confirmation per name (also for names not
    /// subscribed), or, with nothing to leave, one with a null name (Redis 7.0
    /// `pubsubUnsubscribeAllChannels` / `pubsubUnsubscribeAllPatterns`).
    pub fn unsubscribe(
        &mut self,
        registry: &Registry,
        id: u64,
        kind: Kind,
        names: &[Bytes],
    ) -> Vec<Frame> {
        let word: &'static [u8] = match kind {
            Kind::Channel => b"unsubscribe",
            Kind::Pattern => b"punsubscribe",
        };
        let all: Vec<Bytes>;
        let names = if names.is_empty() {
            all = match kind {
                Kind::Channel => self.channels.iter().cloned().collect(),
                Kind::Pattern => self.patterns.iter().cloned().collect(),
            };
            if all.is_empty() {
                return vec![confirmation(word, None, self.count())];
            }
            &all[..]
        } else {
            names
        };
        let mut replies = Vec::with_capacity(names.len());
        for name in names {
            let removed = match kind {
                Kind::Channel => self.channels.remove(name),
                Kind::Pattern => self.patterns.remove(name),
            };
            if removed {
                match kind {
                    Kind::Channel => registry.unsubscribe(name, id),
                    Kind::Pattern => registry.punsubscribe(name, id),
                }
            }
            replies.push(confirmation(word, Some(name.clone()), self.count()));
        }
        replies
    }

    /// Leaves every channel and pattern without replies (RESET, and the connection's end).
    pub fn leave_all(&mut self, registry: &Registry, id: u64) {
        for channel in self.channels.drain() {
            registry.unsubscribe(&channel, id);
        }
        for pattern in self.patterns.drain() {
            registry.punsubscribe(&pattern, id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::Protocol;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn encoded(frames: &[Frame], protocol: Protocol) -> String {
        let mut out = bytes::BytesMut::new();
        for f in frames {
            f.encode(protocol, &mut out);
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn confirmations_count_channels_and_patterns() {
        let registry = Registry::default();
        let mut subs = Subscriptions::default();
        let replies = subs.subscribe(&registry, 7, Kind::Channel, &[b("a"), b("b"), b("a")]);
        assert_eq!(
            encoded(&replies, Protocol::Resp2),
            "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n\
             *3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n\
             *3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:2\r\n"
        );
        let replies = subs.subscribe(&registry, 7, Kind::Pattern, &[b("x*")]);
        assert_eq!(
            encoded(&replies, Protocol::Resp3),
            ">3\r\n$10\r\npsubscribe\r\n$2\r\nx*\r\n:3\r\n"
        );
        assert_eq!((subs.channel_count(), subs.pattern_count()), (2, 1));
        assert_eq!(registry.counts(), (2, 1));

        let replies = subs.unsubscribe(&registry, 7, Kind::Channel, &[b("zz"), b("a")]);
        assert_eq!(
            encoded(&replies, Protocol::Resp2),
            "*3\r\n$11\r\nunsubscribe\r\n$2\r\nzz\r\n:3\r\n\
             *3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:2\r\n"
        );
        let replies = subs.unsubscribe(&registry, 7, Kind::Channel, &[]);
        assert_eq!(
            encoded(&replies, Protocol::Resp2),
            "*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:1\r\n"
        );
        // Nothing left to leave: one reply with a null channel.
        let replies = subs.unsubscribe(&registry, 7, Kind::Channel, &[]);
        assert_eq!(
            encoded(&replies, Protocol::Resp2),
            "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:1\r\n"
        );
        assert_eq!(
            encoded(&replies, Protocol::Resp3),
            ">3\r\n$11\r\nunsubscribe\r\n_\r\n:1\r\n"
        );
        subs.leave_all(&registry, 7);
        assert_eq!(subs.count(), 0);
        assert_eq!(registry.counts(), (0, 0));
    }
}
