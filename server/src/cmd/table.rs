//! Static command table: name, arity, flags, key positions, ACL categories
//! and routing of every command shardline serves. Arity, flags, key
//! positions, ACL categories, group, since and summary are those reported by
//! redis-server 7.0.15's COMMAND INFO / COMMAND DOCS, so shardline's COMMAND
//! replies can be generated from this table.

/// How the runtime routes a command to shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyRouting {
    /// Handled by the connection itself (PING, AUTH, CONFIG, ...): commands without keys, and
    /// the multi-key commands in [`COMPOSED`], whose keys may live on different shards and
    /// which the connection composes from steps run on each owner shard.
    Connection,
    /// One key at `args[1]`; runs on that key's owner shard.
    SingleKey,
    /// Keys at `args[1..]`, one key every `step` arguments (DEL, UNLINK,
    /// EXISTS, MGET: 1; MSET: 2); split per owner shard and merged.
    MultiKey {
        /// Distance between consecutive keys.
        step: usize,
    },
    /// Keyless keyspace command run on every shard and merged (KEYS, SCAN,
    /// DBSIZE, FLUSHDB, FLUSHALL, SWAPDB, RANDOMKEY).
    AllShards,
}

/// One command's static description (Redis 7 `redisCommand` subset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandSpec {
    /// Canonical lowercase name.
    pub name: &'static str,
    /// Redis arity convention: `n > 0` = exactly `n` arguments including the
    /// name; `n < 0` = at least `-n`.
    pub arity: i32,
    /// Redis command flags as COMMAND INFO lists them (`"write"`,
    /// `"readonly"`, `"denyoom"`, `"fast"`, `"no_auth"`, ...).
    pub flags: &'static [&'static str],
    /// Index of the first key argument (0 = no keys).
    pub first_key: i32,
    /// Index of the last key argument (-1 = the last argument).
    pub last_key: i32,
    /// Step between key arguments.
    pub key_step: i32,
    /// Shard routing.
    pub routing: KeyRouting,
    /// Redis command group (`"string"`, `"generic"`, `"list"`, `"hash"`,
    /// `"set"`, `"sorted-set"`, `"connection"`, `"server"`).
    pub group: &'static str,
    /// One-line summary (COMMAND DOCS).
    pub summary: &'static str,
    /// Redis version that introduced the command (COMMAND DOCS `since`).
    pub since: &'static str,
    /// ACL categories as COMMAND INFO lists them (`"@read"`, `"@fast"`, ...).
    pub acl_categories: &'static [&'static str],
}

impl CommandSpec {
    /// Whether `argc` arguments (including the command name) satisfy the
    /// arity.
    pub fn arity_ok(&self, argc: usize) -> bool {
        let argc = i64::try_from(argc).unwrap_or(i64::MAX);
        let arity = i64::from(self.arity);
        if arity >= 0 {
            argc == arity
        } else {
            argc >= -arity
        }
    }

    /// Whether the command carries `flag` (e.g. `"write"`).
    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.contains(&flag)
    }
}

const R: &[&str] = &["readonly"];
const RF: &[&str] = &["readonly", "fast"];
const W: &[&str] = &["write"];
const WF: &[&str] = &["write", "fast"];
const WD: &[&str] = &["write", "denyoom"];
const WDF: &[&str] = &["write", "denyoom", "fast"];
const NO_AUTH: &[&str] = &[
    "noscript",
    "loading",
    "stale",
    "fast",
    "no_auth",
    "allow_busy",
];

/// Commands with keys routed [`KeyRouting::Connection`]: their keys (RENAME's and LCS's two,
/// MSETNX's many) may live on different shards and the command is not a per-key merge of
/// independent parts, so neither `SingleKey` nor `MultiKey` fits. The connection runs them in
/// one job on the owner shard when all keys share one, else as a composition of owner-shard
/// steps (`connection::commands::cross_shard`).
pub const COMPOSED: &[&str] = &[
    "rename",
    "renamenx",
    "copy",
    "msetnx",
    "lcs",
    // connection/commands/composed.rs
    "bitop",
    "sinter",
    "sunion",
    "sdiff",
    "sinterstore",
    "sunionstore",
    "sdiffstore",
    "sintercard",
    "smove",
    "lmove",
    "rpoplpush",
    "lmpop",
    // sorted sets (composed the same way; their keys: cmd/zset_multi.rs)
    "zunion",
    "zinter",
    "zdiff",
    "zunionstore",
    "zinterstore",
    "zdiffstore",
    "zintercard",
    "zrangestore",
    "zmpop",
    // connection/commands/blocking.rs
    "blpop",
    "brpop",
    "blmove",
    "brpoplpush",
    "blmpop",
    "bzpopmin",
    "bzpopmax",
    "bzmpop",
];

const PUBSUB_NOSCRIPT: &[&str] = &["pubsub", "noscript", "loading", "stale"];

const SCRIPT_RUN: &[&str] = &[
    "noscript",
    "stale",
    "skip_monitor",
    "no_mandatory_keys",
    "movablekeys",
];
const SCRIPT_RUN_RO: &[&str] = &[
    "readonly",
    "noscript",
    "stale",
    "skip_monitor",
    "no_mandatory_keys",
    "movablekeys",
];

const TX_FAST: &[&str] = &["noscript", "loading", "stale", "fast", "allow_busy"];

use KeyRouting::{AllShards, Connection, MultiKey, SingleKey};

/// Shorthand constructor for a table row.
#[allow(clippy::too_many_arguments)]
const fn c(
    name: &'static str,
    arity: i32,
    flags: &'static [&'static str],
    keys: (i32, i32, i32),
    routing: KeyRouting,
    group: &'static str,
    since: &'static str,
    summary: &'static str,
    acl_categories: &'static [&'static str],
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        first_key: keys.0,
        last_key: keys.1,
        key_step: keys.2,
        routing,
        group,
        summary,
        since,
        acl_categories,
    }
}

