//! What a blocked command does once its key has data: the plain command it amounts to, run
//! on the key's owner shard and logged there as itself (Redis 7.0 `blocked.c`
//! `serveClientBlockedOnList`, which propagates the pop as `LPOP`/`RPOP`/`LMOVE`).
//!
//! A later blocking family (sorted sets' BZPOPMIN/BZPOPMAX/BZMPOP) adds a variant here with
//! its readiness test ([`BlockOp::ready`]: a non-empty zset), its owner-side step
//! ([`BlockOp::serve`]: ZPOPMIN/ZPOPMAX/ZMPOP on the key) and its undo; the queues, the
//! reservation handshake and the connection side need no change.

use bytes::Bytes;

use crate::keyspace::Value;
use crate::resp::Frame;
use crate::shard::Shard;

/// The step a blocked client waits to run on one of its keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockOp {
    /// BLPOP (`left`) / BRPOP: one element, replied as `[key, element]`.
    Pop {
        /// From the head.
        left: bool,
    },
    /// BLMPOP: up to `count` elements, replied as `[key, [element…]]`.
    MPop {
        /// From the head.
        left: bool,
        /// At most this many.
        count: usize,
    },
    /// BLMOVE / BRPOPLPUSH: one element moved to `dst`, replied as the element.
    Move {
        /// The destination list.
        dst: Bytes,
        /// Popped from the source's head.
        from_left: bool,
        /// Pushed onto the destination's head.
        to_left: bool,
    },
}

fn side(left: bool) -> Bytes {
    Bytes::from_static(if left { b"LEFT" } else { b"RIGHT" })
}

impl BlockOp {
    /// Whether `value` (the key's value, `None` when missing) lets this op run.
    pub fn ready(&self, value: Option<&Value>) -> bool {
        matches!(value, Some(Value::List(list)) if !list.is_empty())
    }

    /// Whether this op cannot run on the owner of its key alone (a move to a list another
    /// shard owns): the waiter's shard then runs the move itself ([`super::slots::Wakeup`]).
    pub fn needs_handoff(&self, owner: &Shard) -> bool {
        matches!(self, BlockOp::Move { dst, .. } if owner.owner_of(dst) != owner.id)
    }

    /// The plain command this op amounts to on `key`.
    pub fn command(&self, key: &Bytes) -> Vec<Bytes> {
        match self {
            BlockOp::Pop { left } => vec![
                Bytes::from_static(if *left { b"LPOP" } else { b"RPOP" }),
                key.clone(),
            ],
            BlockOp::MPop { left, count } => vec![
                Bytes::from_static(b"LMPOP"),
                Bytes::from_static(b"1"),
                key.clone(),
                side(*left),
                Bytes::from_static(b"COUNT"),
                Bytes::from(count.to_string()),
            ],
            BlockOp::Move {
                dst,
                from_left,
                to_left,
            } => vec![
                Bytes::from_static(b"LMOVE"),
                key.clone(),
                dst.clone(),
                side(*from_left),
                side(*to_left),
            ],
        }
    }

    /// Runs the op on `key` of database `db` on `owner` (the key's owner shard; for a move,
    /// also the destination's): the blocked command's reply, or `Frame::Null` when the key
    /// has nothing to give (missing). Errors (WRONGTYPE) are replies.
    pub fn serve(&self, owner: &Shard, db: usize, key: &Bytes) -> Frame {
        let reply = owner.execute_local(db, &self.command(key));
        match (self, reply) {
            (_, Frame::Null | Frame::NullArray) => Frame::Null,
            (BlockOp::Pop { .. }, Frame::Bulk(element)) => {
                Frame::Array(vec![Frame::Bulk(key.clone()), Frame::Bulk(element)])
            }
            (_, other) => other,
        }
    }

    /// The command that puts back what `reply` (this op's reply on `key`) took, for a waiter
    /// whose connection was gone when the reply reached it; `None` when nothing was taken.
    pub fn undo(&self, key: &Bytes, reply: &Frame) -> Option<Vec<Bytes>> {
        match (self, reply) {
            (BlockOp::Pop { left }, Frame::Array(parts)) => match parts.as_slice() {
                [_, Frame::Bulk(element)] => Some(vec![
                    Bytes::from_static(if *left { b"LPUSH" } else { b"RPUSH" }),
                    key.clone(),
                    element.clone(),
                ]),
                _ => None,
            },
            (BlockOp::MPop { left, .. }, Frame::Array(parts)) => match parts.as_slice() {
                [_, Frame::Array(elements)] if !elements.is_empty() => {
                    let mut cmd = vec![
                        Bytes::from_static(if *left { b"LPUSH" } else { b"RPUSH" }),
                        key.clone(),
                    ];
                    // Popped nearest-end first: pushed back farthest first.
                    for element in elements.iter().rev() {
                        if let Frame::Bulk(e) = element {
                            cmd.push(e.clone());
                        }
                    }
                    Some(cmd)
                }
                _ => None,
            },
            (
                BlockOp::Move {
                    dst,
                    from_left,
                    to_left,
                },
                Frame::Bulk(_),
            ) => Some(vec![
                Bytes::from_static(b"LMOVE"),
                dst.clone(),
                key.clone(),
                side(*to_left),
                side(*from_left),
            ]),
            _ => None,
        }
    }
}
