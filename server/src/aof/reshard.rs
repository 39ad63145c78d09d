//! Restart with another shard count (`--smp`): every key goes to its new owner shard.
//!
//! Before the shards start, [`prepare`] finds the logs written by M shards while N start, and
//! gives each new shard an empty staging directory `appendonlydir.reshard/`. Each new shard
//! then ([`load`]) replays every old shard's log into a scratch keyspace, one old shard at a
//! time, keeps the keys it owns now, and writes them as the base file of its new log in the
//! staging directory. When all are done, shard 0 commits ([`commit`]): it writes the new
//! shard count into the staging directory, renames `appendonlydir` to `appendonlydir.old`, the
//! staging directory to `appendonlydir`, and deletes the old one. [`prepare`] finishes or
//! discards an interrupted attempt, so a crash at any moment loses nothing: until the second
//! rename the old logs are the log; after it, the new ones.
//!
//! Cost: each new shard replays all M old logs (CPU N × one replay) and holds, besides its own
//! keys, one old shard's keyspace at a time.

use std::path::{Path, PathBuf};

use glommio::io::OpenOptions;

use super::{log_dir, replay, Manifest};
use crate::keyspace::slot::owner_shard;
use crate::keyspace::Db;

/// Keys dumped per step while a new base is written.
const KEYS_PER_STEP: usize = 1024;

/// `<data_dir>/appendonlydir.reshard`: where the new logs are built.
pub fn staging_dir(data_dir: &Path) -> PathBuf {
    data_dir.join(format!("{}.reshard", super::DIR_NAME))
}

fn old_dir(data_dir: &Path) -> PathBuf {
    data_dir.join(format!("{}.old", super::DIR_NAME))
}

/// Reads the shard count of a log directory (`shards` file); `None` when there is none.
pub fn shard_count(dir: &Path) -> Result<Option<usize>, String> {
    let meta = dir.join("shards");
    match std::fs::read_to_string(&meta) {
        Ok(text) => text
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| format!("{}: expected a shard count, found {text:?}", meta.display())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(format!("cannot read {}: {err}", meta.display())),
    }
}

/// Finishes or discards an interrupted change of shard count, then returns the shard count
/// of the existing logs when it differs from `shards` (a new staging directory is ready).
/// Runs on the main thread before the shards start (plain `std::fs`).
pub fn prepare(data_dir: &Path, shards: usize) -> Result<Option<usize>, String> {
    let dir = log_dir(data_dir);
    let (staging, old) = (staging_dir(data_dir), old_dir(data_dir));
    let fs = |what: &str, path: &Path, err: std::io::Error| {
        format!("cannot {what} {}: {err}", path.display())
    };
    if !dir.exists() && shard_count(&staging)?.is_some() {
        // Crashed between the two renames of a commit: finish it.
        std::fs::rename(&staging, &dir).map_err(|e| fs("rename", &staging, e))?;
    }
    if old.exists() {
        std::fs::remove_dir_all(&old).map_err(|e| fs("remove", &old, e))?;
    }
    if staging.exists() {
        // An attempt that did not commit: the old logs are still the log.
        std::fs::remove_dir_all(&staging).map_err(|e| fs("remove", &staging, e))?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| fs("create", &dir, e))?;
    match shard_count(&dir)? {
        Some(written) if written != shards => {
            std::fs::create_dir_all(&staging).map_err(|e| fs("create", &staging, e))?;
            Ok(Some(written))
        }
        Some(_) => Ok(None),
        None => {
            let meta = dir.join("shards");
            std::fs::write(&meta, format!("{shards}\n")).map_err(|e| fs("write", &meta, e))?;
            Ok(None)
        }
    }
}