const K1: (i32, i32, i32) = (1, 1, 1);
const KN: (i32, i32, i32) = (1, -1, 1);
const K0: (i32, i32, i32) = (0, 0, 0);
const M1: KeyRouting = MultiKey { step: 1 };

static COMMANDS: &[CommandSpec] = &[
    // string
    c("get", 2, RF, K1, SingleKey, "string", "1.0.0", "Get the value of a key", &["@read", "@string", "@fast"]),
    c("set", -3, WD, K1, SingleKey, "string", "1.0.0", "Set the string value of a key", &["@write", "@string", "@slow"]),
    c("getdel", 2, WF, K1, SingleKey, "string", "6.2.0", "Get the value of a key and delete the key", &["@write", "@string", "@fast"]),
    c("mget", -2, RF, KN, M1, "string", "1.0.0", "Get the values of all the given keys", &["@read", "@string", "@fast"]),
    c("msetnx", -3, WD, (1, -1, 2), Connection, "string", "1.0.1", "Set multiple keys to multiple values, only if none of the keys exist", &["@write", "@string", "@slow"]),
    c("mset", -3, WD, (1, -1, 2), MultiKey { step: 2 }, "string", "1.0.1", "Set multiple keys to multiple values", &["@write", "@string", "@slow"]),
    c("setnx", 3, WDF, K1, SingleKey, "string", "1.0.0", "Set the value of a key, only if the key does not exist", &["@write", "@string", "@fast"]),
    c("append", 3, WDF, K1, SingleKey, "string", "2.0.0", "Append a value to a key", &["@write", "@string", "@fast"]),
    c("strlen", 2, RF, K1, SingleKey, "string", "2.2.0", "Get the length of the value stored in a key", &["@read", "@string", "@fast"]),
    c("incr", 2, WDF, K1, SingleKey, "string", "1.0.0", "Increment the integer value of a key by one", &["@write", "@string", "@fast"]),
    c("decr", 2, WDF, K1, SingleKey, "string", "1.0.0", "Decrement the integer value of a key by one", &["@write", "@string", "@fast"]),
    c("incrby", 3, WDF, K1, SingleKey, "string", "1.0.0", "Increment the integer value of a key by the given amount", &["@write", "@string", "@fast"]),
    c("decrby", 3, WDF, K1, SingleKey, "string", "1.0.0", "Decrement the integer value of a key by the given number", &["@write", "@string", "@fast"]),
    c("incrbyfloat", 3, WDF, K1, SingleKey, "string", "2.6.0", "Increment the float value of a key by the given amount", &["@write", "@string", "@fast"]),
    c("getex", -2, WF, K1, SingleKey, "string", "6.2.0", "Get the value of a key and optionally set its expiration", &["@write", "@string", "@fast"]),
    c("getset", 3, WDF, K1, SingleKey, "string", "1.0.0", "Set the string value of a key and return its old value", &["@write", "@string", "@fast"]),
    c("lcs", -3, R, (1, 2, 1), Connection, "string", "7.0.0", "Find longest common substring", &["@read", "@string", "@slow"]),
    c("getrange", 4, R, K1, SingleKey, "string", "2.4.0", "Get a substring of the string stored at a key", &["@read", "@string", "@slow"]),
    c("setrange", 4, WD, K1, SingleKey, "string", "2.2.0", "Overwrite part of a string at key starting at the specified offset", &["@write", "@string", "@slow"]),
    c("setbit", 4, WD, K1, SingleKey, "bitmap", "2.2.0", "Sets or clears the bit at offset in the string value stored at key", &["@write", "@bitmap", "@slow"]),
    c("getbit", 3, RF, K1, SingleKey, "bitmap", "2.2.0", "Returns the bit value at offset in the string value stored at key", &["@read", "@bitmap", "@fast"]),
    c("bitcount", -2, R, K1, SingleKey, "bitmap", "2.6.0", "Count set bits in a string", &["@read", "@bitmap", "@slow"]),
    c("bitpos", -3, R, K1, SingleKey, "bitmap", "2.8.7", "Find first bit set or clear in a string", &["@read", "@bitmap", "@slow"]),
    c("bitfield", -2, WD, K1, SingleKey, "bitmap", "3.2.0", "Perform arbitrary bitfield integer operations on strings", &["@write", "@bitmap", "@slow"]),
    c("bitfield_ro", -2, RF, K1, SingleKey, "bitmap", "6.0.0", "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD", &["@read", "@bitmap", "@fast"]),
    c("bitop", -4, WD, (2, -1, 1), Connection, "bitmap", "2.6.0", "Perform bitwise operations between strings", &["@write", "@bitmap", "@slow"]),
    c("setex", 4, WD, K1, SingleKey, "string", "2.0.0", "Set the value and expiration of a key", &["@write", "@string", "@slow"]),
    c("psetex", 4, WD, K1, SingleKey, "string", "2.6.0", "Set the value and expiration in milliseconds of a key", &["@write", "@string", "@slow"]),
    // generic
    c("del", -2, W, KN, M1, "generic", "1.0.0", "Delete a key", &["@keyspace", "@write", "@slow"]),
    c("unlink", -2, WF, KN, M1, "generic", "4.0.0", "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking.", &["@keyspace", "@write", "@fast"]),
    c("rename", 3, W, (1, 2, 1), Connection, "generic", "1.0.0", "Rename a key", &["@keyspace", "@write", "@slow"]),
    c("renamenx", 3, WF, (1, 2, 1), Connection, "generic", "1.0.0", "Rename a key, only if the new key does not exist", &["@keyspace", "@write", "@fast"]),
    c("copy", -3, WD, (1, 2, 1), Connection, "generic", "6.2.0", "Copy a key", &["@keyspace", "@write", "@slow"]),
    c("touch", -2, RF, KN, M1, "generic", "3.2.1", "Alters the last access time of a key(s). Returns the number of existing keys specified.", &["@keyspace", "@read", "@fast"]),
    c("randomkey", 1, R, K0, AllShards, "generic", "1.0.0", "Return a random key from the keyspace", &["@keyspace", "@read", "@slow"]),
    c("dump", 2, R, K1, SingleKey, "generic", "2.6.0", "Return a serialized version of the value stored at the specified key.", &["@keyspace", "@read", "@slow"]),
    c("restore", -4, WD, K1, SingleKey, "generic", "2.6.0", "Create a key using the provided serialized value, previously obtained using DUMP.", &["@keyspace", "@write", "@slow", "@dangerous"]),
    c("move", 3, WF, K1, SingleKey, "generic", "1.0.0", "Move a key to another database", &["@keyspace", "@write", "@fast"]),
    c("exists", -2, RF, KN, M1, "generic", "1.0.0", "Determine if a key exists", &["@keyspace", "@read", "@fast"]),
    c("type", 2, RF, K1, SingleKey, "generic", "1.0.0", "Determine the type stored at key", &["@keyspace", "@read", "@fast"]),
    c("expire", -3, WF, K1, SingleKey, "generic", "1.0.0", "Set a key's time to live in seconds", &["@keyspace", "@write", "@fast"]),
    c("pexpire", -3, WF, K1, SingleKey, "generic", "2.6.0", "Set a key's time to live in milliseconds", &["@keyspace", "@write", "@fast"]),
    c("expireat", -3, WF, K1, SingleKey, "generic", "1.2.0", "Set the expiration for a key as a UNIX timestamp", &["@keyspace", "@write", "@fast"]),
    c("pexpireat", -3, WF, K1, SingleKey, "generic", "2.6.0", "Set the expiration for a key as a UNIX timestamp specified in milliseconds", &["@keyspace", "@write", "@fast"]),
    c("expiretime", 2, RF, K1, SingleKey, "generic", "7.0.0", "Get the expiration Unix timestamp for a key", &["@keyspace", "@read", "@fast"]),
    c("pexpiretime", 2, RF, K1, SingleKey, "generic", "7.0.0", "Get the expiration Unix timestamp for a key in milliseconds", &["@keyspace", "@read", "@fast"]),
    c("ttl", 2, RF, K1, SingleKey, "generic", "1.0.0", "Get the time to live for a key in seconds", &["@keyspace", "@read", "@fast"]),
    c("pttl", 2, RF, K1, SingleKey, "generic", "2.6.0", "Get the time to live for a key in milliseconds", &["@keyspace", "@read", "@fast"]),
    c("persist", 2, WF, K1, SingleKey, "generic", "2.2.0", "Remove the expiration from a key", &["@keyspace", "@write", "@fast"]),
    c("keys", 2, R, K0, AllShards, "generic", "1.0.0", "Find all keys matching the given pattern", &["@keyspace", "@read", "@slow", "@dangerous"]),
    c("scan", -2, R, K0, AllShards, "generic", "2.8.0", "Incrementally iterate the keys space", &["@keyspace", "@read", "@slow"]),
    c("dbsize", 1, RF, K0, AllShards, "server", "1.0.0", "Return the number of keys in the selected database", &["@keyspace", "@read", "@fast"]),
    c("flushdb", -1, W, K0, AllShards, "server", "1.0.0", "Remove all keys from the current database", &["@keyspace", "@write", "@slow", "@dangerous"]),
    c("swapdb", 3, WF, K0, AllShards, "server", "4.0.0", "Swaps two Redis databases", &["@keyspace", "@write", "@fast", "@dangerous"]),
    c("flushall", -1, W, K0, AllShards, "server", "1.0.0", "Remove all keys from all databases", &["@keyspace", "@write", "@slow", "@dangerous"]),
    // list
    c("lpush", -3, WDF, K1, SingleKey, "list", "1.0.0", "Prepend one or multiple elements to a list", &["@write", "@list", "@fast"]),
    c("rpush", -3, WDF, K1, SingleKey, "list", "1.0.0", "Append one or multiple elements to a list", &["@write", "@list", "@fast"]),
    c("lpop", -2, WF, K1, SingleKey, "list", "1.0.0", "Remove and get the first elements in a list", &["@write", "@list", "@fast"]),
    c("rpop", -2, WF, K1, SingleKey, "list", "1.0.0", "Remove and get the last elements in a list", &["@write", "@list", "@fast"]),
    c("lrange", 4, R, K1, SingleKey, "list", "1.0.0", "Get a range of elements from a list", &["@read", "@list", "@slow"]),
    c("llen", 2, RF, K1, SingleKey, "list", "1.0.0", "Get the length of a list", &["@read", "@list", "@fast"]),
    c("lpushx", -3, WDF, K1, SingleKey, "list", "2.2.0", "Prepend an element to a list, only if the list exists", &["@write", "@list", "@fast"]),
    c("rpushx", -3, WDF, K1, SingleKey, "list", "2.2.0", "Append an element to a list, only if the list exists", &["@write", "@list", "@fast"]),
    c("lindex", 3, R, K1, SingleKey, "list", "1.0.0", "Get an element from a list by its index", &["@read", "@list", "@slow"]),
    c("lset", 4, WD, K1, SingleKey, "list", "1.0.0", "Set the value of an element in a list by its index", &["@write", "@list", "@slow"]),
    c("lrem", 4, W, K1, SingleKey, "list", "1.0.0", "Remove elements from a list", &["@write", "@list", "@slow"]),
    c("ltrim", 4, W, K1, SingleKey, "list", "1.0.0", "Trim a list to the specified range", &["@write", "@list", "@slow"]),
    c("linsert", 5, WD, K1, SingleKey, "list", "2.2.0", "Insert an element before or after another element in a list", &["@write", "@list", "@slow"]),
    c("lpos", -3, R, K1, SingleKey, "list", "6.0.6", "Return the index of matching elements on a list", &["@read", "@list", "@slow"]),
    c("lmove", 5, WD, (1, 2, 1), Connection, "list", "6.2.0", "Pop an element from a list, push it to another list and return it", &["@write", "@list", "@slow"]),
    c("rpoplpush", 3, WD, (1, 2, 1), Connection, "list", "1.2.0", "Remove the last element in a list, prepend it to another list and return it", &["@write", "@list", "@slow"]),
    c("blpop", -3, &["write", "noscript", "blocking"], (1, -2, 1), Connection, "list", "2.0.0", "Remove and get the first element in a list, or block until one is available", &["@write", "@list", "@slow", "@blocking"]),
    c("brpop", -3, &["write", "noscript", "blocking"], (1, -2, 1), Connection, "list", "2.0.0", "Remove and get the last element in a list, or block until one is available", &["@write", "@list", "@slow", "@blocking"]),
    c("blmove", 6, &["write", "denyoom", "noscript", "blocking"], (1, 2, 1), Connection, "list", "6.2.0", "Pop an element from a list, push it to another list and return it; or block until one is available", &["@write", "@list", "@slow", "@blocking"]),
    c("brpoplpush", 4, &["write", "denyoom", "noscript", "blocking"], (1, 2, 1), Connection, "list", "2.2.0", "Pop an element from a list, push it to another list and return it; or block until one is available", &["@write", "@list", "@slow", "@blocking"]),
    c("blmpop", -5, &["write", "blocking", "movablekeys"], K0, Connection, "list", "7.0.0", "Pop elements from a list, or block until one is available", &["@write", "@list", "@slow", "@blocking"]),
    c("lmpop", -4, &["write", "movablekeys"], K0, Connection, "list", "7.0.0", "Pop elements from a list", &["@write", "@list", "@slow"]),
    // hash
    c("hset", -4, WDF, K1, SingleKey, "hash", "2.0.0", "Set the string value of a hash field", &["@write", "@hash", "@fast"]),
    c("hget", 3, RF, K1, SingleKey, "hash", "2.0.0", "Get the value of a hash field", &["@read", "@hash", "@fast"]),
    c("hdel", -3, WF, K1, SingleKey, "hash", "2.0.0", "Delete one or more hash fields", &["@write", "@hash", "@fast"]),
    c("hgetall", 2, R, K1, SingleKey, "hash", "2.0.0", "Get all the fields and values in a hash", &["@read", "@hash", "@slow"]),
    c("hlen", 2, RF, K1, SingleKey, "hash", "2.0.0", "Get the number of fields in a hash", &["@read", "@hash", "@fast"]),
    c("hmset", -4, WDF, K1, SingleKey, "hash", "2.0.0", "Set multiple hash fields to multiple values", &["@write", "@hash", "@fast"]),
    c("hsetnx", 4, WDF, K1, SingleKey, "hash", "2.0.0", "Set the value of a hash field, only if the field does not exist", &["@write", "@hash", "@fast"]),
    c("hmget", -3, RF, K1, SingleKey, "hash", "2.0.0", "Get the values of all the given hash fields", &["@read", "@hash", "@fast"]),
    c("hkeys", 2, R, K1, SingleKey, "hash", "2.0.0", "Get all the fields in a hash", &["@read", "@hash", "@slow"]),
    c("hvals", 2, R, K1, SingleKey, "hash", "2.0.0", "Get all the values in a hash", &["@read", "@hash", "@slow"]),
    c("hexists", 3, RF, K1, SingleKey, "hash", "2.0.0", "Determine if a hash field exists", &["@read", "@hash", "@fast"]),
    c("hstrlen", 3, RF, K1, SingleKey, "hash", "3.2.0", "Get the length of the value of a hash field", &["@read", "@hash", "@fast"]),
    c("hincrby", 4, WDF, K1, SingleKey, "hash", "2.0.0", "Increment the integer value of a hash field by the given number", &["@write", "@hash", "@fast"]),
    c("hincrbyfloat", 4, WDF, K1, SingleKey, "hash", "2.6.0", "Increment the float value of a hash field by the given amount", &["@write", "@hash", "@fast"]),
    c("hrandfield", -2, R, K1, SingleKey, "hash", "6.2.0", "Get one or multiple random fields from a hash", &["@read", "@hash", "@slow"]),
    c("hscan", -3, R, K1, SingleKey, "hash", "2.8.0", "Incrementally iterate hash fields and associated values", &["@read", "@hash", "@slow"]),
    // set
    c("sadd", -3, WDF, K1, SingleKey, "set", "1.0.0", "Add one or more members to a set", &["@write", "@set", "@fast"]),
    c("srem", -3, WF, K1, SingleKey, "set", "1.0.0", "Remove one or more members from a set", &["@write", "@set", "@fast"]),
    c("smembers", 2, R, K1, SingleKey, "set", "1.0.0", "Get all the members in a set", &["@read", "@set", "@slow"]),
    c("scard", 2, RF, K1, SingleKey, "set", "1.0.0", "Get the number of members in a set", &["@read", "@set", "@fast"]),
    c("sismember", 3, RF, K1, SingleKey, "set", "1.0.0", "Determine if a given value is a member of a set", &["@read", "@set", "@fast"]),
    c("spop", -2, WF, K1, SingleKey, "set", "1.0.0", "Remove and return one or multiple random members from a set", &["@write", "@set", "@fast"]),
    c("smismember", -3, RF, K1, SingleKey, "set", "6.2.0", "Returns the membership associated with the given elements for a set", &["@read", "@set", "@fast"]),
    c("srandmember", -2, R, K1, SingleKey, "set", "1.0.0", "Get one or multiple random members from a set", &["@read", "@set", "@slow"]),
    c("sscan", -3, R, K1, SingleKey, "set", "2.8.0", "Incrementally iterate Set elements", &["@read", "@set", "@slow"]),
    c("sinter", -2, R, KN, Connection, "set", "1.0.0", "Intersect multiple sets", &["@read", "@set", "@slow"]),
    c("sunion", -2, R, KN, Connection, "set", "1.0.0", "Add multiple sets", &["@read", "@set", "@slow"]),
    c("sdiff", -2, R, KN, Connection, "set", "1.0.0", "Subtract multiple sets", &["@read", "@set", "@slow"]),
    c("sinterstore", -3, WD, KN, Connection, "set", "1.0.0", "Intersect multiple sets and store the resulting set in a key", &["@write", "@set", "@slow"]),
    c("sunionstore", -3, WD, KN, Connection, "set", "1.0.0", "Add multiple sets and store the resulting set in a key", &["@write", "@set", "@slow"]),
    c("sdiffstore", -3, WD, KN, Connection, "set", "1.0.0", "Subtract multiple sets and store the resulting set in a key", &["@write", "@set", "@slow"]),
    c("sintercard", -3, &["readonly", "movablekeys"], K0, Connection, "set", "7.0.0", "Intersect multiple sets and return the cardinality of the result", &["@read", "@set", "@slow"]),
    c("smove", 4, WF, (1, 2, 1), Connection, "set", "1.0.0", "Move a member from one set to another", &["@write", "@set", "@fast"]),
    // sorted set
    c("zadd", -4, &["write", "denyoom", "fast"], (1, 1, 1), SingleKey, "sorted-set", "1.2.0", "Add one or more members to a sorted set, or update its score if it already exists", &["@write", "@sortedset", "@fast"]),
    c("zcard", 2, &["readonly", "fast"], (1, 1, 1), SingleKey, "sorted-set", "1.2.0", "Get the number of members in a sorted set", &["@read", "@sortedset", "@fast"]),
    c("zscore", 3, &["readonly", "fast"], (1, 1, 1), SingleKey, "sorted-set", "1.2.0", "Get the score associated with the given member in a sorted set", &["@read", "@sortedset", "@fast"]),
    c("zmscore", -3, &["readonly", "fast"], (1, 1, 1), SingleKey, "sorted-set", "6.2.0", "Get the score associated with the given members in a sorted set", &["@read", "@sortedset", "@fast"]),
    c("zincrby", 4, &["write", "denyoom", "fast"], (1, 1, 1), SingleKey, "sorted-set", "1.2.0", "Increment the score of a member in a sorted set", &["@write", "@sortedset", "@fast"]),
    c("zrank", 3, &["readonly", "fast"], (1, 1, 1), SingleKey, "sorted-set", "2.0.0", "Determine the index of a member in a sorted set", &["@read", "@sortedset", "@fast"]),
    c("zrevrank", 3, &["readonly", "fast"], (1, 1, 1), SingleKey, "sorted-set", "2.0.0", "Determine the index of a member in a sorted set, with scores ordered from high to low", &["@read", "@sortedset", "@fast"]),
    c("zcount", 4, &["readonly", "fast"], (1, 1, 1), SingleKey, "sorted-set", "2.0.0", "Count the members in a sorted set with scores within the given values", &["@read", "@sortedset", "@fast"]),
    c("zlexcount", 4, &["readonly", "fast"], (1, 1, 1), SingleKey, "sorted-set", "2.8.9", "Count the number of members in a sorted set between a given lexicographical range", &["@read", "@sortedset", "@fast"]),
    c("zrange", -4, &["readonly"], (1, 1, 1), SingleKey, "sorted-set", "1.2.0", "Return a range of members in a sorted set", &["@read", "@sortedset", "@slow"]),
    c("zrangebyscore", -4, &["readonly"], (1, 1, 1), SingleKey, "sorted-set", "1.0.5", "Return a range of members in a sorted set, by score", &["@read", "@sortedset", "@slow"]),
    c("zrevrangebyscore", -4, &["readonly"], (1, 1, 1), SingleKey, "sorted-set", "2.2.0", "Return a range of members in a sorted set, by score, with scores ordered from high to low", &["@read", "@sortedset", "@slow"]),
    c("zrangebylex", -4, &["readonly"], (1, 1, 1), SingleKey, "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range", &["@read", "@sortedset", "@slow"]),
    c("zrevrangebylex", -4, &["readonly"], (1, 1, 1), SingleKey, "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings.", &["@read", "@sortedset", "@slow"]),
    c("zrevrange", -4, &["readonly"], (1, 1, 1), SingleKey, "sorted-set", "1.2.0", "Return a range of members in a sorted set, by index, with scores ordered from high to low", &["@read", "@sortedset", "@slow"]),
    c("zpopmin", -2, &["write", "fast"], (1, 1, 1), SingleKey, "sorted-set", "5.0.0", "Remove and return members with the lowest scores in a sorted set", &["@write", "@sortedset", "@fast"]),
    c("zpopmax", -2, &["write", "fast"], (1, 1, 1), SingleKey, "sorted-set", "5.0.0", "Remove and return members with the highest scores in a sorted set", &["@write", "@sortedset", "@fast"]),
    c("zrandmember", -2, &["readonly"], (1, 1, 1), SingleKey, "sorted-set", "6.2.0", "Get one or multiple random elements from a sorted set", &["@read", "@sortedset", "@slow"]),
    c("zrem", -3, &["write", "fast"], (1, 1, 1), SingleKey, "sorted-set", "1.2.0", "Remove one or more members from a sorted set", &["@write", "@sortedset", "@fast"]),
    c("zremrangebyscore", 4, &["write"], (1, 1, 1), SingleKey, "sorted-set", "1.2.0", "Remove all members in a sorted set within the given scores", &["@write", "@sortedset", "@slow"]),
    c("zremrangebyrank", 4, &["write"], (1, 1, 1), SingleKey, "sorted-set", "2.0.0", "Remove all members in a sorted set within the given indexes", &["@write", "@sortedset", "@slow"]),
    c("zremrangebylex", 4, &["write"], (1, 1, 1), SingleKey, "sorted-set", "2.8.9", "Remove all members in a sorted set between the given lexicographical range", &["@write", "@sortedset", "@slow"]),
    c("zunion", -3, &["readonly", "movablekeys"], (0, 0, 0), Connection, "sorted-set", "6.2.0", "Add multiple sorted sets", &["@read", "@sortedset", "@slow"]),
    c("zinter", -3, &["readonly", "movablekeys"], (0, 0, 0), Connection, "sorted-set", "6.2.0", "Intersect multiple sorted sets", &["@read", "@sortedset", "@slow"]),
    c("zdiff", -3, &["readonly", "movablekeys"], (0, 0, 0), Connection, "sorted-set", "6.2.0", "Subtract multiple sorted sets", &["@read", "@sortedset", "@slow"]),
    c("zunionstore", -4, &["write", "denyoom", "movablekeys"], (1, 1, 1), Connection, "sorted-set", "2.0.0", "Add multiple sorted sets and store the resulting sorted set in a new key", &["@write", "@sortedset", "@slow"]),
    c("zinterstore", -4, &["write", "denyoom", "movablekeys"], (1, 1, 1), Connection, "sorted-set", "2.0.0", "Intersect multiple sorted sets and store the resulting sorted set in a new key", &["@write", "@sortedset", "@slow"]),
    c("zdiffstore", -4, &["write", "denyoom", "movablekeys"], (1, 1, 1), Connection, "sorted-set", "6.2.0", "Subtract multiple sorted sets and store the resulting sorted set in a new key", &["@write", "@sortedset", "@slow"]),
    c("zintercard", -3, &["readonly", "movablekeys"], (0, 0, 0), Connection, "sorted-set", "7.0.0", "Intersect multiple sorted sets and return the cardinality of the result", &["@read", "@sortedset", "@slow"]),
    c("zrangestore", -5, &["write", "denyoom"], (1, 2, 1), Connection, "sorted-set", "6.2.0", "Store a range of members from sorted set into another key", &["@write", "@sortedset", "@slow"]),
    c("zmpop", -4, &["write", "movablekeys"], (0, 0, 0), Connection, "sorted-set", "7.0.0", "Remove and return members with scores in a sorted set", &["@write", "@sortedset", "@slow"]),
    c("bzpopmin", -3, &["write", "noscript", "blocking", "fast"], (1, -2, 1), Connection, "sorted-set", "5.0.0", "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available", &["@write", "@sortedset", "@fast", "@blocking"]),
    c("bzpopmax", -3, &["write", "noscript", "blocking", "fast"], (1, -2, 1), Connection, "sorted-set", "5.0.0", "Remove and return the member with the highest score from one or more sorted sets, or block until one is available", &["@write", "@sortedset", "@fast", "@blocking"]),
    c("bzmpop", -5, &["write", "blocking", "movablekeys"], K0, Connection, "sorted-set", "7.0.0", "Remove and return members with scores in a sorted set or block until one is available", &["@write", "@sortedset", "@slow", "@blocking"]),
    c("zscan", -3, &["readonly"], (1, 1, 1), SingleKey, "sorted-set", "2.8.0", "Incrementally iterate sorted sets elements and associated scores", &["@read", "@sortedset", "@slow"]),
    // connection (served by the connection loop)
    c("ping", -1, &["fast"], K0, Connection, "connection", "1.0.0", "Ping the server", &["@fast", "@connection"]),
    c("echo", 2, &["loading", "stale", "fast"], K0, Connection, "connection", "1.0.0", "Echo the given string", &["@fast", "@connection"]),
    c("select", 2, &["loading", "stale", "fast"], K0, Connection, "connection", "1.0.0", "Change the selected database for the current connection", &["@fast", "@connection"]),
    c("quit", -1, NO_AUTH, K0, Connection, "connection", "1.0.0", "Close the connection", &["@fast", "@connection"]),
    c("reset", 1, NO_AUTH, K0, Connection, "connection", "6.2.0", "Reset the connection", &["@fast", "@connection"]),
    // pubsub (served by the connection: connection/commands/pubsub.rs)
    c("subscribe", -2, PUBSUB_NOSCRIPT, K0, Connection, "pubsub", "2.0.0", "Listen for messages published to the given channels", &["@pubsub", "@slow"]),
    c("psubscribe", -2, PUBSUB_NOSCRIPT, K0, Connection, "pubsub", "2.0.0", "Listen for messages published to channels matching the given patterns", &["@pubsub", "@slow"]),
    c("unsubscribe", -1, PUBSUB_NOSCRIPT, K0, Connection, "pubsub", "2.0.0", "Stop listening for messages posted to the given channels", &["@pubsub", "@slow"]),
    c("punsubscribe", -1, PUBSUB_NOSCRIPT, K0, Connection, "pubsub", "2.0.0", "Stop listening for messages posted to channels matching the given patterns", &["@pubsub", "@slow"]),
    c("publish", 3, &["pubsub", "loading", "stale", "fast"], K0, Connection, "pubsub", "2.0.0", "Post a message to a channel", &["@pubsub", "@fast"]),
    c("pubsub", -2, &[], K0, Connection, "pubsub", "2.8.0", "A container for Pub/Sub commands", &["@slow"]),
    // transactions (served by the connection: connection/transaction.rs)
    c("multi", 1, TX_FAST, K0, Connection, "transactions", "1.2.0", "Mark the start of a transaction block", &["@fast", "@transaction"]),
    c("exec", 1, &["noscript", "loading", "stale", "skip_slowlog"], K0, Connection, "transactions", "1.2.0", "Execute all commands issued after MULTI", &["@slow", "@transaction"]),
    c("discard", 1, TX_FAST, K0, Connection, "transactions", "2.0.0", "Discard all commands issued after MULTI", &["@fast", "@transaction"]),
    c("watch", -2, TX_FAST, KN, Connection, "transactions", "2.2.0", "Watch the given keys to determine execution of the MULTI/EXEC block", &["@fast", "@transaction"]),
    c("unwatch", 1, TX_FAST, K0, Connection, "transactions", "2.2.0", "Forget about all watched keys", &["@fast", "@transaction"]),
    c("hello", -1, NO_AUTH, K0, Connection, "connection", "6.0.0", "Handshake with Redis", &["@fast", "@connection"]),
    c("auth", -2, NO_AUTH, K0, Connection, "connection", "1.0.0", "Authenticate to the server", &["@fast", "@connection"]),
    c("client", -2, &[], K0, Connection, "connection", "2.4.0", "A container for client connection commands", &["@slow"]),
    // server (served by the connection loop)
    c("bgrewriteaof", 1, &["admin", "noscript", "no_async_loading"], K0, Connection, "server", "1.0.0", "Asynchronously rewrite the append-only file", &["@admin", "@slow", "@dangerous"]),
    c("bgsave", -1, &["admin", "noscript", "no_async_loading"], K0, Connection, "server", "1.0.0", "Asynchronously save the dataset to disk", &["@admin", "@slow", "@dangerous"]),
    c("save", 1, &["admin", "noscript", "no_async_loading", "no_multi"], K0, Connection, "server", "1.0.0", "Synchronously save the dataset to disk", &["@admin", "@slow", "@dangerous"]),
    c("lastsave", 1, &["loading", "stale", "fast"], K0, Connection, "server", "1.0.0", "Get the UNIX time stamp of the last successful save to disk", &["@admin", "@fast", "@dangerous"]),
    c("info", -1, &["loading", "stale"], K0, Connection, "server", "1.0.0", "Get information and statistics about the server", &["@slow", "@dangerous"]),
    c("config", -2, &[], K0, Connection, "server", "2.0.0", "A container for server configuration commands", &["@slow"]),
    c("command", -1, &["loading", "stale"], K0, Connection, "server", "2.8.13", "Get array of Redis command details", &["@slow", "@connection"]),
    c("time", 1, &["loading", "stale", "fast"], K0, Connection, "server", "2.6.0", "Return the current server time", &["@fast"]),
    c("shutdown", -1, &["admin", "noscript", "loading", "stale", "no_multi", "allow_busy"], K0, Connection, "server", "1.0.0", "Synchronously save the dataset to disk and then shut down the server", &["@admin", "@slow", "@dangerous"]),
    c("debug", -2, &["admin", "noscript", "loading", "stale"], K0, Connection, "server", "1.0.0", "A container for debugging commands", &["@admin", "@slow", "@dangerous"]),
    // introspection (connection/commands/object.rs, slowlog.rs)
    c("object", -2, &[], K0, Connection, "generic", "2.2.3", "A container for object introspection commands", &["@slow"]),
    c("memory", -2, &[], K0, Connection, "server", "4.0.0", "A container for memory diagnostics commands", &["@slow"]),
    c("slowlog", -2, &[], K0, Connection, "server", "2.2.12", "A container for slow log commands", &["@slow"]),
    // scripting (connection/commands/scripting.rs, functions.rs)
    c("eval", -3, SCRIPT_RUN, K0, Connection, "scripting", "2.6.0", "Execute a Lua script server side", &["@slow", "@scripting"]),
    c("evalsha", -3, SCRIPT_RUN, K0, Connection, "scripting", "2.6.0", "Execute a Lua script server side", &["@slow", "@scripting"]),
    c("eval_ro", -3, SCRIPT_RUN_RO, K0, Connection, "scripting", "7.0.0", "Execute a read-only Lua script server side", &["@slow", "@scripting"]),
    c("evalsha_ro", -3, SCRIPT_RUN_RO, K0, Connection, "scripting", "7.0.0", "Execute a read-only Lua script server side", &["@slow", "@scripting"]),
    c("fcall", -3, SCRIPT_RUN, K0, Connection, "scripting", "7.0.0", "Invoke a function", &["@slow", "@scripting"]),
    c("fcall_ro", -3, SCRIPT_RUN_RO, K0, Connection, "scripting", "7.0.0", "Invoke a read-only function", &["@slow", "@scripting"]),
    c("function", -2, &[], K0, Connection, "scripting", "7.0.0", "A container for function commands", &["@slow"]),
    // cluster: standalone only, every subcommand answers as Redis without cluster support
    c("cluster", -2, &[], K0, Connection, "cluster", "3.0.0", "A container for cluster commands", &["@slow"]),
    c("script", -2, &[], K0, Connection, "scripting", "2.6.0", "A container for Lua scripts management commands", &["@slow"]),
];

