//! The connection side of BLPOP, BRPOP, BLMPOP, BLMOVE and BRPOPLPUSH (Redis 7.0 `t_list.c`
//! `blockingPopGenericCommand`, `blmoveGenericCommand`, `lmpopGenericCommand`) and of
//! BZPOPMIN, BZPOPMAX and BZMPOP (`t_zset.c` `blockingGenericZpopCommand`,
//! `zmpopGenericCommand`): parse, try
//! the non-blocking form, then block ([`crate::blocking`]) unless inside EXEC, where the
//! timeout reply comes at once (Redis's `CLIENT_DENY_BLOCKING`).

use std::rc::Rc;
use std::time::Instant;

use bytes::Bytes;

use crate::blocking::op::BlockOp;
use crate::blocking::{self, timeout, BlockedWait};
use crate::cmd::list_moves::{count_option, side};
use crate::cmd::reply::syntax_error;
use crate::connection::session::Session;
use crate::resp::Frame;
use crate::shard::Shard;

/// Whether `name` is a blocking list or sorted-set command.
pub fn serves(name: &str) -> bool {
    matches!(
        name,
        "blpop" | "brpop" | "blmpop" | "blmove" | "brpoplpush" | "bzpopmin" | "bzpopmax" | "bzmpop"
    )
}

/// A parsed blocking command.
struct Parsed {
    keys: Vec<Bytes>,
    op: BlockOp,
    /// `None`: forever.
    wait: Option<std::time::Duration>,
    timeout_reply: Frame,
}

/// Parses `args` (arity checked) in Redis's order of checks.
fn parse(name: &str, args: &[Bytes]) -> Result<Parsed, Frame> {
    match name {
        "blpop" | "brpop" => {
            let last = args.len() - 1;
            let wait = timeout::parse(&args[last])?;
            Ok(Parsed {
                keys: args[1..last].to_vec(),
                op: BlockOp::Pop {
                    left: name == "blpop",
                },
                wait,
                timeout_reply: Frame::NullArray,
            })
        }
        "brpoplpush" => Ok(Parsed {
            wait: timeout::parse(&args[3])?,
            keys: vec![args[1].clone()],
            op: BlockOp::Move {
                dst: args[2].clone(),
                from_left: false,
                to_left: true,
            },
            timeout_reply: Frame::NullArray,
        }),
        "blmove" => {
            let from_left = side(&args[3])?;
            let to_left = side(&args[4])?;
            Ok(Parsed {
                wait: timeout::parse(&args[5])?,
                keys: vec![args[1].clone()],
                op: BlockOp::Move {
                    dst: args[2].clone(),
                    from_left,
                    to_left,
                },
                timeout_reply: Frame::NullArray,
            })
        }
        "bzpopmin" | "bzpopmax" => {
            let last = args.len() - 1;
            let wait = timeout::parse(&args[last])?;
            Ok(Parsed {
                keys: args[1..last].to_vec(),
                op: BlockOp::ZPop {
                    max: name == "bzpopmax",
                },
                wait,
                timeout_reply: Frame::NullArray,
            })
        }
        "bzmpop" => parse_bzmpop(args),
        _ => parse_blmpop(args),
    }
}

/// `BZMPOP timeout numkeys key… MIN|MAX [COUNT count]`: numkeys, MIN|MAX and COUNT are
/// checked before the timeout, as `zmpopGenericCommand` does (`ERR numkeys should be greater
/// than 0`, `ERR syntax error`, `ERR count should be greater than 0`).
fn parse_bzmpop(args: &[Bytes]) -> Result<Parsed, Frame> {
    let numkeys = crate::cmd::set_algebra::numkeys(args, 2)?;
    let where_at = numkeys.saturating_add(3);
    if where_at >= args.len() {
        return Err(syntax_error());
    }
    let (max, count) = crate::cmd::zset_multi::mpop_options(&args[where_at..])?;
    Ok(Parsed {
        wait: timeout::parse(&args[1])?,
        keys: args[3..where_at].to_vec(),
        op: BlockOp::ZMPop { max, count },
        timeout_reply: Frame::NullArray,
    })
}

/// `BLMPOP timeout numkeys key… LEFT|RIGHT [COUNT count]`: numkeys, side and COUNT are
/// checked before the timeout, as `lmpopGenericCommand` does.
fn parse_blmpop(args: &[Bytes]) -> Result<Parsed, Frame> {
    let numkeys = crate::cmd::set_algebra::numkeys(args, 2)?;
    let where_at = numkeys.saturating_add(3);
    if where_at >= args.len() {
        return Err(syntax_error());
    }
    let left = side(&args[where_at])?;
    let count = count_option(&args[where_at + 1..])?;
    Ok(Parsed {
        wait: timeout::parse(&args[1])?,
        keys: args[3..where_at].to_vec(),
        op: BlockOp::MPop { left, count },
        timeout_reply: Frame::NullArray,
    })
}

