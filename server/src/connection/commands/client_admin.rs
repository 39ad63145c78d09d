//! The CLIENT subcommands that reach every shard: LIST, KILL, PAUSE, UNPAUSE (Redis 7.0
//! networking.c). Each shard answers for its own connections
//! ([`crate::introspection::clients::ClientRegistry`]); the caller merges.

use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::connection::session::Session;
use crate::introspection::clients::{session_line, ClientFilter};
use crate::introspection::pause::PauseKind;
use crate::resp::Frame;
use crate::shard::Shard;

/// `CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id …]`: one line per connection of
/// every shard, by id.
pub async fn list(shard: &Rc<Shard>, session: &Session, args: &[Bytes]) -> Frame {
    let mut filter = ClientFilter::default();
    let mut rest = args;
    while let [option, tail @ ..] = rest {
        match option.to_ascii_lowercase().as_slice() {
            b"type" => {
                let [kind, tail @ ..] = tail else {
                    return Frame::error("ERR syntax error");
                };
                match client_type(kind) {
                    Ok(pubsub) => filter.pubsub = pubsub,
                    Err(err) => return err,
                }
                filter.none = filter.pubsub.is_none();
                rest = tail;
            }
            b"id" if !tail.is_empty() => {
                let mut ids = Vec::with_capacity(tail.len());
                for id in tail {
                    match parse_id(id) {
                        Some(id) => ids.push(id),
                        None => return Frame::error("ERR Invalid client ID"),
                    }
                }
                filter.ids = Some(ids);
                rest = &[];
            }
            _ => return Frame::error("ERR syntax error"),
        }
    }
    let own = filter.matches_session(session);
    filter.skip = Some(session.id);
    let replies = shard
        .run_stats_on_all(|| {
            let filter = filter.clone();
            Box::new(move |s: &Shard| {
                let lines = s.info.clients.lines(&filter);
                Frame::Array(
                    lines
                        .into_iter()
                        .flat_map(|(id, line)| {
                            [Frame::Integer(id as i64), Frame::Bulk(line.into())]
                        })
                        .collect(),
                )
            })
        })
        .await;
    let mut lines: Vec<(u64, Bytes)> = Vec::new();
    if own {
        lines.push((
            session.id,
            session_line(session, ("client", Some("list"))).into(),
        ));
    }
    for reply in replies {
        let Frame::Array(items) = reply else {
            continue;
        };
        for pair in items.chunks(2) {
            if let [Frame::Integer(id), Frame::Bulk(line)] = pair {
                lines.push((*id as u64, line.clone()));
            }
        }
    }
    lines.sort_by_key(|(id, _)| *id);
    let mut text = Vec::new();
    for (_, line) in lines {
        text.extend_from_slice(&line);
        text.push(b'\n');
    }
    Frame::Verbatim {
        format: *b"txt",
        text: Bytes::from(text),
    }
}

/// `Ok(Some(false))` for `normal`, `Ok(Some(true))` for `pubsub` (a connection with a
/// subscription), `Ok(None)` for the types no connection here has.
fn client_type(kind: &[u8]) -> Result<Option<bool>, Frame> {
    match kind.to_ascii_lowercase().as_slice() {
        b"normal" => Ok(Some(false)),
        b"pubsub" => Ok(Some(true)),
        b"master" | b"replica" | b"slave" => Ok(None),
        _ => Err(Frame::error(format!(
            "ERR Unknown client type '{}'",
            String::from_utf8_lossy(kind)
        ))),
    }
}

fn parse_id(text: &[u8]) -> Option<u64> {
    std::str::from_utf8(text)
        .ok()?
        .parse::<u64>()
        .ok()
        .filter(|&id| id > 0)
}