/// New shard `shard` of `shards`: loads its keys from the logs of the `old_shards` old shards
/// and writes them as its new log in the staging directory, every key in the same one of the
/// `databases` databases it was in, small hashes kept small under `hash_limits` (their order
/// kept). Returns the number of keys.
pub async fn load(
    data_dir: &Path,
    shard: usize,
    shards: usize,
    old_shards: usize,
    databases: usize,
    hash_limits: crate::keyspace::HashLimits,
) -> Result<usize, String> {
    let dir = std::path::absolute(log_dir(data_dir)).map_err(|err| err.to_string())?;
    let staging = std::path::absolute(staging_dir(data_dir)).map_err(|err| err.to_string())?;
    let new_dbs = || {
        (0..databases)
            .map(|_| {
                let mut db = Db::new();
                db.set_hash_limits(hash_limits);
                db
            })
            .collect::<Vec<Db>>()
    };
    let mut dbs = new_dbs();
    dbs.iter_mut().for_each(Db::start_bulk_load);
    for old in 0..old_shards {
        let manifest = Manifest::load(&dir, old).await?;
        let mut scratch = new_dbs();
        // Only their maps are read (by `absorb`): their SCAN indexes are never built.
        scratch.iter_mut().for_each(Db::start_bulk_load);
        let files = manifest
            .base
            .iter()
            .map(|name| (name, true))
            .chain(manifest.incrs.iter().map(|name| (name, false)));
        for (name, is_base) in files {
            let path = dir.join(name);
            if !is_base && !path.exists() {
                continue; // an old shard that never logged
            }
            let shown = path.display().to_string();
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .buffered_open(&path)
                .await
                .map_err(|err| format!("cannot open {shown}: {err}"))?;
            replay::replay(&file, &shown, &mut scratch, !is_base).await?;
            let _ = file.close().await;
        }
        for (db, old_db) in dbs.iter_mut().zip(scratch) {
            db.absorb(old_db, |key| owner_shard(key, shards) == shard);
        }
    }
    let mut keys = 0;
    for (index, db) in dbs.iter_mut().enumerate() {
        db.finish_bulk_load();
        keys += db.len();
        db.start_snapshot(index);
    }
    let base_name = format!("shard-{shard}.base.1.aof");
    let base = super::rewrite::create(&staging.join(&base_name)).await?;
    super::rewrite::write_dump(&base, databases, KEYS_PER_STEP, |label, max_keys| {
        super::rewrite::dump_step(&mut dbs, label, max_keys)
    })
    .await?;
    base.fdatasync()
        .await
        .map_err(|err| format!("cannot sync {base_name}: {err}"))?;
    let _ = base.close().await;
    let incr_name = format!("shard-{shard}.incr.1.aof");
    let incr = super::rewrite::create(&staging.join(&incr_name)).await?;
    let _ = incr.close().await;
    Manifest {
        base: Some(base_name),
        incrs: vec![incr_name],
        seq: 1,
    }
    .store(&staging, shard)
    .await?;
    Ok(keys)
}

/// Makes the staging directory the log (shard 0, once every new shard's [`load`] is done).
/// Plain `std::fs`: it runs once, before any shard serves.
pub fn commit(data_dir: &Path, shards: usize) -> Result<(), String> {
    let (dir, staging, old) = (log_dir(data_dir), staging_dir(data_dir), old_dir(data_dir));
    let fs = |what: &str, path: &Path, err: std::io::Error| {
        format!("cannot {what} {}: {err}", path.display())
    };
    let meta = staging.join("shards");
    let file = std::fs::File::create(&meta).map_err(|e| fs("create", &meta, e))?;
    use std::io::Write;
    (&file)
        .write_all(format!("{shards}\n").as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| fs("write", &meta, e))?;
    std::fs::rename(&dir, &old).map_err(|e| fs("rename", &dir, e))?;
    std::fs::rename(&staging, &dir).map_err(|e| fs("rename", &staging, e))?;
    std::fs::File::open(data_dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| fs("sync", data_dir, e))?;
    std::fs::remove_dir_all(&old).map_err(|e| fs("remove", &old, e))
}
