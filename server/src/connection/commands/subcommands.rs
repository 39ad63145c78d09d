//! Subcommands of the container commands (CLIENT, CONFIG, COMMAND, …) as Redis 7.0's
//! COMMAND INFO / COMMAND LIST report them (`container|subcommand`): arity, flags, key range
//! and ACL categories. Containers absent from the command table are not shown.

/// One subcommand row.
#[derive(Debug)]
pub struct SubcommandSpec {
    /// Lowercase subcommand name, without the container.
    pub name: &'static str,
    /// Redis arity, counting the container and the subcommand.
    pub arity: i32,
    /// Command flags.
    pub flags: &'static [&'static str],
    /// First key, last key, step (0, 0, 0 = no keys).
    pub keys: (i32, i32, i32),
    /// ACL categories.
    pub acl_categories: &'static [&'static str],
}

/// A keyless subcommand.
const fn s(
    name: &'static str,
    arity: i32,
    flags: &'static [&'static str],
    acl_categories: &'static [&'static str],
) -> SubcommandSpec {
    let mut spec = keyed(name, arity, flags, acl_categories);
    spec.keys = (0, 0, 0);
    spec
}

/// A subcommand whose one key is its third argument (`OBJECT ENCODING key`).
const fn keyed(
    name: &'static str,
    arity: i32,
    flags: &'static [&'static str],
    acl_categories: &'static [&'static str],
) -> SubcommandSpec {
    SubcommandSpec {
        name,
        arity,
        flags,
        keys: (2, 2, 1),
        acl_categories,
    }
}

const KEYSPACE_READ: &[&str] = &["@keyspace", "@read", "@slow"];
const ADMIN: &[&str] = &["admin", "noscript", "loading", "stale"];
const SLOW_CONN: &[&str] = &["@slow", "@connection"];
const ADMIN_CONN: &[&str] = &["@admin", "@slow", "@dangerous", "@connection"];
const ADMIN_SLOW: &[&str] = &["@admin", "@slow", "@dangerous"];
const LOADING_STALE: &[&str] = &["loading", "stale"];
const SCRIPT: &[&str] = &["@slow", "@scripting"];

static CLIENT: &[SubcommandSpec] = &[
    s("getname", 2, &["noscript", "loading", "stale"], SLOW_CONN),
    s("help", 2, LOADING_STALE, SLOW_CONN),
    s("id", 2, &["noscript", "loading", "stale"], SLOW_CONN),
    s("info", 2, &["noscript", "loading", "stale"], SLOW_CONN),
    s("kill", -3, ADMIN, ADMIN_CONN),
    s("list", -2, ADMIN, ADMIN_CONN),
    s("no-evict", 3, ADMIN, ADMIN_CONN),
    s("pause", -3, ADMIN, ADMIN_CONN),
    s("reply", 3, &["noscript", "loading", "stale"], SLOW_CONN),
    s("setinfo", 4, &["noscript", "loading", "stale"], SLOW_CONN),
    s("setname", 3, &["noscript", "loading", "stale"], SLOW_CONN),
    s("unblock", -3, ADMIN, ADMIN_CONN),
    s("unpause", 2, ADMIN, ADMIN_CONN),
];

static CONFIG: &[SubcommandSpec] = &[
    s(
        "get",
        -3,
        &["admin", "noscript", "loading", "stale"],
        ADMIN_SLOW,
    ),
    s("help", 2, LOADING_STALE, &["@slow"]),
    s(
        "resetstat",
        2,
        &["admin", "noscript", "loading", "stale"],
        ADMIN_SLOW,
    ),
    s(
        "rewrite",
        2,
        &["admin", "noscript", "loading", "stale"],
        ADMIN_SLOW,
    ),
    s(
        "set",
        -4,
        &["admin", "noscript", "loading", "stale"],
        ADMIN_SLOW,
    ),
];

static COMMAND: &[SubcommandSpec] = &[
    s("count", 2, LOADING_STALE, SLOW_CONN),
    s("docs", -2, LOADING_STALE, SLOW_CONN),
    s("getkeys", -3, LOADING_STALE, SLOW_CONN),
    s("getkeysandflags", -3, LOADING_STALE, SLOW_CONN),
    s("help", 2, LOADING_STALE, SLOW_CONN),
    s("info", -2, LOADING_STALE, SLOW_CONN),
    s("list", -2, LOADING_STALE, SLOW_CONN),
];

static SCRIPT_SUBS: &[SubcommandSpec] = &[
    s("debug", 3, &["noscript"], SCRIPT),
    s("exists", -3, &["noscript"], SCRIPT),
    s("flush", -2, &["noscript"], SCRIPT),
    s("help", 2, &["loading", "stale"], SCRIPT),
    s("kill", 2, &["noscript", "allow_busy"], SCRIPT),
    s("load", 3, &["noscript", "stale"], SCRIPT),
];

const STALE: &[&str] = &["stale"];
const SLOW: &[&str] = &["@slow"];

