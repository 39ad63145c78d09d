//! Log rewrite (Redis 7 `rewriteAppendOnlyFileBackground` with multi-part AOF), on one shard
//! while it keeps serving:
//!
//! 1. create a new, empty incremental file and store a manifest that adds it;
//! 2. in one synchronous step, point the writer at it (records appended from now on go there)
//!    and start a point-in-time dump of the keyspace ([`crate::keyspace::snapshot`]);
//! 3. dump the keyspace into a temporary base file, a few hundred keys per step, yielding
//!    to the shard's other tasks in between; fdatasync it and rename it into place;
//! 4. store a manifest of the new base and the new incremental file (the commit point), then
//!    delete the old files.
//!
//! A crash at any moment leaves a manifest whose files all exist and hold every record: the
//! old files plus the new incremental one before step 4, the new base and incremental file
//! after.
//!
//! Databases: every database starts its dump in step 2; the base holds each non-empty one
//! after `SELECT <index>`. A FLUSHALL/FLUSHDB during the dump ends that database's dump (the
//! flush follows in the new incremental file); a SWAPDB swaps the dumps with the keyspaces,
//! each still written under the index it had at the switch point (the SWAPDB record in the
//! incremental file then swaps them on replay).

use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

use glommio::io::{BufferedFile, OpenOptions};
use tracing::{info, warn};

use super::record::encode;
use super::Manifest;
use crate::keyspace::Db;
use crate::shard::Shard;

/// Keys dumped per step before the rewrite yields.
const KEYS_PER_STEP: usize = 256;

/// Rewrite status of one shard (INFO persistence, the auto-rewrite rule, LASTSAVE).
#[derive(Debug)]
pub struct RewriteStatus {
    /// When the rewrite in progress started.
    pub started: Cell<Option<Instant>>,
    /// Whether the last rewrite failed.
    pub last_failed: Cell<bool>,
    /// Rewrites completed since start.
    pub done: Cell<u64>,
    /// Rewrites that failed or were abandoned since start.
    pub failures: Cell<u64>,
    /// Duration of the last rewrite, s (-1: none yet).
    pub last_duration_s: Cell<i64>,
    /// Log size after the last rewrite (or at start): the auto-rewrite rule's base, bytes.
    pub base_for_growth: Cell<u64>,
    /// Unix time (s) of the last successful rewrite; 0 when none.
    pub last_ok_unix: Cell<u64>,
    /// BGREWRITEAOF/BGSAVE/SAVE asked for a rewrite that has not started yet.
    pub requested: Cell<bool>,
    /// Records appended before the switch point of the rewrite in progress.
    pub appended_at_switch: Cell<u64>,
    /// Records appended before the switch point of the last successful rewrite: the changes
    /// since are INFO's `rdb_changes_since_last_save` (Redis's `dirty` since the last save).
    pub appended_at_last_save: Cell<u64>,
}

impl RewriteStatus {
    /// The status at start, with a log of `size` bytes.
    pub fn new(size: u64) -> Self {
        Self {
            started: Cell::new(None),
            last_failed: Cell::new(false),
            done: Cell::new(0),
            failures: Cell::new(0),
            last_duration_s: Cell::new(-1),
            base_for_growth: Cell::new(size),
            last_ok_unix: Cell::new(0),
            requested: Cell::new(false),
            appended_at_switch: Cell::new(0),
            appended_at_last_save: Cell::new(0),
        }
    }
}

/// Whether Redis's auto-rewrite rule asks for a rewrite of a log of `size` bytes: at least
/// `min_size` bytes and grown by `percentage` % over `base` (0 disables).
pub fn auto_due(size: u64, base: u64, percentage: u64, min_size: u64) -> bool {
    if percentage == 0 || size < min_size {
        return false;
    }
    let base = base.max(1);
    size.saturating_sub(base).saturating_mul(100) / base >= percentage
}

