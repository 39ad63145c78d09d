//! Durability: one append-only log per shard (Redis 7 AOF semantics, README "Persistence").
//!
//! Every shard appends the write commands it executes, RESP-encoded ([`record`],
//! [`propagate`]), to its log under `<data-dir>/appendonlydir/`: the files its [`manifest`]
//! names (`shard-<N>.aof` until the first rewrite). A per-shard flusher writes them with
//! group commit ([`writer`]); at start each shard replays its own files before it accepts
//! connections ([`replay`]), all shards in parallel; a rewrite ([`rewrite`]) compacts them
//! into a base file from a point-in-time view; `shardline check-aof` ([`check`]) checks one.
//! `<data-dir>/appendonlydir/shards` records the shard count the logs were written with: keys
//! are placed by owner shard, so a start with another `--smp` first moves every key to its
//! new owner shard ([`reshard`]).

pub mod check;
pub mod manifest;
pub mod propagate;
pub mod record;
pub mod replay;
pub mod reshard;
pub mod rewrite;
pub mod writer;

#[cfg(test)]
mod databases_tests;

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use bytes::Bytes;
use clap::ValueEnum;
use glommio::io::{BufferedFile, OpenOptions};

use crate::cmd::lookup;
use crate::keyspace::Db;
use crate::resp::Frame;
pub use manifest::Manifest;
pub use replay::Replayed;
pub use writer::{LogWriter, SyncPoint, WriterStats};

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
    /// Replies do not wait: records are written on the shard's next turn (a crash of the
    /// process loses the few acknowledged in between) and fdatasync'ed once a second (an OS
    /// crash or power loss loses up to about a second).
    Everysec,
    /// As everysec, but the OS decides when the written records reach the disk.
    No,
}

/// The directory holding the logs (Redis 7's `appenddirname` default).
pub const DIR_NAME: &str = "appendonlydir";

/// `<data_dir>/appendonlydir`.
pub fn log_dir(data_dir: &Path) -> PathBuf {
    data_dir.join(DIR_NAME)
}

/// Deletes this shard's files that its manifest does not name: what a crash in the middle of
/// a rewrite leaves (a temporary base, an incremental file never committed, old files).
async fn remove_orphans(dir: &Path, shard: usize, manifest: &Manifest) {
    let prefix = format!("shard-{shard}.");
    let keep: Vec<&String> = manifest.base.iter().chain(manifest.incrs.iter()).collect();
    // Listing the directory is a blocking call; it runs once, before the shard serves.
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(&prefix)
            && name != format!("{prefix}manifest")
            && !keep.contains(&&name)
        {
            if let Ok(file) = BufferedFile::open(dir.join(&name)).await {
                if file.remove().await.is_ok() {
                    tracing::info!("removed {name}, left by an interrupted log rewrite");
                }
            }
        }
    }
}

/// One shard's log: the writer, its files and what replay found at start.
pub struct Aof {
    /// The writer of this shard's log.
    pub writer: Rc<LogWriter>,
    /// What the replay at start did (over all files).
    pub replayed: Replayed,
    /// Path of the first file replayed, for messages.
    pub path: String,
    /// `<data-dir>/appendonlydir`.
    pub dir: PathBuf,
    /// This shard's index.
    pub shard: usize,
    /// The files of the log now.
    pub manifest: RefCell<Manifest>,
    /// Bytes in the base file (INFO `aof_base_size`).
    pub base_size: Cell<u64>,
    /// Bytes in the files before the one being appended to.
    pub older_size: Cell<u64>,
    /// Rewrite status for INFO and the auto-rewrite rule.
    pub rewrite: rewrite::RewriteStatus,
}

