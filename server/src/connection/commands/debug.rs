//! DEBUG (Redis 7.0 `debugCommand`), served only with `--enable-debug-command` (Redis's
//! `enable-debug-command`): the subcommands client and Redis test suites use, as far as they
//! mean something here. A Redis subcommand not served here is refused by name.

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;

use super::debug_data;
use crate::cmd::longdouble::{self, Ld};
use crate::connection::parse_memory;
use crate::connection::session::Session;
use crate::resp::{Frame, Protocol};
use crate::shard::Shard;

/// Longest `DEBUG SLEEP`, in seconds: a typo must not hang a shard for hours.
pub const MAX_DEBUG_SLEEP_SECONDS: f64 = 60.0;

/// Largest `DEBUG QUICKLIST-PACKED-THRESHOLD` Redis 7.0 accepts: 4 GiB - 1 MiB.
const MAX_PACKED_THRESHOLD: u64 = (1 << 32) - (1 << 20);

/// Redis 7.0 DEBUG subcommands that shardline does not serve (they act on Redis's own
/// structures, process, replication or scripting, or on an RDB file shardline does not have).
const NOT_SERVED: &[&str] = &[
    "SEGFAULT",
    "PANIC",
    "RESTART",
    "CRASH-AND-RECOVER",
    "ASSERT",
    "LOG",
    "LEAK",
    "DROP-CLUSTER-PACKET-FILTER",
    "SDSLEN",
    "LISTPACK",
    "QUICKLIST",
    "POPULATE",
    "SET-SKIP-CHECKSUM-VALIDATION",
    "AOF-FLUSH-SLEEP",
    "REPLICATE",
    "LUA-ALWAYS-REPLICATE-COMMANDS",
    "JMAP",
    "STRINGMATCH-LEN",
    "CHANGE-REPL-ID",
    "SET-DISABLE-DENY-SCRIPTS",
    "CONFIG-REWRITE-FORCE-ALL",
    "PAUSE-CRON",
    "DICT-RESIZING",
    "MALLCTL",
    "MALLCTL-STR",
    "CLIENT-EVICTION",
    "HTSTATS",
    "HTSTATS-KEY",
];

const HELP: &[&str] = &[
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "ERROR <string>",
    "    Return a Redis protocol error with <string> as message. Useful for clients",
    "    unit tests to simulate Redis errors.",
    "LOADAOF",
    "    Flush the append-only log to its files and reload it in memory.",
    "OBJECT <key>",
    "    Show low level info about the <key> and associated value.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Accepted and ignored here (lists are not stored as quicklists).",
    "RELOAD [option ...]",
    "    Round-trip every value through the DUMP/RESTORE encoder; with the append-only",
    "    log, rewrite it and reload the data from it. Valid <option> values:",
    "    * MERGE: conflicting keys will be loaded from the log (always the case here).",
    "    * NOFLUSH: the existing keys will not be removed before load.",
    "    * NOSAVE: do not rewrite the log first: load it as it is.",
    "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
    "    Accepted and ignored here (reply buffers are not resized by a cron).",
    "REPLYBUFFER RESIZING <0|1>",
    "    Accepted and ignored here.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "SLEEP <seconds>",
    "    Block the shard for <seconds> (a reactor stall).",
    "HELP",
    "    Prints this help.",
];

/// `DEBUG <subcommand> …` on a connection speaking `protocol`; see the module docs and
/// README ("DEBUG"). Errors as Redis: the option off, a wrong argument count or an unknown
/// subcommand (`ERR unknown subcommand or wrong number of arguments for '…'. Try DEBUG
/// HELP.`); a Redis subcommand not served here: `ERR DEBUG <NAME> is not supported by
/// shardline`.
pub async fn debug(shard: &Rc<Shard>, session: &Session, args: &[Bytes]) -> Frame {
    let protocol = session.protocol;
    if !shard.shared.config.enable_debug_command {
        return Frame::error(
            "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"no\", \
             you can enable it by restarting the server with --enable-debug-command.",
        );
    }
    let sub = args[1].to_ascii_uppercase();
    match (sub.as_slice(), args.len()) {
        (b"SLEEP", 3) => sleep(&args[2]),
        (b"ERROR", 3) => Frame::Error(String::from_utf8_lossy(&args[2]).into_owned()),
        (b"SET-ACTIVE-EXPIRE", 3) => {
            // Redis reads the flag with atoi: anything but a non-zero number turns it off.
            let on = crate::resp::num::parse_i64(&args[2]).is_some_and(|n| n != 0);
            shard.shared.active_expire.store(on, Ordering::Relaxed);
            Frame::ok()
        }
        (b"PROTOCOL", 3) => test_value(protocol, &args[2]),
        (b"QUICKLIST-PACKED-THRESHOLD", 3) => {
            match std::str::from_utf8(&args[2]).ok().and_then(parse_memory) {
                Some(size) if size <= MAX_PACKED_THRESHOLD => Frame::ok(),
                _ => Frame::error(
                    "ERR argument must be a memory value bigger than 1 and smaller than 4gb",
                ),
            }
        }
        (b"REPLYBUFFER", 4) => Frame::ok(),
        (b"DIGEST", 2) => debug_data::dataset_digest(shard, session.txn_scope).await,
        (b"DIGEST-VALUE", _) => debug_data::value_digests(shard, session.db, &args[2..]).await,
        (b"OBJECT", 3) => debug_data::object(shard, session.db, args[2].clone()).await,
        (b"RELOAD", _) => debug_data::reload(shard, session.txn_scope, &args[2..]).await,
        (b"LOADAOF", _) => debug_data::loadaof(shard, session.txn_scope).await,
        (b"HELP", 2) => Frame::Array(HELP.iter().map(|s| Frame::Simple((*s).into())).collect()),
        (name, _) if NOT_SERVED.iter().any(|n| n.as_bytes() == name) => Frame::error(format!(
            "ERR DEBUG {} is not supported by shardline",
            String::from_utf8_lossy(name)
        )),
        _ => Frame::error(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
            String::from_utf8_lossy(&args[1])
        )),
    }
}

