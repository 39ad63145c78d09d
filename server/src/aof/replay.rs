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
use crate::cmd::databases::{db_index, execute_in};
use crate::cmd::lookup;
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
    /// `false` when the record is sound but this start cannot apply it (a `SELECT` beyond
    /// `--databases`): cutting the file there would only lose records.
    pub fixable: bool,
}

/// Why a record could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyError {
    /// What was wrong.
    pub message: String,
    /// As [`Fault::fixable`].
    pub fixable: bool,
}

impl From<String> for ApplyError {
    /// A record that is wrong in itself (e.g. an unknown command).
    fn from(message: String) -> Self {
        Self {
            message,
            fixable: true,
        }
    }
}

/// The record walk shared by replay and `shardline check-aof`: fed the file's bytes in
/// order, it hands each complete command outside a transaction, and each whole transaction
/// (its commands without MULTI/EXEC), to an `apply` callback.
#[derive(Default)]
pub struct Scanner {
    /// Records decoded (MULTI and EXEC included).
    pub records: u64,
    /// Offset after the last applied command or EXEC: the valid length so far.
    pub committed: u64,
    multi: Option<(u64, Vec<Vec<Bytes>>)>,
}

/// The callback a [`Scanner`] applies commands with; an error is a fault at that record.
pub type Apply<'a> = dyn FnMut(&[Vec<Bytes>]) -> Result<(), ApplyError> + 'a;

impl Scanner {
    /// Consumes the complete records at the front of `buf` (which starts at file offset
    /// `base`) and returns how many bytes they took; a record cut short is left unconsumed.
    pub fn feed(&mut self, buf: &[u8], base: u64, apply: &mut Apply<'_>) -> Result<usize, Fault> {
        let mut pos = 0;
        loop {
            let offset = base + pos as u64;
            let fault = |message: String| Fault {
                offset,
                truncated: false,
                message,
                fixable: true,
            };
            let apply_fault = |at: u64| {
                move |err: ApplyError| Fault {
                    offset: at,
                    truncated: false,
                    message: err.message,
                    fixable: err.fixable,
                }
            };
            let (args, len) = match decode(&buf[pos..]) {
                Ok(record) => record,
                Err(DecodeError::Truncated) => return Ok(pos),
                Err(DecodeError::Invalid(expected)) => {
                    return Err(fault(format!("bad record: expected {expected}")))
                }
            };
            pos += len;
            self.records += 1;
            let name = args[0].to_ascii_lowercase();
            match (name.as_slice(), self.multi.is_some()) {
                (b"multi", false) => self.multi = Some((offset, Vec::new())),
                (b"exec", true) => {
                    if let Some((start, queued)) = self.multi.take() {
                        apply(&queued).map_err(apply_fault(start))?;
                    }
                    self.committed = base + pos as u64;
                }
                (b"multi" | b"exec", _) => return Err(fault("MULTI/EXEC out of order".into())),
                (_, true) => {
                    if let Some((_, queued)) = &mut self.multi {
                        queued.push(args);
                    }
                }
                (_, false) => {
                    apply(&[args]).map_err(apply_fault(offset))?;
                    self.committed = base + pos as u64;
                }
            }
        }
    }

    /// Ends the walk at end of file, `size` bytes: the valid length, or a truncation fault
    /// when the file ends inside a record or a transaction.
    pub fn finish(self, size: u64) -> Result<u64, Fault> {
        if self.committed == size {
            return Ok(size);
        }
        Err(Fault {
            offset: self.committed,
            truncated: true,
            message: "the file ends inside a record or a transaction".into(),
            fixable: true,
        })
    }
}

/// Walks every record of `file` with a [`Scanner`], reading through io_uring; returns the
/// valid length of the file or the first fault.
pub async fn scan(file: &BufferedFile, apply: &mut Apply<'_>) -> Result<u64, Fault> {
    let mut scanner = Scanner::default();
    let mut buf: Vec<u8> = Vec::new();
    let mut base = 0u64; // file offset of buf[0]
    loop {
        let at = base + buf.len() as u64;
        let read = file.read_at(at, READ_CHUNK).await.map_err(|err| Fault {
            offset: at,
            truncated: false,
            message: format!("read failed: {err}"),
            fixable: false,
        })?;
        if read.is_empty() {
            return scanner.finish(at);
        }
        buf.extend_from_slice(&read);
        let used = scanner.feed(&buf, base, apply)?;
        buf.drain(..used);
        base += used as u64;
    }
}

