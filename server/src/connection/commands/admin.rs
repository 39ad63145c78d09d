//! DEBUG: commands that can block a shard on purpose, served only with
//! `--enable-debug-command` (Redis 7's `enable-debug-command`); SHUTDOWN.

use std::time::Duration;

use bytes::Bytes;

use crate::cmd::longdouble::{self, Ld};
use crate::resp::Frame;
use crate::shard::Shard;

/// Longest `DEBUG SLEEP`, in seconds: a typo must not hang a shard for hours.
pub const MAX_DEBUG_SLEEP_SECONDS: f64 = 60.0;

/// `DEBUG SLEEP <seconds>` blocks this shard's reactor for that long (no yield: a deliberate
/// stall, for testing the stall detector). Errors as Redis when the option is off. The
/// seconds are parsed over the whole argument as INCRBYFLOAT's increment is (Redis 7
/// `string2ld`: hex and exponents allowed, NUL, spaces, NaN and infinities refused); a
/// negative or invalid value is `ERR value is not a valid float` where Redis's `strtod`
/// would sleep 0 s.
pub fn debug(shard: &Shard, args: &[Bytes]) -> Frame {
    if !shard.shared.config.enable_debug_command {
        return Frame::error(
            "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"no\", \
             you can enable it by restarting the server with --enable-debug-command.",
        );
    }
    let sub = args[1].to_ascii_uppercase();
    match (sub.as_slice(), args.len()) {
        (b"SLEEP", 3) => {
            let seconds = match longdouble::parse(&args[2]) {
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
        (b"HELP", _) => Frame::Array(
            [
                "DEBUG <subcommand> [<arg> ...]. Subcommands are:",
                "SLEEP <seconds>",
                "    Block the shard for <seconds> (a reactor stall).",
            ]
            .iter()
            .map(|s| Frame::Simple((*s).into()))
            .collect(),
        ),
        _ => Frame::error(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
            String::from_utf8_lossy(&args[1])
        )),
    }
}

/// `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]` (Redis 7.0): stops the server the way
/// SIGTERM does (every shard flushes and fdatasyncs its log, connections get their in-flight
/// replies, `--shutdown-timeout-ms` bounds it); the caller's connection closes without a
/// reply, as in Redis. SAVE/NOSAVE/NOW/FORCE change nothing here: the append-only log is always
/// flushed and there is no RDB file or replica to wait for. ABORT answers
/// `ERR No shutdown in progress.` (a shutdown here cannot be cancelled once started).
///
/// Errors: `ERR syntax error` for any other argument.
pub fn shutdown(args: &[Bytes]) -> Result<(), Frame> {
    let mut abort = false;
    for arg in &args[1..] {
        match arg.to_ascii_uppercase().as_slice() {
            b"NOSAVE" | b"SAVE" | b"NOW" | b"FORCE" => {}
            b"ABORT" => abort = true,
            _ => return Err(Frame::error("ERR syntax error")),
        }
    }
    if abort {
        return Err(Frame::error("ERR No shutdown in progress."));
    }
    tracing::info!("SHUTDOWN command: shutting down");
    signal_hook::low_level::raise(signal_hook::consts::SIGTERM)
        .map_err(|err| Frame::error(format!("ERR cannot start the shutdown: {err}")))
}
