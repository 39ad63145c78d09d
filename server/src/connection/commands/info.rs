//! INFO [section …]: server, clients, stats, persistence, keyspace (Redis 7 field names),
//! gathered from every shard.

use std::rc::Rc;

use bytes::Bytes;

use crate::connection::session::Session;
use crate::resp::Frame;
use crate::shard::Shard;

/// Counters of one shard, gathered for INFO.
#[derive(Debug, Default, Clone, Copy)]
struct ShardFigures {
    keys: i64,
    expires: i64,
    connections_received: i64,
    connected_clients: i64,
    commands_processed: i64,
    rejected_connections: i64,
    aof_current_size: i64,
    aof_base_size: i64,
    aof_buffer_length: i64,
    aof_write_failed: i64,
    aof_changes: i64,
    /// Seconds the rewrite in progress has run, -1 when none.
    rewrite_running_s: i64,
    rewrite_failed: i64,
    rewrites: i64,
    last_rewrite_s: i64,
    last_rewrite_unix: i64,
    rewrite_requested: i64,
}

/// The Unix time (s) the server started, when every shard's log was replayed.
fn start_unix(shard: &Shard) -> i64 {
    let now = crate::shard::unix_time_ms() / 1000;
    now.saturating_sub(shard.shared.started.elapsed().as_secs()) as i64
}

/// LASTSAVE: the Unix time (s) of the last successful rewrite (SAVE, BGSAVE, BGREWRITEAOF
/// or automatic) on any shard, else the start.
pub async fn last_save(shard: &Rc<Shard>) -> Frame {
    let figures = gather(shard).await;
    let last = figures
        .iter()
        .map(|f| f.last_rewrite_unix)
        .max()
        .unwrap_or(0);
    Frame::Integer(last.max(start_unix(shard)))
}

