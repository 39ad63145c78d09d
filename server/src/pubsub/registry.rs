//! One shard's Pub/Sub registry: the channel and pattern subscriptions of this shard's own
//! connections (Redis 7.0 `server.pubsub_channels` / `server.pubsub_patterns`, one per
//! shard as in Seastar's `sharded<T>`). A PUBLISH reaches every shard's registry
//! ([`super::publish`]); PUBSUB CHANNELS / NUMSUB / NUMPAT merge them.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use bytes::Bytes;

use super::mailbox::Mailbox;
use crate::keyspace::glob::string_match;
use crate::resp::Frame;

/// One subscribed connection as a registry entry holds it.
#[derive(Debug, Clone)]
struct Subscriber {
    /// CLIENT ID.
    id: u64,
    mailbox: Rc<Mailbox>,
}

/// A shard's subscriptions: channel → subscribers, pattern → subscribers, each list in
/// subscription order (Redis delivers in that order).
#[derive(Debug, Default)]
pub struct Registry {
    channels: RefCell<HashMap<Bytes, Vec<Subscriber>>>,
    /// Few in practice, each matched against every published channel: a vector.
    patterns: RefCell<Vec<(Bytes, Vec<Subscriber>)>>,
}

/// Encoded size of a delivery of `parts` (the bulk strings and their headers), for the
/// output-buffer accounting.
fn delivery_size(parts: &[&[u8]]) -> usize {
    parts.iter().map(|p| p.len() + 16).sum::<usize>() + 4
}

impl Registry {
    /// Adds connection `id` (mailbox `mailbox`) to `channel`'s subscribers.
    pub fn subscribe(&self, channel: Bytes, id: u64, mailbox: &Rc<Mailbox>) {
        self.channels
            .borrow_mut()
            .entry(channel)
            .or_default()
            .push(Subscriber {
                id,
                mailbox: Rc::clone(mailbox),
            });
    }

    /// Removes connection `id` from `channel`'s subscribers.
    pub fn unsubscribe(&self, channel: &[u8], id: u64) {
        let mut channels = self.channels.borrow_mut();
        if let Some(list) = channels.get_mut(channel) {
            list.retain(|s| s.id != id);
            if list.is_empty() {
                channels.remove(channel);
            }
        }
    }

    /// Adds connection `id` to `pattern`'s subscribers.
    pub fn psubscribe(&self, pattern: Bytes, id: u64, mailbox: &Rc<Mailbox>) {
        let subscriber = Subscriber {
            id,
            mailbox: Rc::clone(mailbox),
        };
        let mut patterns = self.patterns.borrow_mut();
        match patterns.iter_mut().find(|(p, _)| *p == pattern) {
            Some((_, list)) => list.push(subscriber),
            None => patterns.push((pattern, vec![subscriber])),
        }
    }

    /// Removes connection `id` from `pattern`'s subscribers.
    pub fn punsubscribe(&self, pattern: &[u8], id: u64) {
        let mut patterns = self.patterns.borrow_mut();
        if let Some(at) = patterns.iter().position(|(p, _)| p == pattern) {
            let list = &mut patterns[at].1;
            list.retain(|s| s.id != id);
            if list.is_empty() {
                patterns.remove(at);
            }
        }
    }

    /// Delivers `message` on `channel` to this shard's subscribers: a `message` to each
    /// subscriber of the channel, then a `pmessage` to each subscriber of each matching
    /// pattern (Redis 7.0 pubsub.c `pubsubPublishMessage`). Returns the number of deliveries.
    pub fn publish(&self, channel: &Bytes, message: &Bytes) -> u64 {
        let mut receivers = 0;
        if let Some(list) = self.channels.borrow().get(channel) {
            let size = delivery_size(&[b"message", channel, message]);
            for s in list {
                let frame = Frame::Push(vec![
                    Frame::bulk_static(b"message"),
                    Frame::Bulk(channel.clone()),
                    Frame::Bulk(message.clone()),
                ]);
                s.mailbox.deliver(frame, size);
                receivers += 1;
            }
        }
        for (pattern, list) in self.patterns.borrow().iter() {
            if !string_match(pattern, channel, false) {
                continue;
            }
            let size = delivery_size(&[b"pmessage", pattern, channel, message]);
            for s in list {
                let frame = Frame::Push(vec![
                    Frame::bulk_static(b"pmessage"),
                    Frame::Bulk(pattern.clone()),
                    Frame::Bulk(channel.clone()),
                    Frame::Bulk(message.clone()),
                ]);
                s.mailbox.deliver(frame, size);
                receivers += 1;
            }
        }
        receivers
    }