/// What a blocking command did at once.
pub enum Start {
    /// Its reply (data, an error, or the timeout reply inside EXEC).
    Reply(Frame),
    /// The connection now waits.
    Blocked(BlockedWait),
}

/// Runs blocking command `name` (arity checked): its reply when it need not wait, else the
/// wait it registered. `deadline` is the wait's end when resuming after a hand-off
/// (`Some(None)`: forever); `None` computes it from the timeout argument.
pub async fn start(
    shard: &Rc<Shard>,
    session: &Session,
    name: &str,
    args: Vec<Bytes>,
    deadline: Option<Option<Instant>>,
) -> Start {
    let since = Instant::now();
    let parsed = match parse(name, &args) {
        Ok(parsed) => parsed,
        Err(err) => return Start::Reply(err),
    };
    let (db, scope) = (session.db, session.txn_scope);
    let deadline = deadline.unwrap_or_else(|| {
        parsed
            .wait
            .and_then(|wait| Instant::now().checked_add(wait))
    });
    if scope.is_none() && one_owner(shard, &parsed) {
        let Parsed {
            keys,
            op,
            timeout_reply,
            ..
        } = parsed;
        return match blocking::try_or_block(shard, session.id, db, keys, op, timeout_reply, since)
            .await
        {
            Ok(reply) => Start::Reply(reply),
            Err((id, receiver)) => Start::Blocked(BlockedWait {
                id,
                receiver,
                deadline,
                args,
            }),
        };
    }
    if let Some(reply) = try_now(shard, db, scope, &parsed).await {
        return Start::Reply(reply);
    }
    if scope.is_some() {
        // Redis 7.0.15: inside MULTI an empty BLMOVE/BRPOPLPUSH answers a null bulk
        // (`blmoveGenericCommand`'s `addReplyNull`), while a timed-out one answers a null
        // array like every blocked list client (`replyToBlockedClientTimedOut`).
        return Start::Reply(match parsed.op {
            BlockOp::Move { .. } => Frame::Null,
            _ => parsed.timeout_reply,
        });
    }
    let (id, receiver) = blocking::block(
        shard,
        session.id,
        db,
        &parsed.keys,
        parsed.op,
        parsed.timeout_reply,
        since,
    )
    .await;
    Start::Blocked(BlockedWait {
        id,
        receiver,
        deadline,
        args,
    })
}

/// Whether every key (and a move's destination) has one owner shard: the attempt and the
/// queueing then run as one job there.
fn one_owner(shard: &Shard, parsed: &Parsed) -> bool {
    let Some(first) = parsed.keys.first() else {
        return false;
    };
    let owner = shard.owner_of(first);
    let dst_too = match &parsed.op {
        BlockOp::Move { dst, .. } => shard.owner_of(dst) == owner,
        _ => true,
    };
    dst_too && parsed.keys.iter().all(|k| shard.owner_of(k) == owner)
}

/// The non-blocking attempt, keys in order: the reply of the first key with data (or its
/// WRONGTYPE), `None` when none has any.
async fn try_now(
    shard: &Rc<Shard>,
    db: usize,
    scope: Option<crate::forward::TxnId>,
    parsed: &Parsed,
) -> Option<Frame> {
    if let BlockOp::Move {
        dst,
        from_left,
        to_left,
    } = &parsed.op
    {
        let side = |left: bool| Bytes::from_static(if left { b"LEFT" } else { b"RIGHT" });
        let args = vec![
            Bytes::from_static(b"LMOVE"),
            parsed.keys[0].clone(),
            dst.clone(),
            side(*from_left),
            side(*to_left),
        ];
        let reply = super::composed::execute(shard, db, scope, "lmove", args).await;
        return (reply != Frame::Null).then_some(reply);
    }
    // Consecutive keys with one owner are tried in one job.
    let mut at = 0;
    while at < parsed.keys.len() {
        let owner = shard.owner_of(&parsed.keys[at]);
        let mut end = at + 1;
        while end < parsed.keys.len() && shard.owner_of(&parsed.keys[end]) == owner {
            end += 1;
        }
        let keys = parsed.keys[at..end].to_vec();
        let op = parsed.op.clone();
        let reply = shard
            .run_on_in(
                owner,
                scope,
                Box::new(move |s: &Shard| {
                    for key in &keys {
                        let reply = op.serve(s, db, key);
                        if reply != Frame::Null {
                            return reply;
                        }
                    }
                    Frame::Null
                }),
            )
            .await;
        if reply != Frame::Null {
            return Some(reply);
        }
        at = end;
    }
    None
}
