//! FUNCTION and SCRIPT: shardline runs no Lua, so no script or function can ever be loaded.
//! `FUNCTION FLUSH [ASYNC|SYNC]` therefore has nothing to delete and answers `+OK` honestly
//! (Redis's test harness sends it before every test group); every other FUNCTION or SCRIPT
//! subcommand is refused with an error naming what is missing.

use bytes::Bytes;

use crate::resp::Frame;

/// `FUNCTION <subcommand> …` (Redis 7.0 `functionFlushCommand` for FLUSH). Errors, as
/// Redis's: a FLUSH mode other than ASYNC/SYNC is `ERR FUNCTION FLUSH only supports
/// SYNC|ASYNC option`, more than one argument after FLUSH is the subcommand syntax error;
/// any other subcommand is not supported.
pub fn function(args: &[Bytes]) -> Frame {
    let sub = args[1].to_ascii_uppercase();
    if sub == b"FLUSH" {
        return match &args[2..] {
            [] => Frame::ok(),
            [mode] if mode.eq_ignore_ascii_case(b"ASYNC") || mode.eq_ignore_ascii_case(b"SYNC") => {
                Frame::ok()
            }
            [_] => Frame::error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option"),
            _ => Frame::error(
                "ERR unknown subcommand or wrong number of arguments for 'flush'. Try \
                 FUNCTION HELP.",
            ),
        };
    }
    not_supported("FUNCTION", &args[1])
}

/// `SCRIPT <subcommand> …`: not supported (no Lua).
pub fn script(args: &[Bytes]) -> Frame {
    not_supported("SCRIPT", &args[1])
}

fn not_supported(command: &str, sub: &[u8]) -> Frame {
    Frame::error(format!(
        "ERR {command} {} is not supported: shardline runs no scripts or functions (only \
         FUNCTION FLUSH, which has nothing to delete, is accepted)",
        String::from_utf8_lossy(sub).to_ascii_uppercase()
    ))
}