    /// This shard's channels with at least one subscriber, those matching `pattern` when
    /// given (PUBSUB CHANNELS).
    pub fn channels(&self, pattern: Option<&[u8]>) -> Vec<Bytes> {
        self.channels
            .borrow()
            .keys()
            .filter(|c| pattern.is_none_or(|p| string_match(p, c, false)))
            .cloned()
            .collect()
    }

    /// Subscribers of `channel` on this shard (PUBSUB NUMSUB).
    pub fn numsub(&self, channel: &[u8]) -> u64 {
        self.channels
            .borrow()
            .get(channel)
            .map_or(0, |list| list.len() as u64)
    }

    /// This shard's patterns with at least one subscriber (PUBSUB NUMPAT counts their union).
    pub fn patterns(&self) -> Vec<Bytes> {
        self.patterns
            .borrow()
            .iter()
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// Channels with subscribers on this shard, patterns with subscribers on this shard.
    pub fn counts(&self) -> (usize, usize) {
        (self.channels.borrow().len(), self.patterns.borrow().len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn taken(mailbox: &Mailbox) -> Vec<Frame> {
        let mut out = Vec::new();
        mailbox.take_into(&mut out);
        out
    }

    #[test]
    fn channel_and_pattern_deliveries_in_order() {
        let registry = Registry::default();
        let one = Rc::new(Mailbox::default());
        let two = Rc::new(Mailbox::default());
        registry.subscribe(b("foo.bar"), 1, &one);
        registry.psubscribe(b("foo.*"), 1, &one);
        registry.psubscribe(b("foo.*"), 2, &two);
        registry.psubscribe(b("bar.*"), 2, &two);
        assert_eq!(registry.publish(&b("foo.bar"), &b("hi")), 3);
        assert_eq!(registry.publish(&b("foo1"), &b("no")), 0);
        assert_eq!(registry.publish(&b("bar.x"), &b("yo")), 1);
        assert_eq!(
            taken(&one),
            vec![
                Frame::Push(vec![
                    Frame::bulk(b"message"),
                    Frame::bulk(b"foo.bar"),
                    Frame::bulk(b"hi")
                ]),
                Frame::Push(vec![
                    Frame::bulk(b"pmessage"),
                    Frame::bulk(b"foo.*"),
                    Frame::bulk(b"foo.bar"),
                    Frame::bulk(b"hi")
                ]),
            ]
        );
        assert_eq!(taken(&two).len(), 2);
        assert_eq!(registry.counts(), (1, 2));
        assert_eq!(registry.numsub(b"foo.bar"), 1);
        assert_eq!(registry.numsub(b"nope"), 0);
        assert_eq!(registry.channels(Some(b"f*")), vec![b("foo.bar")]);
        assert!(registry.channels(Some(b"x*")).is_empty());

        registry.unsubscribe(b"foo.bar", 1);
        registry.punsubscribe(b"foo.*", 1);
        registry.punsubscribe(b"foo.*", 2);
        assert_eq!(registry.counts(), (0, 1));
        assert_eq!(registry.patterns(), vec![b("bar.*")]);
        assert_eq!(registry.publish(&b("foo.bar"), &b("hi")), 0);
        // Unknown names are no error.
        registry.unsubscribe(b"zzz", 1);
        registry.punsubscribe(b"zzz", 1);
    }
}
