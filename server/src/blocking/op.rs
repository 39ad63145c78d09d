//! What a blocked command does once its key has data: the plain command it amounts to, run
//! on the key's owner shard and logged there as itself (Redis 7.0 `blocked.c`
//! `serveClientBlockedOnList`, which propagates the pop as `LPOP`/`RPOP`/`LMOVE`).
//!
//! The sorted-set family (BZPOPMIN, BZPOPMAX, BZMPOP: Redis 7.0 `t_zset.c`
//! `blockingGenericZpopCommand`, `blocked.c` `serveClientBlockedOnSortedSet`) are the
//! [`BlockOp::ZPop`] and [`BlockOp::ZMPop`] variants: ready on a non-empty sorted set, served
//! as the ZPOPMIN / ZPOPMAX / `ZMPOP 1 key MIN|MAX COUNT n` Redis propagates, undone by a ZADD
//! of what was popped with its scores.

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
    /// BZPOPMIN (`max` false) / BZPOPMAX: one element, replied as `[key, member, score]`.
    ZPop {
        /// The highest score first.
        max: bool,
    },
    /// BZMPOP: up to `count` elements, replied as `[key, [[member, score]…]]`.
    ZMPop {
        /// The highest scores first.
        max: bool,
        /// At most this many.
        count: usize,
    },
}

fn min_max(max: bool) -> Bytes {
    Bytes::from_static(if max { b"MAX" } else { b"MIN" })
}

/// A score as ZADD reads it back exactly (shortest round-trip form, `inf` / `-inf`).
fn score_arg(score: f64) -> Bytes {
    Bytes::from(format!("{score}"))
}

/// The score of a reply part (a double, or its RESP2 text).
fn score_of(frame: &Frame) -> Option<Bytes> {
    match frame {
        Frame::Double(s) => Some(score_arg(*s)),
        Frame::Bulk(text) => Some(text.clone()),
        _ => None,
    }
}

fn side(left: bool) -> Bytes {
    Bytes::from_static(if left { b"LEFT" } else { b"RIGHT" })
}

impl BlockOp {
    /// Whether this op waits for a sorted set (else for a list).
    pub fn on_zset(&self) -> bool {
        matches!(self, BlockOp::ZPop { .. } | BlockOp::ZMPop { .. })
    }

    /// Whether `value` lets some blocking op run (a non-empty list or sorted set): a waiter
    /// of the other family than the value's is then passed over, as Redis's
    /// `serveClientsBlockedOnKey` skips clients blocked on another type.
    pub fn any_ready(value: Option<&Value>) -> bool {
        match value {
            Some(Value::List(list)) => !list.is_empty(),
            Some(Value::ZSet(zset)) => !zset.is_empty(),
            _ => false,
        }
    }