/// `DEBUG SLEEP <seconds>` blocks this shard's reactor for that long (no yield: a deliberate
/// stall, for testing the stall detector). The seconds are parsed over the whole argument as
/// INCRBYFLOAT's increment is (Redis 7 `string2ld`: hex and exponents allowed, NUL, spaces,
/// NaN and infinities refused); a negative or invalid value is `ERR value is not a valid
/// float` where Redis's `strtod` would sleep 0 s.
fn sleep(arg: &[u8]) -> Frame {
    let seconds = match longdouble::parse(arg) {
        Some(Ld::Finite(s)) => Some(s.to_f64()).filter(|s| *s >= 0.0),
        Some(Ld::Inf) | None => None,
    };
    match seconds {
        None => Frame::error("ERR value is not a valid float"),
        Some(s) if s > MAX_DEBUG_SLEEP_SECONDS => Frame::error(format!(
            "ERR DEBUG SLEEP is limited to {MAX_DEBUG_SLEEP_SECONDS} seconds"
        )),
        Some(s) => {
            std::thread::sleep(Duration::from_secs_f64(s));
            Frame::ok()
        }
    }
}

/// The out-of-band push that `DEBUG PROTOCOL push` writes before its reply on a RESP3
/// connection (Redis 7.0: `>2 server-cpu-usage 42`), when `args` is that command and the
/// option is on.
pub fn push_before(shard: &Shard, protocol: Protocol, args: &[Bytes]) -> Option<Frame> {
    let is_push = args.len() == 3
        && args[1].eq_ignore_ascii_case(b"PROTOCOL")
        && args[2].eq_ignore_ascii_case(b"push");
    (is_push && protocol == Protocol::Resp3 && shard.shared.config.enable_debug_command).then(
        || {
            Frame::Push(vec![
                Frame::Bulk(Bytes::from_static(b"server-cpu-usage")),
                Frame::Integer(42),
            ])
        },
    )
}

/// `DEBUG PROTOCOL <type>`: Redis 7.0's test value of each reply type (RESP2 downgrades as
/// Redis's; `push` is refused in RESP2 as Redis refuses it).
fn test_value(protocol: Protocol, name: &[u8]) -> Frame {
    let bulk = |s: &'static str| Frame::Bulk(Bytes::from_static(s.as_bytes()));
    let ints = || (0..3).map(Frame::Integer).collect::<Vec<_>>();
    match name.to_ascii_lowercase().as_slice() {
        b"string" => bulk("Hello World"),
        b"integer" => Frame::Integer(12345),
        // Redis's literal 3.141, not pi.
        #[allow(clippy::approx_constant)]
        b"double" => Frame::Double(3.141),
        b"bignum" => Frame::BigNumber("1234567999999999999999999999999999999".into()),
        b"null" => Frame::Null,
        b"array" => Frame::Array(ints()),
        b"set" => Frame::Set(ints()),
        b"map" => Frame::Map(
            (0..3)
                .map(|j| (Frame::Integer(j), Frame::Boolean(j == 1)))
                .collect(),
        ),
        b"attrib" => Frame::Attribute {
            attributes: vec![(
                bulk("key-popularity"),
                Frame::Array(vec![bulk("key:123"), Frame::Integer(90)]),
            )],
            reply: Box::new(bulk("Some real reply following the attribute")),
        },
        b"push" if protocol == Protocol::Resp2 => {
            Frame::error("ERR RESP2 is not supported by this command")
        }
        // The push itself comes first, from `push_before`.
        b"push" => bulk("Some real reply following the push reply"),
        b"verbatim" => Frame::Verbatim {
            format: *b"txt",
            text: Bytes::from_static(b"This is a verbatim\nstring"),
        },
        b"true" => Frame::Boolean(true),
        b"false" => Frame::Boolean(false),
        _ => Frame::error(
            "ERR Wrong protocol type name. Please use one of the following: \
             string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
        ),
    }
}