impl Aof {
    /// Opens shard `shard`'s log under `data_dir` (its manifest's files, creating the first
    /// file if missing), replays every file in order into the databases `dbs` (each file
    /// from database 0 on, following its `SELECT` records) and returns the log ready for
    /// appending. Turns on expiry tracking in every database.
    ///
    /// Errors: `path:offset: what` for a corrupt file, or an I/O error with the path.
    pub async fn open(
        data_dir: &Path,
        shard: usize,
        fsync: AppendFsync,
        dbs: &mut [Db],
    ) -> Result<Self, String> {
        // glommio opens a directory (for its fsync) only by absolute path.
        let dir = std::path::absolute(log_dir(data_dir))
            .map_err(|err| format!("{}: {err}", data_dir.display()))?;
        let stored = Manifest::load_stored(&dir, shard).await?;
        // Only a log without a manifest (first start) may lack its file; a file a stored
        // manifest names and that is gone held records.
        let must_exist = stored.is_some();
        let manifest = stored.unwrap_or_else(|| Manifest::initial(shard));
        let mut files: Vec<(String, bool)> = Vec::new();
        if let Some(base) = &manifest.base {
            files.push((base.clone(), true));
        }
        files.extend(manifest.incrs.iter().map(|name| (name.clone(), false)));
        let mut total = Replayed::default();
        let (mut older, mut base_size) = (0, 0);
        let mut last = None;
        let count = files.len();
        dbs.iter_mut().for_each(Db::start_bulk_load);
        for (i, (name, is_base)) in files.into_iter().enumerate() {
            let path = dir.join(&name);
            let shown = path.display().to_string();
            if must_exist && !path.exists() {
                return Err(format!(
                    "{shown} is missing, though {} names it: refusing to start, its records \
                     would be lost. If it is truly gone, create it empty (`touch {shown}`) to \
                     start without them",
                    Manifest::path(&dir, shard).display()
                ));
            }
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(!must_exist && i + 1 == count)
                .buffered_open(&path)
                .await
                .map_err(|err| format!("cannot open {shown}: {err}"))?;
            let replayed = replay::replay(&file, &shown, dbs, !is_base).await?;
            total.records += replayed.records;
            total.truncated += replayed.truncated;
            total.size += replayed.size;
            if is_base {
                base_size = replayed.size;
            }
            if i + 1 == count {
                last = Some((file, shown, replayed.size));
            } else {
                older += replayed.size;
                let _ = file.close().await;
            }
        }
        dbs.iter_mut().for_each(Db::finish_bulk_load);
        let Some((file, shown, size)) = last else {
            return Err(format!("{}: no file to append to", dir.display()));
        };
        remove_orphans(&dir, shard, &manifest).await;
        for db in dbs.iter_mut() {
            db.track_expired(true);
        }
        Ok(Self {
            writer: LogWriter::new(file, shown.clone(), size, fsync),
            replayed: total,
            path: shown,
            dir,
            shard,
            manifest: RefCell::new(manifest),
            base_size: Cell::new(base_size),
            older_size: Cell::new(older),
            rewrite: rewrite::RewriteStatus::new(base_size.max(total.size)),
        })
    }

    /// Bytes in all files of the log plus bytes buffered (INFO `aof_current_size`).
    pub fn current_size(&self) -> u64 {
        self.older_size.get() + self.writer.current_size()
    }

    /// Logs what one executed command did on database `index` of `dbs`: a `DEL` for each key
    /// that expiry removed on the way (in the database it was removed from), then — for a
    /// write command that changed the keyspace (the selected database's dirty counter moved
    /// past `dirty_before`, or a SWAPDB succeeded) — its record(s) in replay-deterministic
    /// form. Each group of records follows a `SELECT` when the log's last record was for
    /// another database.
    pub fn log_command(
        &self,
        dbs: &mut [Db],
        index: usize,
        args: &[Bytes],
        reply: &Frame,
        dirty_before: u64,
    ) {
        let is = |word: &[u8]| args.first().is_some_and(|n| n.eq_ignore_ascii_case(word));
        let ok = !matches!(reply, Frame::Error(_));
        // MOVE and COPY look their key up in a target database too, which may expire it
        // there; a COPY to another database changes only that one.
        let target = if is(b"move") {
            args.get(2)
        } else if is(b"copy") {
            args.iter()
                .skip(3)
                .position(|arg| arg.eq_ignore_ascii_case(b"db"))
                .and_then(|i| args.get(i + 4))
        } else {
            None
        }
        .and_then(|arg| crate::cmd::databases::db_index(arg, dbs.len(), None).ok())
        .filter(|&target| target != index);
        let copied = is(b"copy") && *reply == Frame::Integer(1);
        // SWAPDB changes no keyspace's dirty counter, yet always changes the state.
        let changed = (ok && (dirty_before != dbs[index].dirty() || is(b"swapdb") || copied))
            .then(|| args.first().and_then(|name| lookup(name)))
            .flatten()
            .filter(|spec| spec.has_flag("write"));
        let expired = dbs[index].take_expired();
        let expired_in_target = target.map(|t| (t, dbs[t].take_expired()));
        self.writer.append(|out| {
            let mut added = self.expired_records(out, index, &expired);
            if let Some((t, keys)) = &expired_in_target {
                added += self.expired_records(out, *t, keys);
            }
            if let Some(spec) = changed {
                added += self.writer.select(out, index);
                added += propagate::append_records(out, spec.name, args, reply, &dbs[index]);
            }
            added
        });
    }

    /// Logs a `DEL` for each key the expiry sweep removed from database `index` (`db`).
    pub fn log_expired(&self, index: usize, db: &mut Db) {
        let expired = db.take_expired();
        self.writer
            .append(|out| self.expired_records(out, index, &expired));
    }

    /// `SELECT index` if needed and a `DEL` per key of `expired`; returns the records added.
    fn expired_records(&self, out: &mut Vec<u8>, index: usize, expired: &[Bytes]) -> u64 {
        if expired.is_empty() {
            return 0;
        }
        let added = self.writer.select(out, index);
        for key in expired {
            record::encode(out, &[&b"DEL"[..], key]);
        }
        added + expired.len() as u64
    }
}
