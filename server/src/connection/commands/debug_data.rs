//! The DEBUG subcommands over the data: DIGEST, DIGEST-VALUE, OBJECT, RELOAD and LOADAOF
//! (Redis 7.0 `debug.c`). DIGEST and the reloads run over every shard inside one
//! transaction over all shards' gates ([`crate::txn`]), so no command interleaves with them,
//! as none does in Redis.

use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::aof::{log_dir, replay, Manifest};
use crate::forward::TxnId;
use crate::keyspace::{digest, memory, Db};
use crate::resp::Frame;
use crate::shard::{unix_time_ms, Shard};
use crate::txn;

/// How often LOADAOF looks whether every shard's log has reached its file.
const WRITTEN_POLL: Duration = Duration::from_millis(2);

/// How long LOADAOF waits for the shards' logs to reach their files before giving up (a log
/// that cannot be written, e.g. a full disk).
pub const LOADAOF_WRITE_WAIT: Duration = Duration::from_secs(10);

/// How many more times LOADAOF reads a shard's log when a read fails (a record caught while
/// being written).
const LOADAOF_READ_TRIES: usize = 3;

/// `DEBUG DIGEST`: 40 hex digits over every database of every shard ([`digest`]); 40 zeros
/// for an empty dataset. Keys past their deadline are left out (they are gone for every
/// reader).
pub async fn dataset_digest(shard: &Rc<Shard>, scope: Option<TxnId>) -> Frame {
    let txn_scope = txn::enter(shard, scope, 0..shard.nr_shards).await;
    let replies = shard
        .run_on_all_in(txn_scope.id(), || Box::new(shard_digests))
        .await;
    txn_scope.leave().await;
    let mut dbs: Vec<(u64, digest::Digest)> = Vec::new();
    for reply in replies {
        let Frame::Array(per_db) = reply else {
            return Frame::error("ERR DEBUG DIGEST: a shard did not answer");
        };
        if dbs.len() < per_db.len() {
            dbs.resize(per_db.len(), (0, digest::ZERO));
        }
        for (sum, part) in dbs.iter_mut().zip(per_db) {
            if let Frame::Array(pair) = part {
                if let [Frame::Integer(count), Frame::Bulk(d)] = pair.as_slice() {
                    sum.0 += u64::try_from(*count).unwrap_or(0);
                    if let Ok(d) = <digest::Digest>::try_from(d.as_ref()) {
                        digest::xor_in(&mut sum.1, &d);
                    }
                }
            }
        }
    }
    Frame::Simple(digest::hex(&digest::dataset(&dbs)))
}

/// One shard's part of DEBUG DIGEST: per database, `[live key count, xor of key digests]`.
fn shard_digests(s: &Shard) -> Frame {
    let now_ms = unix_time_ms();
    let dbs = s.dbs.borrow();
    Frame::Array(
        dbs.iter()
            .map(|db| {
                let mut count = 0i64;
                let mut sum = digest::ZERO;
                for (key, value, deadline) in db.entries() {
                    if deadline.is_some_and(|t| now_ms > t) {
                        continue;
                    }
                    count += 1;
                    digest::xor_in(&mut sum, &digest::key(key, value, deadline));
                }
                Frame::Array(vec![
                    Frame::Integer(count),
                    Frame::Bulk(Bytes::copy_from_slice(&sum)),
                ])
            })
            .collect(),
    )
}

/// `DEBUG DIGEST-VALUE key [key …]` on database `db`: one 40-hex-digit digest of each key's
/// value, 40 zeros for a missing key (Redis's reply: an array of simple strings).
pub async fn value_digests(shard: &Shard, db: usize, keys: &[Bytes]) -> Frame {
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let key = key.clone();
        let reply = shard
            .run_on(
                shard.owner_of(&key),
                Box::new(move |s: &Shard| {
                    let dbs = s.dbs.borrow();
                    let now_ms = unix_time_ms();
                    let d = dbs
                        .get(db)
                        .and_then(|db| db.peek(&key))
                        .filter(|(_, deadline)| !deadline.is_some_and(|t| now_ms > t))
                        .map_or(digest::ZERO, |(value, _)| digest::value(value));
                    Frame::Simple(digest::hex(&d))
                }),
            )
            .await;
        out.push(reply);
    }
    Frame::Array(out)
}