    /// Whether `value` (the key's value, `None` when missing) lets this op run.
    pub fn ready(&self, value: Option<&Value>) -> bool {
        match self {
            BlockOp::ZPop { .. } | BlockOp::ZMPop { .. } => {
                matches!(value, Some(Value::ZSet(zset)) if !zset.is_empty())
            }
            _ => matches!(value, Some(Value::List(list)) if !list.is_empty()),
        }
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
            BlockOp::ZPop { max } => vec![
                Bytes::from_static(if *max { b"ZPOPMAX" } else { b"ZPOPMIN" }),
                key.clone(),
            ],
            BlockOp::ZMPop { max, count } => vec![
                Bytes::from_static(b"ZMPOP"),
                Bytes::from_static(b"1"),
                key.clone(),
                min_max(*max),
                Bytes::from_static(b"COUNT"),
                Bytes::from(count.to_string()),
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
            // ZPOPMIN of a missing key: an empty array.
            (BlockOp::ZPop { .. }, Frame::Array(parts)) if parts.is_empty() => Frame::Null,
            (BlockOp::ZPop { .. }, Frame::Array(parts)) => {
                let mut reply = Vec::with_capacity(parts.len() + 1);
                reply.push(Frame::Bulk(key.clone()));
                reply.extend(parts);
                Frame::Array(reply)
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
            (BlockOp::ZPop { .. }, Frame::Array(parts)) => match parts.as_slice() {
                [_, Frame::Bulk(member), score] => Some(vec![
                    Bytes::from_static(b"ZADD"),
                    key.clone(),
                    score_of(score)?,
                    member.clone(),
                ]),
                _ => None,
            },
            (BlockOp::ZMPop { .. }, Frame::Array(parts)) => match parts.as_slice() {
                [_, Frame::Array(pairs)] if !pairs.is_empty() => {
                    let mut cmd = vec![Bytes::from_static(b"ZADD"), key.clone()];
                    for pair in pairs {
                        match pair {
                            Frame::Array(p) => match p.as_slice() {
                                [Frame::Bulk(member), score] => {
                                    cmd.push(score_of(score)?);
                                    cmd.push(member.clone());
                                }
                                _ => return None,
                            },
                            _ => return None,
                        }
                    }
                    Some(cmd)
                }
                _ => None,
            },
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::ZSet;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn line(cmd: &[Bytes]) -> String {
        cmd.iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn zset_ops_are_ready_on_a_non_empty_sorted_set_only() {
        let op = BlockOp::ZPop { max: false };
        let mut zset = ZSet::new();
        assert!(!op.ready(None));
        assert!(!op.ready(Some(&Value::ZSet(zset.clone()))));
        zset.insert(b("m"), 1.0);
        let full = Value::ZSet(zset);
        assert!(op.ready(Some(&full)));
        assert!(BlockOp::ZMPop {
            max: true,
            count: 2
        }
        .ready(Some(&full)));
        // A list op does not wake on a sorted set, nor a zset op on a list.
        assert!(!BlockOp::Pop { left: true }.ready(Some(&full)));
        let list = Value::List(std::iter::once(b("x")).collect());
        assert!(!op.ready(Some(&list)));
    }

    #[test]
    fn zset_ops_amount_to_the_commands_redis_propagates() {
        let key = b("k");
        assert_eq!(
            line(&BlockOp::ZPop { max: false }.command(&key)),
            "ZPOPMIN k"
        );
        assert_eq!(
            line(&BlockOp::ZPop { max: true }.command(&key)),
            "ZPOPMAX k"
        );
        assert_eq!(
            line(
                &BlockOp::ZMPop {
                    max: false,
                    count: 3
                }
                .command(&key)
            ),
            "ZMPOP 1 k MIN COUNT 3"
        );
        assert_eq!(
            line(
                &BlockOp::ZMPop {
                    max: true,
                    count: 1
                }
                .command(&key)
            ),
            "ZMPOP 1 k MAX COUNT 1"
        );
    }

    #[test]
    fn zset_undo_adds_back_with_the_same_scores() {
        let key = b("k");
        let reply = Frame::Array(vec![
            Frame::Bulk(key.clone()),
            Frame::Bulk(b("m")),
            Frame::Double(-2.5),
        ]);
        let undo = BlockOp::ZPop { max: true }.undo(&key, &reply);
        assert_eq!(undo.map(|c| line(&c)).as_deref(), Some("ZADD k -2.5 m"));
        let reply = Frame::Array(vec![
            Frame::Bulk(key.clone()),
            Frame::Array(vec![
                Frame::Array(vec![Frame::Bulk(b("a")), Frame::Double(f64::NEG_INFINITY)]),
                Frame::Array(vec![Frame::Bulk(b("b")), Frame::Double(0.1)]),
            ]),
        ]);
        let op = BlockOp::ZMPop {
            max: false,
            count: 2,
        };
        assert_eq!(
            op.undo(&key, &reply).map(|c| line(&c)).as_deref(),
            Some("ZADD k -inf a 0.1 b")
        );
        // Nothing taken, nothing to undo.
        assert_eq!(op.undo(&key, &Frame::NullArray), None);
        assert_eq!(
            BlockOp::ZPop { max: false }.undo(&key, &Frame::error("ERR x")),
            None
        );
    }
}
