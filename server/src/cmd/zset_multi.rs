//! Sorted set commands over several keys: ZUNION ZINTER ZDIFF ZUNIONSTORE ZINTERSTORE
//! ZDIFFSTORE ZINTERCARD ZRANGESTORE ZMPOP (Redis 7.0 `t_zset.c`
//! `zunionInterDiffGenericCommand`, `zrangestoreCommand`, `zmpopGenericCommand`).
//!
//! [`keys_of`] gives every key the command names (routing, and the cross-shard composition
//! `connection::commands::composed`, which runs these very handlers on a scratch keyspace
//! holding copies of the keys when they live on several shards); [`compute`] is the
//! command as a function of the source values, returning the reply or the sorted set to
//! store. The handlers run the whole command on one [`Db`] holding every key.

use std::collections::HashMap;

use bytes::Bytes;

use super::reply::{int_arg, is_opt, syntax_error, wrong_type};
use super::zset_args::{elements_reply, parse_score};
use super::zset_pop::{pop, pop_event};
use super::zset_range::{parse_range, select, Fixed};
use crate::keyspace::{Db, Value, ZSet};
use crate::notify::flags;
use crate::resp::Frame;

/// The set operation of ZUNION / ZINTER / ZDIFF (and their STORE forms, ZINTERCARD).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    /// Union.
    Union,
    /// Intersection.
    Inter,
    /// Difference (the first input minus the others).
    Diff,
}

/// AGGREGATE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

/// What a multi-key command is, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// ZUNION / ZINTER / ZDIFF (`store` false) or their STORE forms; ZINTERCARD is
    /// `card` (intersection, cardinality only).
    SetOp {
        /// The operation.
        op: SetOp,
        /// Writes `args[1]`.
        store: bool,
        /// ZINTERCARD.
        card: bool,
    },
    /// ZRANGESTORE dst src ...
    RangeStore,
    /// ZMPOP numkeys key... MIN|MAX [COUNT n].
    Mpop,
}

/// The multi-key sorted set command `name` (lowercase), if it is one.
pub fn kind_of(name: &str) -> Option<Kind> {
    let set_op = |op, store, card| Some(Kind::SetOp { op, store, card });
    match name {
        "zunion" => set_op(SetOp::Union, false, false),
        "zinter" => set_op(SetOp::Inter, false, false),
        "zdiff" => set_op(SetOp::Diff, false, false),
        "zunionstore" => set_op(SetOp::Union, true, false),
        "zinterstore" => set_op(SetOp::Inter, true, false),
        "zdiffstore" => set_op(SetOp::Diff, true, false),
        "zintercard" => set_op(SetOp::Inter, false, true),
        "zrangestore" => Some(Kind::RangeStore),
        "zmpop" => Some(Kind::Mpop),
        _ => None,
    }
}

/// The numkeys-counted input keys at `args[index + 1..]` (`index` holds numkeys). Errors in
/// Redis's order: numkeys not an integer, below 1 (`ERR at least 1 input key is needed for
/// '<name>' command`), more than the arguments left (`ERR syntax error`).
fn input_keys<'a>(args: &'a [Bytes], index: usize, name: &str) -> Result<&'a [Bytes], Frame> {
    let n = int_arg(&args[index])?;
    if n < 1 {
        return Err(Frame::error(format!(
            "ERR at least 1 input key is needed for '{name}' command"
        )));
    }
    let left = (args.len() - index - 1) as i64;
    if n > left {
        return Err(syntax_error());
    }
    Ok(&args[index + 1..index + 1 + n as usize])
}

/// ZMPOP's keys (`args[2..]`, numkeys at `args[1]`): `ERR numkeys should be greater than 0`
/// for a non-integer or non-positive numkeys; `ERR syntax error` when fewer arguments follow.
fn mpop_keys(args: &[Bytes]) -> Result<&[Bytes], Frame> {
    let n = match int_arg(&args[1]) {
        Ok(n) if n >= 1 => n,
        _ => return Err(Frame::error("ERR numkeys should be greater than 0")),
    };
    // The keys, then at least MIN|MAX.
    if n >= (args.len() - 2) as i64 {
        return Err(syntax_error());
    }
    Ok(&args[2..2 + n as usize])
}