/// `DEBUG OBJECT key` on database `db`, answered by the key's owner shard without touching
/// it: Redis's status line `Value at:<address> refcount:<n> encoding:<OBJECT ENCODING>
/// serializedlength:<bytes of the value's RDB encoding> lru:<access clock>
/// lru_seconds_idle:<OBJECT IDLETIME>`. Lists are not quicklists here, so Redis's `ql_*`
/// fields are not given. A missing (or expired) key: `ERR no such key`.
pub async fn object(shard: &Shard, db: usize, key: Bytes) -> Frame {
    shard
        .run_on(
            shard.owner_of(&key),
            Box::new(move |s: &Shard| {
                let dbs = s.dbs.borrow();
                let now_ms = unix_time_ms();
                let Some((value, deadline, clock, raw)) = dbs.get(db).and_then(|d| d.inspect(&key))
                else {
                    return Frame::error("ERR no such key");
                };
                if deadline.is_some_and(|t| now_ms > t) {
                    return Frame::error("ERR no such key");
                }
                let runtime = s.runtime.borrow();
                let encoding = if raw {
                    "raw"
                } else {
                    memory::encoding(value, &runtime.encoding)
                };
                // DUMP's payload is the RDB encoding plus its type byte and 10-byte footer.
                let serialized = crate::rdb::dump(value).len().saturating_sub(11);
                Frame::Simple(format!(
                    "Value at:{:p} refcount:1 encoding:{encoding} serializedlength:{serialized} \
                     lru:{clock} lru_seconds_idle:{}",
                    value as *const _,
                    memory::idle_seconds(clock, now_ms)
                ))
            }),
        )
        .await
}

/// The options of `DEBUG RELOAD [MERGE|NOFLUSH|NOSAVE …]`.
#[derive(Debug, Default, Clone, Copy)]
struct ReloadOptions {
    /// Load what is on disk without writing the dataset first.
    no_save: bool,
    /// Keep the keys the load does not replace.
    no_flush: bool,
}

/// `DEBUG RELOAD [option …]` (Redis: save the RDB, flush, load it back). Here: every key
/// goes through the DUMP/RESTORE encoder and back on its shard; with the append-only log
/// every shard's log is then rewritten (SAVE) and the keyspace replaced by a replay of the
/// logs from disk (as [`loadaof`]); inside MULTI/EXEC the logs load without the rewrite
/// (which cannot start while the transaction holds the shards). NOSAVE skips the encoder trip and the rewrite (it loads
/// the logs as they are: an error without the log, where Redis would load a missing RDB);
/// NOFLUSH keeps keys the logs do not hold; MERGE (loaded keys replace existing ones) is what
/// the load does anyway. Another option: Redis's `ERR DEBUG RELOAD only supports the MERGE,
/// NOFLUSH and NOSAVE options.`
pub async fn reload(shard: &Rc<Shard>, scope: Option<TxnId>, args: &[Bytes]) -> Frame {
    let mut options = ReloadOptions::default();
    for option in args {
        match option.to_ascii_uppercase().as_slice() {
            b"MERGE" => {}
            b"NOFLUSH" => options.no_flush = true,
            b"NOSAVE" => options.no_save = true,
            _ => {
                return Frame::error(
                    "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
                )
            }
        }
    }
    let logged = shard.aof.is_some();
    if options.no_save {
        if !logged {
            return Frame::error(
                "ERR DEBUG RELOAD NOSAVE needs the append-only log (--appendonly yes): there is \
                 nothing on disk to load",
            );
        }
        return load_logs(shard, scope, !options.no_flush).await;
    }
    let txn_scope = txn::enter(shard, scope, 0..shard.nr_shards).await;
    let replies = shard
        .run_on_all_in(txn_scope.id(), || Box::new(round_trip))
        .await;
    txn_scope.leave().await;
    if let Some(err) = replies.into_iter().find(|r| matches!(r, Frame::Error(_))) {
        return err;
    }
    let reply = if logged && scope.is_some() {
        // Inside EXEC the transaction holds every shard, and a log rewrite starts only on a
        // shard no transaction holds: the logs (which hold the same data) load as they are.
        load_logs(shard, scope, !options.no_flush).await
    } else if logged {
        match super::persistence::rewrite(shard, "save").await {
            Frame::Error(e) => Frame::Error(e),
            _ => load_logs(shard, scope, !options.no_flush).await,
        }
    } else {
        Frame::ok()
    };
    if reply == Frame::ok() {
        tracing::warn!("DB reloaded by DEBUG RELOAD");
    }
    reply
}