/// Looks a command up by name, ASCII case-insensitively, without allocating: one or two
/// name comparisons in the name's bucket of [`NAME_INDEX`], not a scan of the table.
#[inline]
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    let bucket = bucket_of(name)?;
    let rows = NAME_INDEX
        .rows
        .get(usize::from(NAME_INDEX.starts[bucket])..usize::from(NAME_INDEX.starts[bucket + 1]))?;
    rows.iter()
        .map(|&row| &COMMANDS[usize::from(row)])
        .find(|spec| spec.name.as_bytes().eq_ignore_ascii_case(name))
}

/// Names are bucketed by length (below this) and first letter.
const NAME_LEN_LIMIT: usize = 32;
const BUCKETS: usize = NAME_LEN_LIMIT * 32;

/// The bucket of `name`: its length and first letter ASCII-lowercased; `None` for a name no
/// command has (empty, or too long).
const fn bucket_of(name: &[u8]) -> Option<usize> {
    match name.first() {
        Some(&first) if name.len() < NAME_LEN_LIMIT => {
            Some(name.len() * 32 + (first.to_ascii_lowercase() & 31) as usize)
        }
        _ => None,
    }
}

/// The table's rows grouped by [`bucket_of`] their name, computed at compile time: a counting
/// sort, so the rows of bucket `b` are `rows[starts[b]..starts[b + 1]]`.
struct NameIndex {
    starts: [u16; BUCKETS + 1],
    rows: [u16; COMMANDS.len()],
}