/// Every key `args` names (destination first for the STORE forms and ZRANGESTORE), or the
/// argument error the command replies with (then no key is read).
pub fn keys_of(kind: Kind, name: &str, args: &[Bytes]) -> Result<Vec<Bytes>, Frame> {
    match kind {
        Kind::SetOp { store: true, .. } => {
            let mut keys = vec![args[1].clone()];
            keys.extend_from_slice(input_keys(args, 2, name)?);
            Ok(keys)
        }
        Kind::SetOp { .. } => Ok(input_keys(args, 1, name)?.to_vec()),
        Kind::RangeStore => Ok(vec![args[1].clone(), args[2].clone()]),
        Kind::Mpop => Ok(mpop_keys(args)?.to_vec()),
    }
}

/// The source keys `compute` needs the values of (all keys but a destination).
fn sources_of(kind: Kind, keys: &[Bytes]) -> &[Bytes] {
    match kind {
        Kind::SetOp { store: true, .. } | Kind::RangeStore => &keys[1..],
        _ => keys,
    }
}

/// What a computed command does.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// Reply with this, write nothing.
    Reply(Frame),
    /// Store this sorted set under the destination (`args[1]`), deleting it when empty, and
    /// reply its size.
    Store(ZSet),
}

/// An input of a set operation: a sorted set, or a set whose members score 1 (Redis's
/// `zsetopsrc`).
enum Source<'a> {
    Missing,
    Sorted(&'a ZSet),
    Plain(&'a std::collections::HashSet<Bytes>),
}

impl Source<'_> {
    fn len(&self) -> usize {
        match self {
            Source::Missing => 0,
            Source::Sorted(z) => z.len(),
            Source::Plain(s) => s.len(),
        }
    }

    fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            Source::Missing => None,
            Source::Sorted(z) => z.score(member),
            Source::Plain(s) => s.contains(member).then_some(1.0),
        }
    }

    fn elements(&self) -> Box<dyn Iterator<Item = (&Bytes, f64)> + '_> {
        match self {
            Source::Missing => Box::new(std::iter::empty()),
            Source::Sorted(z) => Box::new(z.entries()),
            Source::Plain(s) => Box::new(s.iter().map(|m| (m, 1.0))),
        }
    }
}

/// `zunionInterAggregate`: a sum that is NaN (`inf + -inf`) is 0.
fn aggregate(target: f64, value: f64, how: Aggregate) -> f64 {
    match how {
        Aggregate::Sum => {
            let sum = target + value;
            if sum.is_nan() {
                0.0
            } else {
                sum
            }
        }
        Aggregate::Min => {
            if value < target {
                value
            } else {
                target
            }
        }
        Aggregate::Max => {
            if value > target {
                value
            } else {
                target
            }
        }
    }
}

/// `weight * score`, 0 when NaN (`0 * inf`).
fn weighted(score: f64, weight: f64) -> f64 {
    let v = score * weight;
    if v.is_nan() {
        0.0
    } else {
        v
    }
}

/// The options after a set operation's keys.
struct SetOpOptions {
    weights: Vec<f64>,
    aggregate: Aggregate,
    withscores: bool,
    limit: usize,
}

fn set_op_options(
    rest: &[Bytes],
    n: usize,
    op: SetOp,
    store: bool,
    card: bool,
) -> Result<SetOpOptions, Frame> {
    let mut options = SetOpOptions {
        weights: vec![1.0; n],
        aggregate: Aggregate::Sum,
        withscores: false,
        limit: 0,
    };
    let mut j = 0;
    while j < rest.len() {
        let remaining = rest.len() - j;
        let opt = &rest[j];
        if op != SetOp::Diff && !card && remaining > n && is_opt(opt, "weights") {
            for (i, weight) in rest[j + 1..j + 1 + n].iter().enumerate() {
                options.weights[i] = parse_score(weight)
                    .ok_or_else(|| Frame::error("ERR weight value is not a float"))?;
            }
            j += 1 + n;
        } else if op != SetOp::Diff && !card && remaining >= 2 && is_opt(opt, "aggregate") {
            let how = &rest[j + 1];
            options.aggregate = if is_opt(how, "sum") {
                Aggregate::Sum
            } else if is_opt(how, "min") {
                Aggregate::Min
            } else if is_opt(how, "max") {
                Aggregate::Max
            } else {
                return Err(syntax_error());
            };
            j += 2;
        } else if !store && !card && is_opt(opt, "withscores") {
            options.withscores = true;
            j += 1;
        } else if card && remaining >= 2 && is_opt(opt, "limit") {
            let limit = int_arg(&rest[j + 1])
                .ok()
                .and_then(|l| usize::try_from(l).ok())
                .ok_or_else(|| Frame::error("ERR LIMIT can't be negative"))?;
            options.limit = limit;
            j += 2;
        } else {
            return Err(syntax_error());
        }
    }
    Ok(options)
}

