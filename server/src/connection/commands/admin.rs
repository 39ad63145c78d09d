//! SHUTDOWN.

use bytes::Bytes;

use crate::resp::Frame;

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
