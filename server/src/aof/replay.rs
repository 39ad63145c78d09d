//! Recovery at start (Redis 7 `loadSingleAppendOnlyFile` with `aof-load-truncated yes`): the
//! shard reads its log through glommio's io_uring [`BufferedFile`] and applies each record to
//! its keyspace with expiry suspended (Redis does not expire keys while loading; deadlines are
//! absolute, so the sweep removes the expired ones afterwards).
//!
//! A record cut short at the end of the file (a crash mid-write), or a `MULTI` without its
//! `EXEC` at the end, is cut off: the file is truncated there and a warning names file and
//! offset. Any other malformed record refuses the start with `file:offset`.

use bytes::Bytes;
use glommio::io::BufferedFile;
use tracing::warn;

use super::record::{decode, DecodeError};
use crate::cmd::{self, lookup};
use crate::keyspace::Db;
use crate::resp::Frame;

/// Bytes read per request.
const READ_CHUNK: usize = 1 << 20;

/// What a replay did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Replayed {
    /// Commands applied (those inside a transaction included; MULTI/EXEC not).
    pub records: u64,
    /// Length of the valid log, bytes (the file is truncated to it when longer).
    pub size: u64,
    /// Bytes cut off the end (a truncated last record), 0 when none.
    pub truncated: u64,
}

/// A fault found while checking or replaying a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// Offset of the first byte of the bad record.
    pub offset: u64,
    /// `true` when the file just ends inside the record (or transaction).
    pub truncated: bool,
    /// What was wrong.
    pub message: String,
}

/// Walks the records of `file` in order, calling `apply` on each complete command outside a
/// transaction and on each whole transaction (its commands without MULTI/EXEC). Returns the
/// count of records and the offset after the last complete one, or the first fault.
pub async fn scan(
    file: &BufferedFile,
    mut apply: impl FnMut(&[Vec<Bytes>]) -> Result<(), String>,
) -> Result<(u64, u64), Fault> {
    let mut buf: Vec<u8> = Vec::new();
    let mut buf_start = 0u64; // file offset of buf[0]
    let mut eof = false;
    let mut records = 0u64;
    let mut multi: Option<(u64, Vec<Vec<Bytes>>)> = None;
    let mut committed = 0u64; // offset after the last applied command or EXEC
    let mut pos = 0usize; // in buf
    loop {
        match decode(&buf[pos..]) {
            Ok((args, len)) => {
                let offset = buf_start + pos as u64;
                pos += len;
                records += 1;
                let name = args[0].to_ascii_lowercase();
                match (name.as_slice(), &mut multi) {
                    (b"multi", None) => multi = Some((offset, Vec::new())),
                    (b"exec", Some(_)) => {
                        if let Some((start, queued)) = multi.take() {
                            apply(&queued).map_err(|message| Fault {
                                offset: start,
                                truncated: false,
                                message,
                            })?;
                        }
                        committed = buf_start + pos as u64;
                    }
                    (b"multi" | b"exec", _) => {
                        return Err(Fault {
                            offset,
                            truncated: false,
                            message: "MULTI/EXEC out of order".into(),
                        })
                    }
                    (_, Some((_, queued))) => queued.push(args),
                    (_, None) => {
                        apply(&[args]).map_err(|message| Fault {
                            offset,
                            truncated: false,
                            message,
                        })?;
                        committed = buf_start + pos as u64;
                    }
                }
            }
            Err(DecodeError::Truncated) if !eof => {
                buf.drain(..pos);
                buf_start += pos as u64;
                pos = 0;
                let read = file
                    .read_at(buf_start + buf.len() as u64, READ_CHUNK)
                    .await
                    .map_err(|err| Fault {
                        offset: buf_start + buf.len() as u64,
                        truncated: false,
                        message: format!("read failed: {err}"),
                    })?;
                eof = read.is_empty();
                buf.extend_from_slice(&read);
            }
            Err(DecodeError::Truncated) => {
                if pos == buf.len() && multi.is_none() {
                    return Ok((records, committed));
                }
                let offset = multi.map_or(buf_start + pos as u64, |(start, _)| start);
                return Err(Fault {
                    offset,
                    truncated: true,
                    message: "the file ends inside a record or a transaction".into(),
                });
            }
            Err(DecodeError::Invalid(expected)) => {
                return Err(Fault {
                    offset: buf_start + pos as u64,
                    truncated: false,
                    message: format!("bad record: expected {expected}"),
                })
            }
        }
    }
}

/// Applies one command (or one transaction's commands) to `db` with expiry suspended. An
/// unknown command is a fault (the log was not written by this server); a command that
/// replies with an error (e.g. WRONGTYPE) changed nothing when it first ran either.
pub fn apply(db: &mut Db, commands: &[Vec<Bytes>]) -> Result<(), String> {
    for args in commands {
        if lookup(&args[0]).is_none() {
            return Err(format!(
                "unknown command '{}'",
                String::from_utf8_lossy(&args[0])
            ));
        }
    }
    for args in commands {
        if let Frame::Error(message) = cmd::execute(db, args, 0) {
            tracing::debug!("replayed command replied {message}");
        }
    }
    Ok(())
}

/// Replays `file` (at `path`, for messages) into `db`; cuts off a truncated tail.
///
/// Errors: a one-line `path:offset: what` for a fault other than a truncated tail.
pub async fn replay(file: &BufferedFile, path: &str, db: &mut Db) -> Result<Replayed, String> {
    let size = file
        .file_size()
        .await
        .map_err(|err| format!("{path}: {err}"))?;
    let mut records = 0;
    match scan(file, |commands| {
        records += commands.len() as u64;
        apply(db, commands)
    })
    .await
    {
        Ok((_, end)) => Ok(Replayed {
            records,
            size: end,
            truncated: 0,
        }),
        Err(fault) if fault.truncated => {
            warn!(
                "{path}:{}: {}; cutting off the last {} byte(s) (the incomplete last write of \
                 a crash) and continuing",
                fault.offset,
                fault.message,
                size - fault.offset
            );
            file.truncate(fault.offset)
                .await
                .map_err(|err| format!("{path}: cannot truncate: {err}"))?;
            Ok(Replayed {
                records,
                size: fault.offset,
                truncated: size - fault.offset,
            })
        }
        Err(fault) => Err(format!(
            "{path}:{}: {}. The log is corrupt before its end: refusing to start. To start \
             anyway, losing every record from that offset on, truncate the file there \
             (`truncate -s {} {path}`) after keeping a copy",
            fault.offset, fault.message, fault.offset,
        )),
    }
}