/// Starts a rewrite on this shard when one was requested or the auto-rewrite rule
/// (`--auto-aof-rewrite-percentage`, `--auto-aof-rewrite-min-size`) asks for one, unless one
/// runs already. Called by the maintenance loop every 100 ms.
pub fn maybe_start(shard: &Rc<Shard>) {
    let Some(aof) = &shard.aof else {
        return;
    };
    if aof.rewrite.started.get().is_some() {
        return;
    }
    let config = &shard.shared.config;
    let due = aof.rewrite.requested.take()
        || auto_due(
            aof.current_size(),
            aof.rewrite.base_for_growth.get(),
            config.auto_aof_rewrite_percentage,
            shard.runtime.borrow().auto_aof_rewrite_min_size,
        );
    if due {
        let task = shard.spawn_maintenance("aof-rewrite", rewrite(shard.clone()));
        task.detach();
    }
}

/// Rewrites this shard's log (see the module doc). Returns at once with an error when one is
/// in progress already.
pub async fn rewrite(shard: Rc<Shard>) -> Result<(), String> {
    let Some(aof) = &shard.aof else {
        return Err("ERR append only file is off".into());
    };
    if aof.rewrite.started.get().is_some() {
        return Err("ERR Background append only file rewriting already in progress".into());
    }
    let started = Instant::now();
    aof.rewrite.started.set(Some(started));
    let result = run(&shard).await;
    let aof = shard.aof.as_ref().expect("checked above");
    aof.rewrite.started.set(None);
    shard
        .dbs
        .borrow_mut()
        .iter_mut()
        .for_each(Db::stop_snapshot);
    aof.rewrite.last_failed.set(result.is_err());
    aof.rewrite
        .last_duration_s
        .set(started.elapsed().as_secs() as i64);
    shard
        .metrics
        .aof_rewrite_done(started.elapsed(), result.is_ok());
    match &result {
        Ok(()) => {
            aof.rewrite.done.set(aof.rewrite.done.get() + 1);
            aof.rewrite
                .appended_at_last_save
                .set(aof.rewrite.appended_at_switch.get());
            aof.rewrite
                .last_ok_unix
                .set(crate::shard::unix_time_ms() / 1000);
            aof.rewrite.base_for_growth.set(aof.current_size());
            info!(
                "shard {}: log rewritten in {:?}: base {} bytes",
                shard.id,
                started.elapsed(),
                aof.base_size.get()
            );
        }
        Err(err) => {
            aof.rewrite.failures.set(aof.rewrite.failures.get() + 1);
            warn!("shard {}: log rewrite failed: {err}", shard.id)
        }
    }
    result
}

