//! Keyspace command execution on the owner shard's [`Db`], with Redis 7
//! reply and error semantics, plus the command table ([`table`]) and the
//! helpers that split and merge multi-shard commands ([`fanout`]).

mod bitcount;
mod bitfield;
mod bitop;
mod bits;
mod coll_scan;
pub mod databases;
pub mod dump;
mod expire;
pub mod fanout;
mod getex;
mod hash;
mod hash_incr;
mod hash_random;
mod incr;
mod keys;
pub mod lcs;
mod list;
mod list_edit;
pub mod list_moves;
pub mod longdouble;
pub mod rename;
pub mod reply;
pub mod set_algebra;
mod set_cmd;
mod sets;
mod strings;
pub mod table;
mod zset;
mod zset_args;
pub mod zset_multi;
mod zset_pop;
pub mod zset_range;

#[cfg(test)]
mod tests;

use bytes::Bytes;

use crate::keyspace::Db;
use crate::resp::Frame;

pub use table::{all, lookup, CommandSpec, KeyRouting};

/// Executes ONE keyspace command on this shard's `db` at time `now_ms`
/// (unix ms) and returns its reply. `args[0]` is the command name in any
/// case. Unknown commands get Redis's `ERR unknown command ...`, a wrong
/// argument count `ERR wrong number of arguments for '<name>' command`;
/// connection-level commands (routing [`KeyRouting::Connection`]) are not
/// served here and get an `ERR` reply. Never panics on any input.
///
/// For [`KeyRouting::MultiKey`] / [`KeyRouting::AllShards`] commands the
/// caller may pass any subset of keys (see [`fanout`]).
pub fn execute(db: &mut Db, args: &[Bytes], now_ms: u64) -> Frame {
    let Some(name) = args.first() else {
        return Frame::error("ERR empty command");
    };
    let Some(spec) = lookup(name) else {
        return reply::unknown_command(args);
    };
    if !spec.arity_ok(args.len()) {
        return reply::wrong_arity(spec.name);
    }
    db.set_reading(spec.has_flag("readonly"));
    let handler: fn(&mut Db, &[Bytes], u64) -> Frame = match spec.name {
        "get" => strings::get,
        "set" => set_cmd::set,
        "getdel" => strings::getdel,
        "mget" => strings::mget,
        "mset" => strings::mset,
        "msetnx" => strings::msetnx,
        "setnx" => strings::setnx,
        "append" => strings::append,
        "strlen" => strings::strlen,
        "getset" => strings::getset,
        "getrange" => strings::getrange,
        "setrange" => strings::setrange,
        "setbit" => bits::setbit,
        "getbit" => bits::getbit,
        "bitcount" => bitcount::bitcount,
        "bitpos" => bitcount::bitpos,
        "bitfield" => bitfield::bitfield,
        "bitfield_ro" => bitfield::bitfield_ro,
        "bitop" => bitop::bitop,
        "getex" => getex::getex,
        "setex" => getex::setex,
        "psetex" => getex::psetex,
        "incrbyfloat" => incr::incrbyfloat,
        "incr" => incr::incr,
        "decr" => incr::decr,
        "incrby" => incr::incrby,
        "decrby" => incr::decrby,
        "del" | "unlink" => keys::del,
        "exists" => keys::exists,
        "touch" => keys::touch,
        "randomkey" => keys::randomkey,
        "rename" => rename::rename,
        "renamenx" => rename::renamenx,
        "dump" => dump::dump,
        "restore" => dump::restore,
        "type" => keys::type_,
        "keys" => keys::keys,
        "scan" => keys::scan,
        "dbsize" => keys::dbsize,
        "flushdb" | "flushall" => keys::flush,
        "expire" => expire::expire,
        "pexpire" => expire::pexpire,
        "expireat" => expire::expireat,
        "pexpireat" => expire::pexpireat,
        "expiretime" => expire::expiretime,
        "pexpiretime" => expire::pexpiretime,
        "ttl" => expire::ttl,
        "pttl" => expire::pttl,
        "persist" => expire::persist,
        "lpush" => list::lpush,
        "rpush" => list::rpush,
        "lpop" => list::lpop,
        "rpop" => list::rpop,
        "lrange" => list::lrange,
        "llen" => list::llen,
        "lpushx" => list::lpushx,
        "rpushx" => list::rpushx,
        "lindex" => list::lindex,
        "lset" => list::lset,
        "lrem" => list_edit::lrem,
        "ltrim" => list_edit::ltrim,
        "linsert" => list_edit::linsert,
        "lpos" => list_edit::lpos,
        "lmove" => list_moves::lmove,
        "rpoplpush" => list_moves::rpoplpush,
        "lmpop" => list_moves::lmpop,
        "hset" => hash::hset,
        "hget" => hash::hget,
        "hdel" => hash::hdel,
        "hgetall" => hash::hgetall,
        "hlen" => hash::hlen,
        "hmset" => hash::hmset,
        "hsetnx" => hash::hsetnx,
        "hmget" => hash::hmget,
        "hkeys" => hash::hkeys,
        "hvals" => hash::hvals,
        "hexists" => hash::hexists,
        "hstrlen" => hash::hstrlen,
        "hincrby" => hash_incr::hincrby,
        "hincrbyfloat" => hash_incr::hincrbyfloat,
        "hrandfield" => hash_random::hrandfield,
        "hscan" => coll_scan::hscan,
        "sadd" => sets::sadd,
        "srem" => sets::srem,
        "smembers" => sets::smembers,
        "scard" => sets::scard,
        "sismember" => sets::sismember,
        "spop" => sets::spop,
        "smismember" => sets::smismember,
        "srandmember" => sets::srandmember,
        "sscan" => coll_scan::sscan,
        "sinter" => set_algebra::sinter,
        "sunion" => set_algebra::sunion,
        "sdiff" => set_algebra::sdiff,
        "sinterstore" => set_algebra::sinterstore,
        "sunionstore" => set_algebra::sunionstore,
        "sdiffstore" => set_algebra::sdiffstore,
        "sintercard" => set_algebra::sintercard,
        "smove" => set_algebra::smove,
        "zadd" => zset::zadd,
        "zincrby" => zset::zincrby,
        "zrem" => zset::zrem,
        "zcard" => zset::zcard,
        "zscore" => zset::zscore,
        "zmscore" => zset::zmscore,
        "zrank" => zset::zrank,
        "zrevrank" => zset::zrevrank,
        "zcount" => zset::zcount,
        "zlexcount" => zset::zlexcount,
        "zrange" => zset_range::zrange,
        "zrevrange" => zset_range::zrevrange,
        "zrangebyscore" => zset_range::zrangebyscore,
        "zrevrangebyscore" => zset_range::zrevrangebyscore,
        "zrangebylex" => zset_range::zrangebylex,
        "zrevrangebylex" => zset_range::zrevrangebylex,
        "zremrangebyrank" => zset_range::zremrangebyrank,
        "zremrangebyscore" => zset_range::zremrangebyscore,
        "zremrangebylex" => zset_range::zremrangebylex,
        "zpopmin" => zset_pop::zpopmin,
        "zpopmax" => zset_pop::zpopmax,
        "zrandmember" => zset_pop::zrandmember,
        "zscan" => coll_scan::zscan,
        "zunion" | "zinter" | "zdiff" | "zunionstore" | "zinterstore" | "zdiffstore"
        | "zintercard" | "zrangestore" => zset_multi::run_local,
        "zmpop" => zset_multi::zmpop,
        other => {
            return Frame::error(format!("ERR '{other}' is not a keyspace command"));
        }
    };
    let reply = handler(db, args, now_ms);
    db.settle();
    // Redis turns a string changed in place into a `raw` one (OBJECT ENCODING).
    let changed_in_place = match spec.name {
        "append" | "setbit" => true,
        "bitfield" => args[2..]
            .iter()
            .any(|a| a.eq_ignore_ascii_case(b"set") || a.eq_ignore_ascii_case(b"incrby")),
        "setrange" => args.get(3).is_some_and(|value| !value.is_empty()),
        _ => false,
    };
    if changed_in_place && !reply.is_error() {
        db.mark_raw(&args[1]);
    }
    reply
}
