//! Durability: one append-only log per shard (Redis 7 AOF semantics, README "Persistence").
//!
//! Every shard appends the write commands it executes, RESP-encoded, to
//! `<data-dir>/appendonlydir/shard-<N>.aof` ([`record`], [`propagate`]); a per-shard flusher
//! writes them with group commit ([`writer`]); at start each shard replays its own file before
//! it accepts connections ([`replay`]), all shards in parallel.
//! `<data-dir>/appendonlydir/shards` records the shard count the logs were written with: keys
//! are placed by owner shard, so a start with another `--smp` is refused.

pub mod check;
pub mod propagate;
pub mod record;
pub mod replay;
pub mod writer;

use std::path::{Path, PathBuf};
use std::rc::Rc;

use bytes::Bytes;
use clap::ValueEnum;
use glommio::io::OpenOptions;

use crate::cmd::lookup;
use crate::keyspace::Db;
use crate::resp::Frame;
pub use replay::Replayed;
pub use writer::{LogWriter, WriterStats};

/// `--appendonly`: whether the log is kept (Redis's `appendonly`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AppendOnly {
    /// Log every write and replay the log at start.
    Yes,
    /// Keep nothing: every key is lost at restart.
    No,
}

/// `--appendfsync`: when the log is forced to disk (Redis's `appendfsync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AppendFsync {
    /// A write's reply leaves only after its record is fdatasync'ed; one fdatasync covers
    /// every record appended on the shard while the previous one ran (group commit).
    Always,
    /// Records are written at once (they survive a crash of the process) and fdatasync'ed
    /// once a second (an OS crash or power loss loses up to about a second).
    Everysec,
    /// Records are written at once; the OS decides when they reach the disk.
    No,
}

/// The directory holding the logs (Redis 7's `appenddirname` default).
pub const DIR_NAME: &str = "appendonlydir";

/// `<data_dir>/appendonlydir`.
pub fn log_dir(data_dir: &Path) -> PathBuf {
    data_dir.join(DIR_NAME)
}

/// The log of shard `shard`.
pub fn log_path(data_dir: &Path, shard: usize) -> PathBuf {
    log_dir(data_dir).join(format!("shard-{shard}.aof"))
}

/// Prepares `<data_dir>/appendonlydir` for `shards` shards before the shards start (plain
/// `std::fs`: it runs on the main thread, not on a reactor).
///
/// Errors: the directory cannot be created, or holds logs written by another number of shards
/// (their keys would be served by the wrong shard).
pub fn prepare_dir(data_dir: &Path, shards: usize) -> Result<(), String> {
    let dir = log_dir(data_dir);
    std::fs::create_dir_all(&dir)
        .map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    let meta = dir.join("shards");
    match std::fs::read_to_string(&meta) {
        Ok(text) => {
            let written: usize = text.trim().parse().map_err(|_| {
                format!("{}: expected a shard count, found {text:?}", meta.display())
            })?;
            if written != shards {
                return Err(format!(
                    "{} holds the logs of {written} shard(s) but this start has {shards} \
                     (--smp): keys are placed by owner shard, so start with --smp {written}",
                    dir.display()
                ));
            }
            Ok(())
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            std::fs::write(&meta, format!("{shards}\n"))
                .map_err(|err| format!("cannot write {}: {err}", meta.display()))
        }
        Err(err) => Err(format!("cannot read {}: {err}", meta.display())),
    }
}

/// One shard's log: the writer and what replay found at start.
pub struct Aof {
    /// The writer of this shard's log.
    pub writer: Rc<LogWriter>,
    /// What the replay at start did.
    pub replayed: Replayed,
    /// Path of the log, for messages and INFO.
    pub path: String,
}

impl Aof {
    /// Opens (creating if missing) shard `shard`'s log under `data_dir`, replays it into `db`
    /// and returns the log ready for appending. Turns on expiry tracking in `db`.
    ///
    /// Errors: `path:offset: what` for a corrupt log, or an I/O error with the path.
    pub async fn open(
        data_dir: &Path,
        shard: usize,
        fsync: AppendFsync,
        db: &mut Db,
    ) -> Result<Self, String> {
        let path = log_path(data_dir, shard);
        let shown = path.display().to_string();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .buffered_open(&path)
            .await
            .map_err(|err| format!("cannot open {shown}: {err}"))?;
        let replayed = replay::replay(&file, &shown, db).await?;
        db.track_expired(true);
        Ok(Self {
            writer: LogWriter::new(file, shown.clone(), replayed.size, fsync),
            replayed,
            path: shown,
        })
    }

    /// Logs what one executed command did: a `DEL` for each key that expiry removed on the
    /// way, then — for a write command that changed `db` (its dirty counter moved past
    /// `dirty_before`) — its record(s) in replay-deterministic form.
    pub fn log_command(&self, db: &mut Db, args: &[Bytes], reply: &Frame, dirty_before: u64) {
        let expired = db.take_expired();
        let changed = (db.dirty() != dirty_before && !matches!(reply, Frame::Error(_)))
            .then(|| args.first().and_then(|name| lookup(name)))
            .flatten()
            .filter(|spec| spec.has_flag("write"));
        self.writer.append(|out| {
            for key in &expired {
                record::encode(out, &[&b"DEL"[..], key]);
            }
            let mut added = expired.len() as u64;
            if let Some(spec) = changed {
                added += propagate::append_records(out, spec.name, args, reply, db);
            }
            added
        });
    }

    /// Logs a `DEL` for each key the expiry sweep removed.
    pub fn log_expired(&self, db: &mut Db) {
        let expired = db.take_expired();
        self.writer.append(|out| {
            for key in &expired {
                record::encode(out, &[&b"DEL"[..], key]);
            }
            expired.len() as u64
        });
    }
}