fn set_op(
    args: &[Bytes],
    name: &str,
    op: SetOp,
    store: bool,
    card: bool,
    values: &[Option<&Value>],
) -> Result<Outcome, Frame> {
    let index = if store { 2 } else { 1 };
    let keys = input_keys(args, index, name)?;
    let mut sources = Vec::with_capacity(values.len());
    for value in values {
        sources.push(match value {
            None => Source::Missing,
            Some(Value::ZSet(z)) => Source::Sorted(z),
            Some(Value::Set(s)) => Source::Plain(s),
            Some(_) => return Err(wrong_type()),
        });
    }
    let rest = &args[index + 1 + keys.len()..];
    let options = set_op_options(rest, keys.len(), op, store, card)?;
    let mut inputs: Vec<(Source<'_>, f64)> = sources.into_iter().zip(options.weights).collect();
    let mut result = ZSet::new();
    match op {
        SetOp::Inter => {
            inputs.sort_by_key(|(s, _)| s.len());
            let mut count = 0usize;
            if let Some(((first, w0), others)) = inputs.split_first() {
                for (member, score) in first.elements() {
                    let mut acc = weighted(score, *w0);
                    let mut in_all = true;
                    for (other, weight) in others {
                        match other.score(member) {
                            Some(s) => {
                                acc = aggregate(acc, weighted(s, *weight), options.aggregate)
                            }
                            None => {
                                in_all = false;
                                break;
                            }
                        }
                    }
                    if !in_all {
                        continue;
                    }
                    if card {
                        count += 1;
                        if options.limit > 0 && count >= options.limit {
                            break;
                        }
                    } else {
                        result.insert(member.clone(), acc);
                    }
                }
            }
            if card {
                return Ok(Outcome::Reply(Frame::Integer(count as i64)));
            }
        }
        SetOp::Union => {
            let mut acc: HashMap<&Bytes, f64> = HashMap::new();
            for (source, weight) in &inputs {
                for (member, score) in source.elements() {
                    let value = weighted(score, *weight);
                    acc.entry(member)
                        .and_modify(|t| *t = aggregate(*t, value, options.aggregate))
                        .or_insert(value);
                }
            }
            for (member, score) in acc {
                result.insert(member.clone(), score);
            }
        }
        SetOp::Diff => {
            if let Some(((first, _), others)) = inputs.split_first() {
                for (member, score) in first.elements() {
                    if others.iter().all(|(o, _)| o.score(member).is_none()) {
                        result.insert(member.clone(), score);
                    }
                }
            }
        }
    }
    if store {
        Ok(Outcome::Store(result))
    } else {
        Ok(Outcome::Reply(elements_reply(
            result.iter(),
            options.withscores,
        )))
    }
}

/// Computes command `name` (`kind`) from the values of its source keys
/// ([`sources_of`], in order; `None` = missing). ZMPOP is not computed here (it pops: see
/// [`zmpop`]). Errors: the argument errors in Redis's order (WRONGTYPE for a source that is
/// neither a sorted set nor, for the set operations, a set, before the options are parsed).
fn compute(
    kind: Kind,
    name: &str,
    args: &[Bytes],
    values: &[Option<&Value>],
) -> Result<Outcome, Frame> {
    match kind {
        Kind::SetOp { op, store, card } => set_op(args, name, op, store, card, values),
        Kind::RangeStore => {
            let query = parse_range(&args[3..], Fixed::Auto, true)?;
            match values.first().copied().flatten() {
                None => Ok(Outcome::Store(ZSet::new())),
                Some(Value::ZSet(zset)) => Ok(Outcome::Store(
                    select(zset, &query)
                        .into_iter()
                        .map(|(m, s)| (m.clone(), s))
                        .collect(),
                )),
                Some(_) => Err(wrong_type()),
            }
        }
        Kind::Mpop => Err(Frame::error("ERR ZMPOP is not computed from copies")),
    }
}

/// Parses ZMPOP's `MIN|MAX [COUNT count]` after the keys: (pop the maximum, count). Errors:
/// `ERR syntax error`, `ERR count should be greater than 0`.
pub(crate) fn mpop_options(rest: &[Bytes]) -> Result<(bool, usize), Frame> {
    let Some(where_) = rest.first() else {
        return Err(syntax_error());
    };
    let max = if is_opt(where_, "min") {
        false
    } else if is_opt(where_, "max") {
        true
    } else {
        return Err(syntax_error());
    };
    Ok((max, crate::cmd::list_moves::count_option(&rest[1..])?))
}

/// `ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]` on one shard's `db`: pops from the
/// first key holding a sorted set → `[key, [[member, score], ...]]` (nested in RESP2 too), or
/// a null array when every key is missing. A first existing key of another type is WRONGTYPE.
pub fn zmpop(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let keys = match mpop_keys(args) {
        Ok(keys) => keys,
        Err(e) => return e,
    };
    let (max, count) = match mpop_options(&args[2 + keys.len()..]) {
        Ok(o) => o,
        Err(e) => return e,
    };
    for key in keys {
        let popped = match db.get_mut(key, now) {
            Some(Value::ZSet(zset)) => pop(zset, count, max),
            Some(_) => return wrong_type(),
            None => continue,
        };
        db.notify(flags::ZSET, pop_event(max), key);
        db.remove_if_empty(key);
        let pairs = popped
            .into_iter()
            .map(|(m, s)| Frame::Array(vec![Frame::Bulk(m), Frame::Double(s)]))
            .collect();
        return Frame::Array(vec![Frame::Bulk(key.clone()), Frame::Array(pairs)]);
    }
    Frame::NullArray
}

/// Applies an [`Outcome`] of command `name` (lowercase: `zunionstore`, `zinterstore`,
/// `zdiffstore`, `zrangestore`, also Redis's event name) on the shard owning the destination
/// `dst`: stores (events `new` when created, then `name`) or deletes (`del` when it existed),
/// as Redis 7.0.15's `zunionInterDiffGenericCommand` and `zrangeResultFinalizeStore`, and
/// returns the reply.
fn apply(db: &mut Db, name: &str, dst: &[u8], outcome: Outcome, now: u64) -> Frame {
    match outcome {
        Outcome::Reply(frame) => frame,
        Outcome::Store(zset) if zset.is_empty() => {
            if db.remove(dst, now).is_some() {
                db.notify(flags::GENERIC, "del", dst);
            }
            Frame::Integer(0)
        }
        Outcome::Store(zset) => {
            let n = zset.len() as i64;
            db.set(dst, Value::ZSet(zset), false, now);
            db.notify(flags::ZSET, store_event(name), dst);
            Frame::Integer(n)
        }
    }
}

/// The event of a store form `name` (lowercase) of a multi-key sorted set command.
fn store_event(name: &str) -> &'static str {
    match name {
        "zunionstore" => "zunionstore",
        "zinterstore" => "zinterstore",
        "zdiffstore" => "zdiffstore",
        _ => "zrangestore",
    }
}

/// Runs a multi-key sorted set command (not ZMPOP) whose keys all live in `db`.
pub fn run_local(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
    let Some(kind) = kind_of(&name) else {
        return Frame::error(format!("ERR '{name}' is not a sorted set command"));
    };
    let keys = match keys_of(kind, &name, args) {
        Ok(keys) => keys,
        Err(e) => return e,
    };
    let sources = sources_of(kind, &keys);
    let owned: Vec<Option<Value>> = sources
        .iter()
        .map(|k| db.get_read(k, now).cloned())
        .collect();
    let values: Vec<Option<&Value>> = owned.iter().map(Option::as_ref).collect();
    match compute(kind, &name, args, &values) {
        Ok(outcome) => apply(db, &name, &args[1], outcome, now),
        Err(e) => e,
    }
}
