//! The per-shard figures behind INFO, gathered from every shard in one hop each and merged:
//! counters are summed, durations and buffer peaks take the largest.

use std::rc::Rc;

use bytes::Bytes;

use crate::introspection::command_stats::CallStats;
use crate::introspection::process::cpu_times;
use crate::resp::Frame;
use crate::shard::Shard;

macro_rules! shard_figures {
    (summed: [$($s:ident),* $(,)?], largest: [$($m:ident),* $(,)?]) => {
        /// One shard's INFO figures (and, merged, the server's).
        #[derive(Debug, Default, Clone, Copy)]
        pub struct ShardFigures {
            $(pub $s: i64,)*
            $(pub $m: i64,)*
        }

        impl ShardFigures {
            fn to_frame(self) -> Frame {
                Frame::Array(vec![$(Frame::Integer(self.$s),)* $(Frame::Integer(self.$m),)*])
            }

            fn from_frame(frame: &Frame) -> Self {
                let items: &[Frame] = match frame {
                    Frame::Array(items) => items,
                    _ => &[],
                };
                let mut values = items.iter().map(|f| match f {
                    Frame::Integer(n) => *n,
                    _ => 0,
                });
                Self {
                    $($s: values.next().unwrap_or(0),)*
                    $($m: values.next().unwrap_or(0),)*
                }
            }

            fn merge(self, other: Self) -> Self {
                Self {
                    $($s: self.$s + other.$s,)*
                    $($m: self.$m.max(other.$m),)*
                }
            }
        }
    };
}

shard_figures!(
    summed: [
        keys, expires, connections_received, connected_clients, commands_processed,
        rejected_connections, aof_current_size, aof_base_size, aof_buffer_length,
        aof_write_failed, aof_changes, rewrite_failed, rewrites, rewrite_requested,
        keyspace_hits, keyspace_misses, expired_keys, net_input_bytes, net_output_bytes,
        // Rates in thousandths, so they travel as integers.
        ops_per_sec_milli, input_kbps_milli, output_kbps_milli,
        // CPU time of the shards' threads, µs (INFO `used_cpu_*_main_thread`).
        thread_cpu_sys_us, thread_cpu_user_us,
        error_replies, evicted_keys, blocked_clients,
    ],
    largest: [
        // Seconds the rewrite in progress has run, -1 when none.
        rewrite_running_s, last_rewrite_s, last_rewrite_unix,
        max_query_buffer, max_output_buffer,
    ]
);

/// Everything INFO needs from every shard, merged.
#[derive(Debug, Default)]
pub struct Figures {
    /// Summed counters.
    pub total: ShardFigures,
    /// Keys and keys with a deadline per database.
    pub keyspace: Vec<(i64, i64)>,
    /// Per command, summed.
    pub calls: Vec<(String, CallStats)>,
    /// Per error code, summed.
    pub errors: Vec<(String, u64)>,
}

fn own_figures(s: &Shard) -> ShardFigures {
    let dbs = s.dbs.borrow();
    let info = &s.info;
    let aof = s.aof.as_ref();
    let keyspace = dbs.iter().map(|db| db.stats()).fold((0, 0, 0), |acc, st| {
        (acc.0 + st.hits, acc.1 + st.misses, acc.2 + st.expired)
    });
    let rates = info.rates.figures();
    let thread = cpu_times(libc::RUSAGE_THREAD);
    let (max_qbuf, max_omem) = info.clients.max_buffers();
    ShardFigures {
        keys: dbs.iter().map(|db| db.len() as i64).sum(),
        expires: dbs.iter().map(|db| db.expires_len() as i64).sum(),
        connections_received: info.connections_received.get() as i64,
        connected_clients: info.connected_clients.get() as i64,
        commands_processed: info.commands_processed.get() as i64,
        rejected_connections: info.rejected_connections.get() as i64,
        aof_current_size: aof.map_or(0, |a| a.current_size() as i64),
        aof_base_size: aof.map_or(0, |a| a.base_size.get() as i64),
        aof_buffer_length: aof.map_or(0, |a| a.writer.buffered() as i64),
        aof_write_failed: aof.map_or(0, |a| i64::from(a.writer.write_failed())),
        aof_changes: aof.map_or(0, |a| {
            (a.writer.appended() - a.rewrite.appended_at_last_save.get()) as i64
        }),
        rewrite_failed: aof.map_or(0, |a| i64::from(a.rewrite.last_failed.get())),
        rewrites: aof.map_or(0, |a| a.rewrite.done.get() as i64),
        rewrite_requested: aof.map_or(0, |a| i64::from(a.rewrite.requested.get())),
        keyspace_hits: keyspace.0 as i64,
        keyspace_misses: keyspace.1 as i64,
        expired_keys: keyspace.2 as i64,
        net_input_bytes: info.net_input_bytes.get() as i64,
        net_output_bytes: info.net_output_bytes.get() as i64,
        ops_per_sec_milli: (rates.ops_per_sec * 1000.0) as i64,
        input_kbps_milli: (rates.input_kbps * 1000.0) as i64,
        output_kbps_milli: (rates.output_kbps * 1000.0) as i64,
        thread_cpu_sys_us: thread.sys.as_micros() as i64,
        thread_cpu_user_us: thread.user.as_micros() as i64,
        error_replies: info.calls.error_replies() as i64,
        evicted_keys: info.evicted_keys.get() as i64,
        // Connections held back by CLIENT PAUSE count too, as in Redis.
        blocked_clients: (s.blocking.blocked_clients() + info.pause.waiting()) as i64,
        rewrite_running_s: aof.map_or(-1, |a| {
            a.rewrite
                .started
                .get()
                .map_or(-1, |t| t.elapsed().as_secs() as i64)
        }),
        last_rewrite_s: aof.map_or(-1, |a| a.rewrite.last_duration_s.get()),
        last_rewrite_unix: aof.map_or(0, |a| a.rewrite.last_ok_unix.get() as i64),
        max_query_buffer: max_qbuf as i64,
        max_output_buffer: max_omem as i64,
    }
}

