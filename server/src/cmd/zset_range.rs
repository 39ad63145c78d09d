//! Sorted set range commands: ZRANGE ZREVRANGE ZRANGEBYSCORE ZREVRANGEBYSCORE ZRANGEBYLEX
//! ZREVRANGEBYLEX and ZREMRANGEBYRANK ZREMRANGEBYSCORE ZREMRANGEBYLEX (Redis 7.0 `t_zset.c`
//! `zrangeGenericCommand`, `zremrangeGenericCommand`). The range parsing and selection are
//! shared with ZRANGESTORE.

use bytes::Bytes;

use super::reply::{int_arg, is_opt, syntax_error, wrong_type};
use super::zset::read;
use super::zset_args::{elements_reply, lex_range, score_range, LexRange, ScoreRange};
use crate::keyspace::{Db, Value, ZSet};
use crate::notify::flags;
use crate::resp::Frame;

/// How a range is given.
#[derive(Debug, Clone, PartialEq)]
pub enum RangeKind {
    /// By 0-based index, negative from the end (`start`, `end`).
    Rank(i64, i64),
    /// By score.
    Score(ScoreRange),
    /// By member (lexicographic).
    Lex(LexRange),
}

/// A parsed ZRANGE-family request.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeQuery {
    /// The range.
    pub kind: RangeKind,
    /// Descending order.
    pub rev: bool,
    /// LIMIT offset (0 without LIMIT); a negative offset selects nothing, as in Redis.
    pub offset: i64,
    /// LIMIT count (-1 without LIMIT); negative means all.
    pub limit: i64,
    /// WITHSCORES.
    pub withscores: bool,
}

/// What the command name fixes before the options (`ZRANGE_AUTO` / `ZRANGE_RANK` ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fixed {
    /// ZRANGE / ZRANGESTORE: BYSCORE, BYLEX and REV are options.
    Auto,
    /// ZREVRANGE (`rev`) or nothing else.
    Rank(bool),
    /// Z[REV]RANGEBYSCORE.
    Score(bool),
    /// Z[REV]RANGEBYLEX.
    Lex(bool),
}