/// One shard's DEBUG RELOAD without the log: every key's value encoded as DUMP does and
/// decoded back as RESTORE does, its deadline kept.
fn round_trip(s: &Shard) -> Frame {
    let mut dbs = s.dbs.borrow_mut();
    for db in dbs.iter_mut() {
        let limits = db.hash_limits();
        let mut loaded = Vec::with_capacity(db.len());
        for (key, value, _) in db.entries() {
            match crate::rdb::restore(&crate::rdb::dump(value), limits) {
                Ok(back) => loaded.push((Bytes::copy_from_slice(key), back)),
                Err(err) => {
                    return Frame::error(format!(
                        "ERR DEBUG RELOAD: a value did not load back: {}",
                        err.message()
                    ))
                }
            }
        }
        for (key, value) in loaded {
            // Time 0: a key past its deadline is replaced as it is, not expired here.
            db.set(&key, value, true, 0);
        }
    }
    Frame::ok()
}

/// `DEBUG LOADAOF` (Redis: flush the log's buffer to its file, empty the dataset, load the
/// log): every shard's pending records reach its file, then every shard's keyspace is replaced
/// by a replay of its log files. Without the log: an error, where Redis 7.0.15 exits.
pub async fn loadaof(shard: &Rc<Shard>, scope: Option<TxnId>) -> Frame {
    if shard.aof.is_none() {
        return Frame::error(
            "ERR DEBUG LOADAOF needs the append-only log (--appendonly yes): it is off",
        );
    }
    let reply = load_logs(shard, scope, true).await;
    if reply == Frame::ok() {
        tracing::warn!("Append Only File loaded by DEBUG LOADAOF");
    }
    reply
}

/// Replaces (or, unless `flush`, overlays) every shard's keyspace with a replay of its log
/// files, inside one transaction over all shards. Errors: a rewrite in progress, a log that
/// does not reach its file within [`LOADAOF_WRITE_WAIT`], a log that does not replay.
async fn load_logs(shard: &Rc<Shard>, scope: Option<TxnId>, flush: bool) -> Frame {
    let txn_scope = txn::enter(shard, scope, 0..shard.nr_shards).await;
    let id = txn_scope.id();
    let result = load_logs_in(shard, id, flush).await;
    txn_scope.leave().await;
    result.map_or_else(|e| Frame::error(format!("ERR {e}")), |()| Frame::ok())
}

async fn load_logs_in(shard: &Shard, id: Option<TxnId>, flush: bool) -> Result<(), String> {
    let (limits, databases) = {
        let dbs = shard.dbs.borrow();
        (dbs[0].hash_limits(), dbs.len())
    };
    let dir = std::path::absolute(log_dir(&shard.shared.config.data_dir))
        .map_err(|err| err.to_string())?;
    for owner in 0..shard.nr_shards {
        // The expiry sweep may append while a file is read: a read that met a record being
        // written is done again once it is written.
        let mut attempt = 0;
        let fresh = loop {
            wait_written(shard, id).await?;
            match read_logs(&dir, owner, databases, limits).await {
                Ok(fresh) => break fresh,
                Err(_) if attempt < LOADAOF_READ_TRIES => attempt += 1,
                Err(err) => return Err(format!("DEBUG LOADAOF: {err}")),
            }
        };
        let reply = shard
            .run_on_in(
                owner,
                id,
                Box::new(move |s: &Shard| install(s, fresh, flush)),
            )
            .await;
        if let Frame::Error(e) = reply {
            return Err(e);
        }
    }
    Ok(())
}