/// Those of Redis 7.0's CLUSTER subcommands a client of a standalone server is likely to
/// send; each is answered with Redis's `cluster support disabled` error.
static CLUSTER: &[SubcommandSpec] = &[
    s("countkeysinslot", 3, STALE, SLOW),
    s("getkeysinslot", 4, STALE, SLOW),
    s("help", 2, LOADING_STALE, SLOW),
    s("info", 2, STALE, SLOW),
    s("keyslot", 3, STALE, SLOW),
    s("myid", 2, STALE, SLOW),
    s("nodes", 2, STALE, SLOW),
    s(
        "reset",
        -2,
        &["admin", "stale", "noscript"],
        &["@admin", "@slow", "@dangerous"],
    ),
    s("shards", 2, STALE, SLOW),
    s("slots", 2, STALE, SLOW),
];

static FUNCTION: &[SubcommandSpec] = &[
    s(
        "delete",
        3,
        &["write", "noscript"],
        &["@write", "@slow", "@scripting"],
    ),
    s("dump", 2, &["noscript"], SCRIPT),
    s(
        "flush",
        -2,
        &["write", "noscript"],
        &["@write", "@slow", "@scripting"],
    ),
    s("help", 2, &["loading", "stale"], SCRIPT),
    s("kill", 2, &["noscript", "allow_busy"], SCRIPT),
    s("list", -2, &["noscript"], SCRIPT),
    s(
        "load",
        -3,
        &["write", "denyoom", "noscript"],
        &["@write", "@slow", "@scripting"],
    ),
    s(
        "restore",
        -3,
        &["write", "denyoom", "noscript"],
        &["@write", "@slow", "@scripting"],
    ),
    s("stats", 2, &["noscript", "allow_busy"], SCRIPT),
];

static MEMORY: &[SubcommandSpec] = &[
    s("doctor", 2, &[], &["@slow"]),
    s("help", 2, LOADING_STALE, &["@slow"]),
    s("malloc-stats", 2, &[], &["@slow"]),
    s("purge", 2, &[], &["@slow"]),
    s("stats", 2, &[], &["@slow"]),
    keyed("usage", -3, &["readonly"], &["@read", "@slow"]),
];

static OBJECT: &[SubcommandSpec] = &[
    keyed("encoding", 3, &["readonly"], KEYSPACE_READ),
    keyed("freq", 3, &["readonly"], KEYSPACE_READ),
    s("help", 2, LOADING_STALE, &["@keyspace", "@slow"]),
    keyed("idletime", 3, &["readonly"], KEYSPACE_READ),
    keyed("refcount", 3, &["readonly"], KEYSPACE_READ),
];

static SLOWLOG: &[SubcommandSpec] = &[
    s("get", -2, &["admin", "loading", "stale"], ADMIN_SLOW),
    s("help", 2, LOADING_STALE, &["@slow"]),
    s("len", 2, &["admin", "loading", "stale"], ADMIN_SLOW),
    s("reset", 2, &["admin", "loading", "stale"], ADMIN_SLOW),
];

const PUBSUB_STALE: &[&str] = &["pubsub", "loading", "stale"];
const PUBSUB_SLOW: &[&str] = &["@pubsub", "@slow"];

static PUBSUB: &[SubcommandSpec] = &[
    s("channels", -2, PUBSUB_STALE, PUBSUB_SLOW),
    s("help", 2, LOADING_STALE, &["@slow"]),
    s("numpat", 2, PUBSUB_STALE, PUBSUB_SLOW),
    s("numsub", -2, PUBSUB_STALE, PUBSUB_SLOW),
    s("shardchannels", -2, PUBSUB_STALE, PUBSUB_SLOW),
    s("shardnumsub", -2, PUBSUB_STALE, PUBSUB_SLOW),
];

/// The subcommands of `container` (lowercase), empty for a plain command.
pub fn of(container: &str) -> &'static [SubcommandSpec] {
    match container {
        "client" => CLIENT,
        "config" => CONFIG,
        "command" => COMMAND,
        "script" => SCRIPT_SUBS,
        "cluster" => CLUSTER,
        "function" => FUNCTION,
        "memory" => MEMORY,
        "object" => OBJECT,
        "slowlog" => SLOWLOG,
        "pubsub" => PUBSUB,
        _ => &[],
    }
}

/// The subcommand `name` (any case) of `container`.
pub fn lookup(container: &str, name: &[u8]) -> Option<&'static SubcommandSpec> {
    of(container)
        .iter()
        .find(|s| s.name.as_bytes().eq_ignore_ascii_case(name))
}

/// The canonical name of subcommand `arg` of `container`, if it is one (CLIENT LIST's
/// `cmd=container|subcommand`). No allocation.
pub fn name_of(container: &str, arg: Option<&[u8]>) -> Option<&'static str> {
    arg.and_then(|arg| lookup(container, arg)).map(|s| s.name)
}