static NAME_INDEX: NameIndex = NameIndex::build();

impl NameIndex {
    const fn build() -> Self {
        let mut starts = [0u16; BUCKETS + 1];
        let mut row = 0;
        while row < COMMANDS.len() {
            match bucket_of(COMMANDS[row].name.as_bytes()) {
                Some(bucket) => starts[bucket + 1] += 1,
                None => panic!("a command name too long for the name index"),
            }
            row += 1;
        }
        let mut bucket = 0;
        while bucket < BUCKETS {
            starts[bucket + 1] += starts[bucket];
            bucket += 1;
        }
        let mut next = starts;
        let mut rows = [0u16; COMMANDS.len()];
        let mut row = 0;
        while row < COMMANDS.len() {
            if let Some(bucket) = bucket_of(COMMANDS[row].name.as_bytes()) {
                rows[next[bucket] as usize] = row as u16;
                next[bucket] += 1;
            }
            row += 1;
        }
        NameIndex { starts, rows }
    }
}

/// Position of `spec` in [`all`], when it is a row of the table: per-command counters (INFO
/// commandstats) are indexed by it. O(1).
pub fn index_of(spec: &'static CommandSpec) -> Option<usize> {
    let offset = (spec as *const CommandSpec as usize).checked_sub(COMMANDS.as_ptr() as usize)?;
    let index = offset / std::mem::size_of::<CommandSpec>();
    (index < COMMANDS.len() && std::ptr::eq(&COMMANDS[index], spec)).then_some(index)
}