async fn run(shard: &Shard) -> Result<(), String> {
    let aof = shard.aof.as_ref().ok_or("append only file is off")?;
    let dir = &aof.dir;
    let old = aof.manifest.borrow().clone();
    let seq = old.seq + 1;
    let incr_name = format!("shard-{}.incr.{seq}.aof", shard.id);
    let base_name = format!("shard-{}.base.{seq}.aof", shard.id);
    let incr_path = dir.join(&incr_name);
    let incr = create(&incr_path).await?;

    // 1. The new incremental file joins the log before anything is written to it.
    let mut with_incr = old.clone();
    with_incr.incrs.push(incr_name.clone());
    with_incr.seq = seq;
    with_incr.store(dir, shard.id).await?;
    *aof.manifest.borrow_mut() = with_incr.clone();

    // 2. One synchronous step: the switch point of the writer is the snapshot's instant, for
    // every database.
    aof.older_size.set(aof.current_size());
    aof.rewrite.appended_at_switch.set(aof.writer.appended());
    aof.writer.rotate(incr, incr_path.display().to_string());
    for (index, db) in shard.dbs.borrow_mut().iter_mut().enumerate() {
        db.start_snapshot(index);
    }

    // 3. The base file, from the point-in-time view.
    let tmp_path = dir.join(format!("{base_name}.tmp"));
    let mut base = create(&tmp_path).await?;
    let databases = shard.dbs.borrow().len();
    let dumped = write_dump(&base, databases, KEYS_PER_STEP, |label, max_keys| {
        dump_step(&mut shard.dbs.borrow_mut(), label, max_keys)
    })
    .await;
    let size = match dumped {
        Ok(size) => size,
        Err(err) => {
            let _ = base.remove().await;
            return Err(err);
        }
    };
    base.fdatasync()
        .await
        .map_err(|err| format!("cannot sync {}: {err}", tmp_path.display()))?;
    base.rename(dir.join(&base_name))
        .await
        .map_err(|err| format!("cannot rename {}: {err}", tmp_path.display()))?;
    let _ = base.close().await;

    // 4. Commit: the new base and incremental file replace everything before them.
    aof.writer.rotated().await;
    let compact = Manifest {
        base: Some(base_name),
        incrs: vec![incr_name],
        seq,
    };
    compact.store(dir, shard.id).await?;
    *aof.manifest.borrow_mut() = compact;
    aof.base_size.set(size);
    aof.older_size.set(size);
    for name in old.base.iter().chain(old.incrs.iter()) {
        if let Ok(file) = BufferedFile::open(dir.join(name)).await {
            let _ = file.remove().await;
        }
    }
    Ok(())
}

/// One step of the dump of the database labelled `label` (its index when the dump started;
/// see [`crate::keyspace::snapshot::Snapshot`]) among `dbs`: up to `max_keys` keys, and
/// whether that dump is done. A dump already ended counts as done.
pub fn dump_step(dbs: &mut [Db], label: usize, max_keys: usize) -> Result<(Vec<u8>, bool), String> {
    match dbs.iter_mut().find(|db| db.snapshot_label() == Some(label)) {
        Some(db) => db.snapshot_step(max_keys).map_err(str::to_string),
        None => Ok((Vec::new(), true)),
    }
}

/// Writes a base file from the dumps of databases `0..databases`, in order, each non-empty
/// one after `SELECT <index>`, with `step(label, max_keys)` ([`dump_step`]) yielding to the
/// shard's other tasks between steps. Returns the bytes written.
pub async fn write_dump(
    base: &BufferedFile,
    databases: usize,
    max_keys: usize,
    mut step: impl FnMut(usize, usize) -> Result<(Vec<u8>, bool), String>,
) -> Result<u64, String> {
    let mut size = 0u64;
    for label in 0..databases {
        let mut selected = false;
        loop {
            let (bytes, finished) = step(label, max_keys)?;
            if !bytes.is_empty() {
                if !selected {
                    let mut select = Vec::new();
                    encode(&mut select, &[&b"SELECT"[..], label.to_string().as_bytes()]);
                    size += write_all(base, select, size).await?;
                    selected = true;
                }
                size += write_all(base, bytes, size).await?;
            }
            if finished {
                break;
            }
            glommio::yield_if_needed().await;
        }
    }
    Ok(size)
}

/// Creates (or truncates) `path` for writing.
pub async fn create(path: &std::path::Path) -> Result<BufferedFile, String> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .buffered_open(path)
        .await
        .map_err(|err| format!("cannot create {}: {err}", path.display()))
}

/// Writes `bytes` at `pos` of `file` (a base file), all of them; returns how many.
pub async fn write_all(file: &BufferedFile, bytes: Vec<u8>, pos: u64) -> Result<u64, String> {
    let mut done = 0;
    while done < bytes.len() {
        let n = file
            .write_at(bytes[done..].to_vec(), pos + done as u64)
            .await
            .map_err(|err| format!("cannot write the base file: {err}"))?;
        if n == 0 {
            return Err("cannot write the base file: wrote 0 bytes".into());
        }
        done += n;
    }
    Ok(done as u64)
}