/// Waits until every shard's log is in its files ([`crate::aof::LogWriter::all_written`]).
/// Errors: a shard without the log, a rewrite in progress, [`LOADAOF_WRITE_WAIT`] passed.
async fn wait_written(shard: &Shard, id: Option<TxnId>) -> Result<(), String> {
    let started = Instant::now();
    loop {
        let states = shard
            .run_on_all_in(id, || {
                Box::new(|s: &Shard| match &s.aof {
                    None => Frame::error("no log"),
                    Some(aof) if aof.rewrite.started.get().is_some() => Frame::error("rewriting"),
                    Some(aof) => Frame::Integer(i64::from(aof.writer.all_written())),
                })
            })
            .await;
        if states.iter().any(|f| *f == Frame::error("rewriting")) {
            return Err("DEBUG LOADAOF: an append-only log rewrite is in progress".into());
        }
        if states.iter().any(|f| matches!(f, Frame::Error(_))) {
            return Err("DEBUG LOADAOF needs the append-only log (--appendonly yes)".into());
        }
        if states.iter().all(|f| *f == Frame::Integer(1)) {
            return Ok(());
        }
        if started.elapsed() > LOADAOF_WRITE_WAIT {
            return Err("DEBUG LOADAOF: the append-only log cannot be written".into());
        }
        glommio::timer::sleep(WRITTEN_POLL).await;
    }
}

/// Shard `owner`'s log files under `dir` (as its manifest on disk names them) replayed into
/// `databases` fresh databases. Errors: a missing manifest or file, a record that does not
/// replay (a truncated one included: nothing is cut here).
async fn read_logs(
    dir: &std::path::Path,
    owner: usize,
    databases: usize,
    limits: crate::keyspace::HashLimits,
) -> Result<Vec<Db>, String> {
    let mut fresh: Vec<Db> = (0..databases)
        .map(|_| {
            let mut db = Db::new();
            db.set_hash_limits(limits);
            // Only their maps are read (by `absorb`): no SCAN index is built.
            db.start_bulk_load();
            db
        })
        .collect();
    let manifest = Manifest::load(dir, owner).await?;
    let files = manifest.base.iter().chain(manifest.incrs.iter());
    for name in files {
        let path = dir.join(name);
        let shown = path.display().to_string();
        let file = glommio::io::OpenOptions::new()
            .read(true)
            .buffered_open(&path)
            .await
            .map_err(|err| format!("cannot open {shown}: {err}"))?;
        let replayed = replay::replay(&file, &shown, &mut fresh, false).await;
        let _ = file.close().await;
        replayed?;
    }
    Ok(fresh)
}

/// Installs `fresh` (one shard's databases as read from its log) as shard `s`'s keyspace:
/// with `flush`, every key not in `fresh` goes. Keys are removed and set one by one (not
/// [`Db::flush`]), so a rewrite that starts meanwhile still dumps every key.
fn install(s: &Shard, fresh: Vec<Db>, flush: bool) -> Frame {
    let mut dbs = s.dbs.borrow_mut();
    for (db, fresh) in dbs.iter_mut().zip(fresh) {
        if flush {
            let keys: Vec<Bytes> = db
                .entries()
                .map(|(k, _, _)| Bytes::copy_from_slice(k))
                .collect();
            for key in keys {
                db.remove(&key, 0);
            }
        }
        db.absorb(fresh, |_| true);
    }
    Frame::ok()
}