/// Every command in the table (COMMAND, COMMAND COUNT, COMMAND DOCS).
pub fn all() -> &'static [CommandSpec] {
    COMMANDS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_is_case_insensitive() {
        assert_eq!(lookup(b"GeT").map(|s| s.name), Some("get"));
        assert_eq!(lookup(b"nosuch"), None);
        assert_eq!(lookup(b""), None);
        assert_eq!(lookup(&[b'g'; 40]), None);
        assert_eq!(lookup(b"\xffet"), None);
    }

    #[test]
    fn lookup_finds_every_row_in_any_case() {
        for spec in all() {
            assert!(spec.name.len() < NAME_LEN_LIMIT, "{}", spec.name);
            let upper = spec.name.to_ascii_uppercase();
            for name in [spec.name, upper.as_str()] {
                let found = lookup(name.as_bytes()).map(|s| s as *const CommandSpec);
                assert_eq!(found, Some(spec as *const CommandSpec), "{name}");
            }
        }
    }

    #[test]
    fn arity() {
        let get = lookup(b"get").copied();
        assert_eq!(
            get.map(|s| (s.arity_ok(2), s.arity_ok(1), s.arity_ok(3))),
            Some((true, false, false))
        );
        let set = lookup(b"set").copied();
        assert_eq!(
            set.map(|s| (s.arity_ok(2), s.arity_ok(3), s.arity_ok(9))),
            Some((false, true, true))
        );
    }

    #[test]
    fn table_is_consistent() {
        for (i, spec) in all().iter().enumerate() {
            assert_eq!(spec.name, spec.name.to_ascii_lowercase());
            assert!(
                all()[..i].iter().all(|o| o.name != spec.name),
                "duplicate {}",
                spec.name
            );
            // WATCH and the composed commands name keys (COMMAND INFO says so) but are
            // answered by the connection.
            let keyed =
                spec.first_key > 0 && spec.name != "watch" && !COMPOSED.contains(&spec.name);
            assert_eq!(
                keyed,
                matches!(spec.routing, SingleKey | MultiKey { .. }),
                "{}",
                spec.name
            );
            assert!(spec.arity != 0);
        }
        assert_eq!(
            lookup(b"mset").map(|s| s.routing),
            Some(MultiKey { step: 2 })
        );
        assert_eq!(lookup(b"auth").map(|s| s.has_flag("no_auth")), Some(true));
        for name in COMPOSED {
            assert_eq!(lookup(name.as_bytes()).map(|s| s.routing), Some(Connection));
        }
    }
}
