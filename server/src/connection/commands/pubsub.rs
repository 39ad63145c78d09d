//! SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH and PUBSUB (Redis 7.0
//! `pubsub.c`) across shards: subscriptions live in the registry of the connection's shard
//! ([`crate::pubsub`]); PUBLISH and PUBSUB reach every shard's registry over the
//! cross-shard mesh and merge the answers.

use std::collections::BTreeSet;
use std::rc::Rc;

use bytes::Bytes;

use crate::connection::pipeline::Pipeline;
use crate::connection::session::Session;
use crate::forward::await_reply;
use crate::pubsub::{Kind, Subscriptions};
use crate::resp::Frame;
use crate::shard::Shard;

/// SUBSCRIBE / UNSUBSCRIBE / PSUBSCRIBE / PUNSUBSCRIBE (`name`, arity checked): one
/// confirmation per channel or pattern into `pipeline`, sent even under CLIENT REPLY OFF
/// (Redis 7.0 `subscribeCommand`, `unsubscribeCommand`, `psubscribeCommand`,
/// `punsubscribeCommand`).
pub fn subscription(
    shard: &Shard,
    session: &mut Session,
    name: &str,
    args: &[Bytes],
    pipeline: &mut Pipeline,
) {
    let (kind, subscribe) = match name {
        "subscribe" => (Kind::Channel, true),
        "psubscribe" => (Kind::Pattern, true),
        "unsubscribe" => (Kind::Channel, false),
        _ => (Kind::Pattern, false),
    };
    let id = session.id;
    let names = &args[1..];
    let replies = match (&mut session.pubsub, subscribe) {
        (subs, true) => {
            subs.get_or_insert_with(Box::default)
                .subscribe(&shard.pubsub, id, kind, names)
        }
        (Some(subs), false) => subs.unsubscribe(&shard.pubsub, id, kind, names),
        // Never subscribed: the replies without creating a mailbox.
        (None, false) => Subscriptions::default().unsubscribe(&shard.pubsub, id, kind, names),
    };
    for reply in replies {
        pipeline.push(session.protocol, reply);
    }
}

/// RESET and the connection's end: leaves every channel and pattern, without replies
/// (Redis 7.0 `clearClientConnectionState`, `freeClient`).
pub fn leave_all(shard: &Shard, session: &mut Session) {
    if let Some(subs) = &mut session.pubsub {
        subs.leave_all(&shard.pubsub, session.id);
    }
}

/// PING while subscribed in RESP2: `["pong", message or ""]` (Redis 7.0 `pingCommand`).
pub fn subscribed_ping(args: &[Bytes]) -> Frame {
    Frame::Array(vec![
        Frame::bulk_static(b"pong"),
        Frame::Bulk(args.get(1).cloned().unwrap_or_default()),
    ])
}

/// PUBLISH channel message: delivers on this shard at once and on every other shard through
/// one job each, queued in order after this connection's earlier ones (so one publisher's
/// messages arrive in order everywhere); the reply, the number of deliveries on all shards,
/// follows once every shard has answered (Redis 7.0 `publishCommand`). A publisher subscribed
/// to the channel gets its own message before the reply, as from Redis (not inside EXEC,
/// whose reply array it would split).
pub async fn publish(
    shard: &Rc<Shard>,
    session: &Session,
    args: &[Bytes],
    pipeline: &mut Pipeline,
) {
    let protocol = session.protocol;
    let (channel, message) = (&args[1], &args[2]);
    let local = shard.pubsub.publish(channel, message) as i64;
    if let Some(subs) = session
        .pubsub
        .as_ref()
        .filter(|_| session.txn_scope.is_none())
    {
        let mut own = Vec::new();
        subs.mailbox.take_into(&mut own);
        for frame in own {
            pipeline.push(protocol, frame);
        }
    }
    if shard.nr_shards == 1 {
        pipeline.ready(protocol, Frame::Integer(local));
        return;
    }
    let mut answers = Vec::with_capacity(shard.nr_shards - 1);
    for peer in (0..shard.nr_shards).filter(|&p| p != shard.id) {
        let (channel, message) = (channel.clone(), message.clone());
        answers.push(
            shard
                .peers
                .submit_stats_to(
                    peer,
                    Box::new(move |s: &Shard| {
                        Frame::Integer(s.pubsub.publish(&channel, &message) as i64)
                    }),
                )
                .await,
        );
    }
    pipeline.later(
        protocol,
        Box::pin(async move {
            let mut total = local;
            for answer in answers {
                // A stopped shard (shutdown) delivered nothing.
                if let Frame::Integer(n) = await_reply(answer).await {
                    total += n;
                }
            }
            Frame::Integer(total)
        }),
    )
}