/// `[figures, [db keys, db expires]…, [name, calls, usec, rejected, failed]…, [code, n]…]`.
fn shard_reply(s: &Shard) -> Frame {
    let dbs = s.dbs.borrow();
    let keyspace = dbs
        .iter()
        .flat_map(|db| [db.len() as i64, db.expires_len() as i64])
        .map(Frame::Integer)
        .collect();
    drop(dbs);
    let calls = s
        .info
        .calls
        .snapshot_calls()
        .into_iter()
        .flat_map(|(name, c)| {
            [
                Frame::Bulk(Bytes::from_static(name.as_bytes())),
                Frame::Integer(c.calls as i64),
                Frame::Integer(c.usec as i64),
                Frame::Integer(c.rejected_calls as i64),
                Frame::Integer(c.failed_calls as i64),
            ]
        })
        .collect();
    let errors = s
        .info
        .calls
        .snapshot_errors()
        .into_iter()
        .flat_map(|(code, n)| [Frame::Bulk(Bytes::from(code)), Frame::Integer(n as i64)])
        .collect();
    Frame::Array(vec![
        own_figures(s).to_frame(),
        Frame::Array(keyspace),
        Frame::Array(calls),
        Frame::Array(errors),
    ])
}

fn integer(frame: &Frame) -> i64 {
    match frame {
        Frame::Integer(n) => *n,
        _ => 0,
    }
}

fn text(frame: &Frame) -> String {
    match frame {
        Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        _ => String::new(),
    }
}

/// Gathers and merges every shard's figures. The replies do not wait for any shard's log
/// to reach the disk ([`Shard::run_stats_on_all`]).
pub async fn gather(shard: &Rc<Shard>) -> Figures {
    let replies = shard.run_stats_on_all(|| Box::new(shard_reply)).await;
    let mut figures = Figures {
        keyspace: vec![(0, 0); shard.shared.config.databases],
        ..Figures::default()
    };
    let mut total: Option<ShardFigures> = None;
    let mut calls: Vec<(String, CallStats)> = Vec::new();
    let mut errors: Vec<(String, u64)> = Vec::new();
    for reply in &replies {
        let Frame::Array(parts) = reply else {
            continue;
        };
        let [own, keyspace, shard_calls, shard_errors] = parts.as_slice() else {
            continue;
        };
        let own = ShardFigures::from_frame(own);
        total = Some(total.map_or(own, |t| t.merge(own)));
        if let Frame::Array(items) = keyspace {
            for (slot, pair) in figures.keyspace.iter_mut().zip(items.chunks(2)) {
                if let [keys, expires] = pair {
                    slot.0 += integer(keys);
                    slot.1 += integer(expires);
                }
            }
        }
        if let Frame::Array(items) = shard_calls {
            for row in items.chunks(5) {
                let [name, c, u, r, f] = row else { continue };
                let add = CallStats {
                    calls: integer(c) as u64,
                    usec: integer(u) as u64,
                    rejected_calls: integer(r) as u64,
                    failed_calls: integer(f) as u64,
                };
                let name = text(name);
                match calls.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, s)) => {
                        s.calls += add.calls;
                        s.usec += add.usec;
                        s.rejected_calls += add.rejected_calls;
                        s.failed_calls += add.failed_calls;
                    }
                    None => calls.push((name, add)),
                }
            }
        }
        if let Frame::Array(items) = shard_errors {
            for row in items.chunks(2) {
                let [code, n] = row else { continue };
                let code = text(code);
                match errors.iter_mut().find(|(c, _)| *c == code) {
                    Some((_, count)) => *count += integer(n) as u64,
                    None => errors.push((code, integer(n) as u64)),
                }
            }
        }
    }
    calls.sort_by(|a, b| a.0.cmp(&b.0));
    errors.sort_by(|a, b| a.0.cmp(&b.0));
    figures.total = total.unwrap_or_default();
    figures.calls = calls;
    figures.errors = errors;
    figures
}

/// CONFIG RESETSTAT (Redis 7.0 `resetServerStats`): zeroes every shard's command, error,
/// connection, network and keyspace counters. Connected clients and keys stay.
pub async fn reset_stats(shard: &Rc<Shard>) -> Frame {
    shard
        .run_stats_on_all(|| {
            Box::new(|s: &Shard| {
                let info = &s.info;
                info.calls.reset();
                info.commands_processed.set(0);
                info.connections_received.set(0);
                info.rejected_connections.set(0);
                info.net_input_bytes.set(0);
                info.net_output_bytes.set(0);
                info.rates.reset();
                for db in s.dbs.borrow_mut().iter_mut() {
                    db.reset_stats();
                }
                Frame::ok()
            })
        })
        .await;
    Frame::ok()
}