/// Walks the records of `bytes` (a whole log in memory: `shardline check-aof`) without
/// applying them; returns the valid length or the first fault.
pub fn check(bytes: &[u8]) -> Result<u64, Fault> {
    let mut scanner = Scanner::default();
    scanner.feed(bytes, 0, &mut |commands| {
        for args in commands {
            if lookup(&args[0]).is_none() {
                return Err(unknown(&args[0]).into());
            }
        }
        Ok(())
    })?;
    scanner.finish(bytes.len() as u64)
}

fn unknown(name: &[u8]) -> String {
    format!("unknown command '{}'", String::from_utf8_lossy(name))
}

/// Applies one command (or one transaction's commands) to the databases `dbs` with expiry
/// suspended; `selected` is the database the file's last `SELECT` chose (0 at the start of
/// every file) and follows the `SELECT`s applied here. An unknown command, or a `SELECT`
/// outside `dbs` (a log written with more `--databases`), is a fault and changes nothing; a
/// command that replies with an error (e.g. WRONGTYPE) changed nothing when it first ran
/// either.
pub fn apply(
    dbs: &mut [Db],
    selected: &mut usize,
    commands: &[Vec<Bytes>],
) -> Result<(), ApplyError> {
    for args in commands {
        let Some(spec) = lookup(&args[0]) else {
            return Err(unknown(&args[0]).into());
        };
        if spec.name == "select" {
            select_index(args, dbs.len())?;
        }
    }
    for args in commands {
        if lookup(&args[0]).is_some_and(|spec| spec.name == "select") {
            *selected = select_index(args, dbs.len())?;
            continue;
        }
        if let Frame::Error(message) = execute_in(dbs, *selected, args, 0) {
            tracing::debug!("replayed command replied {message}");
        }
    }
    Ok(())
}

/// The database a logged `SELECT` names. Errors: a malformed record, or an index outside
/// `0..databases` (not fixable: the message names `--databases`).
fn select_index(args: &[Bytes], databases: usize) -> Result<usize, ApplyError> {
    let arg = args
        .get(1)
        .filter(|_| args.len() == 2)
        .ok_or_else(|| ApplyError::from("malformed SELECT record".to_owned()))?;
    db_index(arg, databases, None).map_err(|_| ApplyError {
        message: format!(
            "SELECT {}: no such database with --databases {databases} (the log was written \
             with more databases: start with a larger --databases)",
            String::from_utf8_lossy(arg)
        ),
        fixable: false,
    })
}

/// Replays `file` (at `path`, for messages) into the databases `dbs`, starting at database 0;
/// cuts off a truncated tail when
/// `cut_truncated` (an incremental file; a base file is written whole before use).
///
/// Errors: a one-line `path:offset: what` for a fault other than a truncated tail.
pub async fn replay(
    file: &BufferedFile,
    path: &str,
    dbs: &mut [Db],
    cut_truncated: bool,
) -> Result<Replayed, String> {
    let size = file
        .file_size()
        .await
        .map_err(|err| format!("{path}: {err}"))?;
    let mut records = 0;
    let mut selected = 0;
    let mut apply_counted = |commands: &[Vec<Bytes>]| {
        records += commands.len() as u64;
        apply(dbs, &mut selected, commands)
    };
    match scan(file, &mut apply_counted).await {
        Ok(end) => Ok(Replayed {
            records,
            size: end,
            truncated: 0,
        }),
        Err(fault) if fault.truncated && cut_truncated => {
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
        Err(fault) if !fault.fixable => Err(format!(
            "{path}:{}: {}; refusing to start",
            fault.offset, fault.message
        )),
        Err(fault) => Err(format!(
            "{path}:{}: {}. The log is corrupt before its end: refusing to start. To start \
             anyway, losing every record from that offset on, keep a copy and run \
             `shardline check-aof --fix {path}` (it truncates the file at {})",
            fault.offset, fault.message, fault.offset,
        )),
    }
}