/// Runs `job` on every shard (here directly, elsewhere over the mesh) and returns the
/// answers, this shard's first.
async fn every_shard(
    shard: &Rc<Shard>,
    job: impl Fn(&Shard) -> Frame + Send + Clone + 'static,
) -> Vec<Frame> {
    let mut pending = Vec::with_capacity(shard.nr_shards.saturating_sub(1));
    for peer in (0..shard.nr_shards).filter(|&p| p != shard.id) {
        let job = job.clone();
        pending.push(
            shard
                .peers
                .submit_stats_to(peer, Box::new(move |s: &Shard| job(s)))
                .await,
        );
    }
    let mut answers = vec![job(shard)];
    for receiver in pending {
        answers.push(await_reply(receiver).await);
    }
    answers
}

/// The bulk strings of an array answer.
fn names(frame: Frame) -> impl Iterator<Item = Bytes> {
    let items = match frame {
        Frame::Array(items) => items,
        _ => Vec::new(),
    };
    items.into_iter().filter_map(|f| match f {
        Frame::Bulk(b) => Some(b),
        _ => None,
    })
}

const HELP: &[&str] = &[
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Prints this help.",
];

/// PUBSUB CHANNELS [pattern] | NUMSUB [channel …] | NUMPAT | SHARDCHANNELS | SHARDNUMSUB |
/// HELP, merged over every shard's registry (Redis 7.0 `pubsubCommand`). Shard channels
/// (SSUBSCRIBE) are not served, so SHARDCHANNELS is empty and SHARDNUMSUB counts 0.
pub async fn pubsub(shard: &Rc<Shard>, args: &[Bytes]) -> Frame {
    let sub = args[1].to_ascii_uppercase();
    let wrong_arity = |name: &str| {
        Frame::error(format!(
            "ERR wrong number of arguments for 'pubsub|{name}' command"
        ))
    };
    match sub.as_slice() {
        b"HELP" if args.len() != 2 => wrong_arity("help"),
        b"HELP" => Frame::Array(HELP.iter().map(|s| Frame::Simple((*s).into())).collect()),
        b"CHANNELS" | b"SHARDCHANNELS" if args.len() > 3 => Frame::error(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
            String::from_utf8_lossy(&args[1])
        )),
        b"CHANNELS" => {
            let pattern = args.get(2).cloned();
            let answers = every_shard(shard, move |s: &Shard| {
                Frame::bulk_array(s.pubsub.channels(pattern.as_deref()))
            })
            .await;
            let union: BTreeSet<Bytes> = answers.into_iter().flat_map(names).collect();
            Frame::bulk_array(union)
        }
        b"SHARDCHANNELS" => Frame::Array(Vec::new()),
        b"NUMSUB" => {
            let channels: Vec<Bytes> = args[2..].to_vec();
            let asked = channels.clone();
            let answers = every_shard(shard, move |s: &Shard| {
                Frame::Array(
                    asked
                        .iter()
                        .map(|c| Frame::Integer(s.pubsub.numsub(c) as i64))
                        .collect(),
                )
            })
            .await;
            let mut totals = vec![0i64; channels.len()];
            for answer in answers {
                if let Frame::Array(counts) = answer {
                    for (total, count) in totals.iter_mut().zip(counts) {
                        if let Frame::Integer(n) = count {
                            *total += n;
                        }
                    }
                }
            }
            counted(channels, totals)
        }
        b"SHARDNUMSUB" => {
            let channels = args[2..].to_vec();
            let zeros = vec![0; channels.len()];
            counted(channels, zeros)
        }
        b"NUMPAT" if args.len() != 2 => wrong_arity("numpat"),
        b"NUMPAT" => {
            let answers =
                every_shard(shard, |s: &Shard| Frame::bulk_array(s.pubsub.patterns())).await;
            let union: BTreeSet<Bytes> = answers.into_iter().flat_map(names).collect();
            Frame::Integer(union.len() as i64)
        }
        _ => Frame::error(format!(
            "ERR unknown subcommand '{}'. Try PUBSUB HELP.",
            String::from_utf8_lossy(&args[1])
        )),
    }
}

/// `[channel, count, …]` as a flat array (Redis replies NUMSUB so in RESP2 and RESP3).
fn counted(channels: Vec<Bytes>, counts: Vec<i64>) -> Frame {
    Frame::Array(
        channels
            .into_iter()
            .zip(counts)
            .flat_map(|(c, n)| [Frame::Bulk(c), Frame::Integer(n)])
            .collect(),
    )
}

/// Redis's INFO `pubsub_channels` and `pubsub_patterns`: distinct channels and patterns with
/// a subscriber on any shard.
pub async fn counts(shard: &Rc<Shard>) -> (usize, usize) {
    let answers = every_shard(shard, |s: &Shard| {
        Frame::Array(vec![
            Frame::bulk_array(s.pubsub.channels(None)),
            Frame::bulk_array(s.pubsub.patterns()),
        ])
    })
    .await;
    let (mut channels, mut patterns) = (BTreeSet::new(), BTreeSet::new());
    for answer in answers {
        if let Frame::Array(mut parts) = answer {
            if parts.len() == 2 {
                patterns.extend(names(parts.remove(1)));
                channels.extend(names(parts.remove(0)));
            }
        }
    }
    (channels.len(), patterns.len())
}