/// `CLIENT KILL ip:port` (→ OK or `No such client`) or `CLIENT KILL <filter> <value> …`
/// (→ how many were killed); `SKIPME yes` is the default of the new form.
pub async fn kill(shard: &Rc<Shard>, session: &Session, args: &[Bytes]) -> Frame {
    if let [addr] = args {
        let filter = ClientFilter {
            addr: Some(String::from_utf8_lossy(addr).into_owned()),
            ..ClientFilter::default()
        };
        return match kill_everywhere(shard, filter).await {
            0 => Frame::error("ERR No such client"),
            _ => Frame::ok(),
        };
    }
    if !args.len().is_multiple_of(2) {
        return Frame::error("ERR syntax error");
    }
    let mut filter = ClientFilter {
        skip: Some(session.id),
        ..ClientFilter::default()
    };
    for pair in args.chunks(2) {
        let (option, value) = (&pair[0], &pair[1]);
        let text = String::from_utf8_lossy(value).into_owned();
        match option.to_ascii_lowercase().as_slice() {
            b"id" => match parse_id(value) {
                Some(id) => filter.ids = Some(vec![id]),
                None => return Frame::error("ERR client-id should be greater than 0"),
            },
            b"type" => match client_type(value) {
                Ok(Some(pubsub)) => filter.pubsub = Some(pubsub),
                Ok(None) => filter.none = true,
                Err(err) => return err,
            },
            b"user" => {
                if shard.shared.users.load().get(value).is_none() {
                    return Frame::error(format!("ERR No such user '{text}'"));
                }
                filter.user = Some(text);
            }
            b"addr" => filter.addr = Some(text),
            b"laddr" => filter.laddr = Some(text),
            b"skipme" => match value.to_ascii_lowercase().as_slice() {
                b"yes" => filter.skip = Some(session.id),
                b"no" => filter.skip = None,
                _ => return Frame::error("ERR syntax error"),
            },
            _ => return Frame::error("ERR syntax error"),
        }
    }
    Frame::Integer(kill_everywhere(shard, filter).await as i64)
}

async fn kill_everywhere(shard: &Rc<Shard>, filter: ClientFilter) -> usize {
    let replies = shard
        .run_stats_on_all(|| {
            let filter = filter.clone();
            Box::new(move |s: &Shard| Frame::Integer(s.info.clients.kill(&filter) as i64))
        })
        .await;
    replies
        .iter()
        .map(|r| match r {
            Frame::Integer(n) => *n as usize,
            _ => 0,
        })
        .sum()
}

/// `CLIENT PAUSE timeout-ms [WRITE|ALL]` on every shard.
pub async fn pause(shard: &Rc<Shard>, args: &[Bytes]) -> Frame {
    let Some(timeout) = std::str::from_utf8(&args[0])
        .ok()
        .and_then(|t| t.parse::<i64>().ok())
    else {
        return Frame::error("ERR timeout is not an integer or out of range");
    };
    if timeout < 0 {
        return Frame::error("ERR timeout is negative");
    }
    let kind = match args.get(1).map(|m| m.to_ascii_lowercase()) {
        None => PauseKind::All,
        Some(m) if m == b"all" => PauseKind::All,
        Some(m) if m == b"write" => PauseKind::Write,
        Some(_) => return Frame::error("ERR CLIENT PAUSE mode must be WRITE or ALL"),
    };
    let now = Instant::now();
    // A timeout past what Instant can hold pauses for a century: until CLIENT UNPAUSE.
    let deadline = now
        .checked_add(Duration::from_millis(timeout as u64))
        .unwrap_or(now + Duration::from_secs(100 * 365 * 86_400));
    shard
        .run_stats_on_all(|| {
            Box::new(move |s: &Shard| {
                s.info.pause.pause(deadline, kind);
                Frame::ok()
            })
        })
        .await;
    Frame::ok()
}

/// CLIENT UNPAUSE on every shard.
pub async fn unpause(shard: &Rc<Shard>) -> Frame {
    shard
        .run_stats_on_all(|| {
            Box::new(|s: &Shard| {
                s.info.pause.unpause();
                Frame::ok()
            })
        })
        .await;
    Frame::ok()
}