/// Renders the requested sections (`default`/`all`/`everything` or none = all five).
pub async fn info(shard: &Rc<Shard>, _session: &Session, args: &[Bytes]) -> Frame {
    let wanted: Vec<String> = args[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    let all = wanted.is_empty()
        || wanted
            .iter()
            .any(|w| matches!(w.as_str(), "all" | "default" | "everything"));
    let want = |name: &str| all || wanted.iter().any(|w| w == name);

    let figures = gather(shard).await;
    let start = ShardFigures {
        rewrite_running_s: -1,
        last_rewrite_s: -1,
        ..ShardFigures::default()
    };
    let total = figures.iter().fold(start, |acc, f| ShardFigures {
        keys: acc.keys + f.keys,
        expires: acc.expires + f.expires,
        connections_received: acc.connections_received + f.connections_received,
        connected_clients: acc.connected_clients + f.connected_clients,
        commands_processed: acc.commands_processed + f.commands_processed,
        rejected_connections: acc.rejected_connections + f.rejected_connections,
        aof_current_size: acc.aof_current_size + f.aof_current_size,
        aof_base_size: acc.aof_base_size + f.aof_base_size,
        aof_buffer_length: acc.aof_buffer_length + f.aof_buffer_length,
        aof_write_failed: acc.aof_write_failed + f.aof_write_failed,
        aof_changes: acc.aof_changes + f.aof_changes,
        rewrite_running_s: acc.rewrite_running_s.max(f.rewrite_running_s),
        rewrite_failed: acc.rewrite_failed + f.rewrite_failed,
        rewrites: acc.rewrites + f.rewrites,
        last_rewrite_s: acc.last_rewrite_s.max(f.last_rewrite_s),
        last_rewrite_unix: acc.last_rewrite_unix.max(f.last_rewrite_unix),
        rewrite_requested: acc.rewrite_requested + f.rewrite_requested,
    });
    let shared = &shard.shared;
    let mut text = String::new();
    if want("server") {
        let uptime = shared.started.elapsed().as_secs();
        text.push_str(&format!(
            "# Server\r\nredis_version:{}\r\nshardline_version:{}\r\nredis_mode:standalone\r\n\
             os:{}\r\narch_bits:64\r\nmultiplexing_api:io_uring\r\nprocess_id:{}\r\n\
             tcp_port:{}\r\nuptime_in_seconds:{uptime}\r\nuptime_in_days:{}\r\n\
             shards:{}\r\nhash_mode:{}\r\ntask_quota_ms:{}\r\n\r\n",
            crate::REDIS_COMPAT_VERSION,
            env!("CARGO_PKG_VERSION"),
            std::env::consts::OS,
            std::process::id(),
            shared.bound.port(),
            uptime / 86_400,
            shard.nr_shards,
            shared.config.hash_mode,
            shared.config.task_quota_ms,
        ));
    }
    if want("clients") {
        text.push_str(&format!(
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\n\r\n",
            total.connected_clients,
            shared.clients.max()
        ));
    }
    if want("stats") {
        text.push_str(&format!(
            "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\n\
             rejected_connections:{}\r\n\r\n",
            total.connections_received, total.commands_processed, total.rejected_connections
        ));
    }
    if want("persistence") {
        persistence(&mut text, shard, &total);
    }
    if want("keyspace") {
        text.push_str("# Keyspace\r\n");
        for (index, (keys, expires)) in keyspace(shard).await.into_iter().enumerate() {
            if keys > 0 {
                text.push_str(&format!(
                    "db{index}:keys={keys},expires={expires},avg_ttl=0\r\n"
                ));
            }
        }
    }
    while text.ends_with("\r\n\r\n") {
        text.truncate(text.len() - 2);
    }
    Frame::Verbatim {
        format: *b"txt",
        text: Bytes::from(text),
    }
}

/// `# Persistence` with Redis 7's field names; sizes and counts are summed over the shards'
/// logs, times are the longest of any shard, a status is `err` when any shard's is.
fn persistence(text: &mut String, shard: &Shard, total: &ShardFigures) {
    let in_progress = i32::from(total.rewrite_running_s >= 0);
    let enabled = shard.aof.is_some();
    let status = |failed: bool| if failed { "err" } else { "ok" };
    text.push_str(&format!(
        "# Persistence\r\nloading:0\r\nasync_loading:0\r\n\
         rdb_changes_since_last_save:{}\r\nrdb_bgsave_in_progress:0\r\n\
         rdb_last_save_time:{}\r\nrdb_last_bgsave_status:ok\r\n\
         aof_enabled:{}\r\naof_rewrite_in_progress:{in_progress}\r\n\
         aof_rewrite_scheduled:{}\r\naof_last_rewrite_time_sec:{}\r\n\
         aof_current_rewrite_time_sec:{}\r\naof_last_bgrewrite_status:{}\r\n\
         aof_rewrites:{}\r\naof_last_write_status:{}\r\n",
        total.aof_changes,
        total.last_rewrite_unix.max(start_unix(shard)),
        i32::from(enabled),
        i32::from(total.rewrite_requested > 0),
        total.last_rewrite_s,
        total.rewrite_running_s,
        status(total.rewrite_failed > 0),
        total.rewrites,
        status(total.aof_write_failed > 0),
    ));
    if enabled {
        text.push_str(&format!(
            "aof_current_size:{}\r\naof_base_size:{}\r\naof_pending_rewrite:0\r\n\
             aof_buffer_length:{}\r\naof_pending_bio_fsync:0\r\naof_delayed_fsync:0\r\n",
            total.aof_current_size, total.aof_base_size, total.aof_buffer_length
        ));
    }
    text.push_str("\r\n");
}

/// Keys and keys with a deadline in each database, summed over the shards (INFO keyspace).
async fn keyspace(shard: &Rc<Shard>) -> Vec<(i64, i64)> {
    let replies = shard
        .run_stats_on_all(|| {
            Box::new(|s: &Shard| {
                let dbs = s.dbs.borrow();
                let counts = dbs
                    .iter()
                    .flat_map(|db| [db.len() as i64, db.expires_len() as i64]);
                Frame::Array(counts.map(Frame::Integer).collect())
            })
        })
        .await;
    let mut total = vec![(0, 0); shard.shared.config.databases];
    for frame in replies {
        let Frame::Array(items) = frame else {
            continue;
        };
        for (slot, pair) in total.iter_mut().zip(items.chunks(2)) {
            if let [Frame::Integer(keys), Frame::Integer(expires)] = pair {
                slot.0 += keys;
                slot.1 += expires;
            }
        }
    }
    total
}

async fn gather(shard: &Rc<Shard>) -> Vec<ShardFigures> {
    let replies = shard
        .run_stats_on_all(|| {
            Box::new(|s: &Shard| {
                let dbs = s.dbs.borrow();
                let info = &s.info;
                Frame::Array(
                    [
                        dbs.iter().map(|db| db.len() as i64).sum(),
                        dbs.iter().map(|db| db.expires_len() as i64).sum(),
                        info.connections_received.get() as i64,
                        info.connected_clients.get() as i64,
                        info.commands_processed.get() as i64,
                        info.rejected_connections.get() as i64,
                        s.aof.as_ref().map_or(0, |a| a.current_size() as i64),
                        s.aof.as_ref().map_or(0, |a| a.base_size.get() as i64),
                        s.aof.as_ref().map_or(0, |a| a.writer.buffered() as i64),
                        s.aof
                            .as_ref()
                            .map_or(0, |a| i64::from(a.writer.write_failed())),
                        s.aof.as_ref().map_or(0, |a| {
                            (a.writer.appended() - a.rewrite.appended_at_last_save.get()) as i64
                        }),
                        s.aof.as_ref().map_or(0, |a| {
                            a.rewrite
                                .started
                                .get()
                                .map_or(-1, |t| t.elapsed().as_secs() as i64)
                        }),
                        s.aof
                            .as_ref()
                            .map_or(0, |a| i64::from(a.rewrite.last_failed.get())),
                        s.aof.as_ref().map_or(0, |a| a.rewrite.done.get() as i64),
                        s.aof
                            .as_ref()
                            .map_or(-1, |a| a.rewrite.last_duration_s.get()),
                        s.aof
                            .as_ref()
                            .map_or(0, |a| a.rewrite.last_ok_unix.get() as i64),
                        s.aof
                            .as_ref()
                            .map_or(0, |a| i64::from(a.rewrite.requested.get())),
                    ]
                    .into_iter()
                    .map(Frame::Integer)
                    .collect(),
                )
            })
        })
        .await;
    replies
        .into_iter()
        .map(|frame| {
            let mut v = [0i64; 17];
            if let Frame::Array(items) = frame {
                for (slot, item) in v.iter_mut().zip(items) {
                    if let Frame::Integer(n) = item {
                        *slot = n;
                    }
                }
            }
            ShardFigures {
                keys: v[0],
                expires: v[1],
                connections_received: v[2],
                connected_clients: v[3],
                commands_processed: v[4],
                rejected_connections: v[5],
                aof_current_size: v[6],
                aof_base_size: v[7],
                aof_buffer_length: v[8],
                aof_write_failed: v[9],
                aof_changes: v[10],
                rewrite_running_s: v[11],
                rewrite_failed: v[12],
                rewrites: v[13],
                last_rewrite_s: v[14],
                last_rewrite_unix: v[15],
                rewrite_requested: v[16],
            }
        })
        .collect()
}