/// Parses `min max [options]` as `zrangeGenericCommand` does (`args` starts at `min`).
/// `store` (ZRANGESTORE) refuses WITHSCORES. Errors in Redis's order: option syntax (and
/// LIMIT's integers), `ERR syntax error, LIMIT is only supported in combination with either
/// BYSCORE or BYLEX`, `ERR syntax error, WITHSCORES not supported in combination with BYLEX`,
/// then the range's own errors.
pub fn parse_range(args: &[Bytes], fixed: Fixed, store: bool) -> Result<RangeQuery, Frame> {
    let (mut by, mut rev) = match fixed {
        Fixed::Auto => (0, None),
        Fixed::Rank(r) => (1, Some(r)),
        Fixed::Score(r) => (2, Some(r)),
        Fixed::Lex(r) => (3, Some(r)),
    };
    let (mut offset, mut limit, mut withscores) = (0, -1, false);
    let mut j = 2;
    while j < args.len() {
        let opt = &args[j];
        let left = args.len() - j - 1;
        if !store && is_opt(opt, "withscores") {
            withscores = true;
        } else if is_opt(opt, "limit") && left >= 2 {
            offset = int_arg(&args[j + 1])?;
            limit = int_arg(&args[j + 2])?;
            j += 2;
        } else if rev.is_none() && is_opt(opt, "rev") {
            rev = Some(true);
        } else if by == 0 && is_opt(opt, "bylex") {
            by = 3;
        } else if by == 0 && is_opt(opt, "byscore") {
            by = 2;
        } else {
            return Err(syntax_error());
        }
        j += 1;
    }
    let rev = rev.unwrap_or(false);
    if by == 0 {
        by = 1;
    }
    if limit != -1 && by == 1 {
        return Err(Frame::error(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && by == 3 {
        return Err(Frame::error(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let (min, max) = if rev && by != 1 {
        (&args[1], &args[0])
    } else {
        (&args[0], &args[1])
    };
    let kind = match by {
        1 => RangeKind::Rank(int_arg(min)?, int_arg(max)?),
        2 => RangeKind::Score(score_range(min, max)?),
        _ => RangeKind::Lex(lex_range(min, max)?),
    };
    Ok(RangeQuery {
        kind,
        rev,
        offset,
        limit,
        withscores,
    })
}

/// The elements `query` selects from `zset`, in reply order. O(log n + selected).
pub fn select<'a>(zset: &'a ZSet, query: &RangeQuery) -> Vec<(&'a Bytes, f64)> {
    let len = zset.len() as i64;
    // (first rank visited in iteration order, how many at most, bound check)
    let (first, count): (Option<usize>, i64) = match &query.kind {
        RangeKind::Rank(start, end) => {
            let mut start = if *start < 0 { len + start } else { *start };
            let mut end = if *end < 0 { len + end } else { *end };
            start = start.max(0);
            if start > end || start >= len {
                return Vec::new();
            }
            end = end.min(len - 1);
            let first = if query.rev { len - 1 - start } else { start };
            (Some(first as usize), end - start + 1)
        }
        RangeKind::Score(range) => {
            let first = if query.rev {
                zset.last_rank_where(|s, _| range.below_max(s))
            } else {
                zset.first_rank_where(|s, _| range.above_min(s))
            };
            (first, -1)
        }
        RangeKind::Lex(range) => {
            let first = if query.rev {
                zset.last_rank_where(|_, m| range.below_max(m))
            } else {
                zset.first_rank_where(|_, m| range.above_min(m))
            };
            (first, -1)
        }
    };
    let Some(first) = first else {
        return Vec::new();
    };
    if query.offset < 0 {
        return Vec::new();
    }
    let offset = query.offset as u64;
    let first = if query.rev {
        match (first as u64).checked_sub(offset) {
            Some(f) => f as usize,
            None => return Vec::new(),
        }
    } else {
        match (first as u64)
            .checked_add(offset)
            .filter(|f| *f < len as u64)
        {
            Some(f) => f as usize,
            None => return Vec::new(),
        }
    };
    let take = if query.limit < 0 {
        usize::MAX
    } else {
        usize::try_from(query.limit).unwrap_or(usize::MAX)
    };
    let take = if count >= 0 {
        take.min(count as usize)
    } else {
        take
    };
    let in_range = |s: f64, m: &[u8]| match &query.kind {
        RangeKind::Rank(..) => true,
        RangeKind::Score(r) => r.above_min(s) && r.below_max(s),
        RangeKind::Lex(r) => r.above_min(m) && r.below_max(m),
    };
    zset.iter_from(first, query.rev)
        .take(take)
        .take_while(|(m, s)| in_range(*s, m))
        .collect()
}

fn range_generic(db: &mut Db, args: &[Bytes], now: u64, fixed: Fixed) -> Frame {
    let query = match parse_range(&args[2..], fixed, false) {
        Ok(q) => q,
        Err(e) => return e,
    };
    match read(db, &args[1], now) {
        Ok(Some(zset)) => elements_reply(select(zset, &query).into_iter(), query.withscores),
        Ok(None) => Frame::Array(Vec::new()),
        Err(e) => e,
    }
}

/// `ZRANGE key min max [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]` → members
/// (with WITHSCORES `[member, score]` pairs; see `zset_args::elements_reply`).
pub fn zrange(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    range_generic(db, args, now, Fixed::Auto)
}

/// `ZREVRANGE key start stop [WITHSCORES]`.
pub fn zrevrange(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    range_generic(db, args, now, Fixed::Rank(true))
}

/// `ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]`.
pub fn zrangebyscore(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    range_generic(db, args, now, Fixed::Score(false))
}

/// `ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]`.
pub fn zrevrangebyscore(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    range_generic(db, args, now, Fixed::Score(true))
}

/// `ZRANGEBYLEX key min max [LIMIT offset count]`.
pub fn zrangebylex(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    range_generic(db, args, now, Fixed::Lex(false))
}

/// `ZREVRANGEBYLEX key max min [LIMIT offset count]`.
pub fn zrevrangebylex(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    range_generic(db, args, now, Fixed::Lex(true))
}

/// ZREMRANGEBY*: parses `args[2..4]` as `fixed` ranges, removes the selected members and
/// deletes an emptied key; → the number removed. Range errors come before the lookup.
fn remrange_generic(db: &mut Db, args: &[Bytes], now: u64, fixed: Fixed) -> Frame {
    let query = match parse_range(&args[2..4], fixed, true) {
        Ok(q) => q,
        Err(e) => return e,
    };
    let removed = match db.get_mut(&args[1], now) {
        Some(Value::ZSet(zset)) => {
            let members: Vec<Bytes> = select(zset, &query)
                .into_iter()
                .map(|(m, _)| m.clone())
                .collect();
            for member in &members {
                zset.remove(member);
            }
            members.len()
        }
        Some(_) => return wrong_type(),
        None => 0,
    };
    if removed > 0 {
        let event = match fixed {
            Fixed::Rank(_) => "zremrangebyrank",
            Fixed::Score(_) => "zremrangebyscore",
            _ => "zremrangebylex",
        };
        db.notify(flags::ZSET, event, &args[1]);
    }
    db.remove_if_empty(&args[1]);
    Frame::Integer(removed as i64)
}

/// `ZREMRANGEBYRANK key start stop` → number removed.
pub fn zremrangebyrank(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    remrange_generic(db, args, now, Fixed::Rank(false))
}

/// `ZREMRANGEBYSCORE key min max` → number removed.
pub fn zremrangebyscore(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    remrange_generic(db, args, now, Fixed::Score(false))
}

/// `ZREMRANGEBYLEX key min max` → number removed.
pub fn zremrangebylex(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    remrange_generic(db, args, now, Fixed::Lex(false))
}
