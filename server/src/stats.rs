//! Once a second, per shard: read glommio's executor and task-queue statistics (the getters
//! reset what they read, so this is the only reader) and add the deltas to Prometheus; sample
//! the counters behind INFO's instantaneous rates; export the keyspace's size.

use crate::shard::Shard;

/// Reads this shard's executor and queue statistics and exports them.
pub fn collect(shard: &Shard) {
    let info = &shard.info;
    info.rates.sample(
        info.commands_processed.get(),
        info.net_input_bytes.get(),
        info.net_output_bytes.get(),
    );
    let ex = glommio::executor();
    shard.metrics.record_executor_stats(&ex.executor_stats());
    let [main, auth, maintenance] = crate::shard::TaskQueues::GROUPS;
    for (group, handle) in [
        (main, shard.queues.main),
        (auth, shard.queues.auth),
        (maintenance, shard.queues.maintenance),
    ] {
        if let Ok(stats) = ex.task_queue_stats(handle) {
            shard.metrics.record_task_queue_stats(group, &stats);
        }
    }
    if let Some(aof) = &shard.aof {
        let stats = aof.writer.take_stats();
        shard.metrics.record_aof(
            shardline_metrics::AofTotals {
                records: stats.records,
                bytes_written: stats.bytes_written,
                writes: stats.writes,
                records_synced: stats.records_synced,
                cpu_yields: stats.cpu_yields,
                write_errors: stats.write_errors,
            },
            aof.current_size(),
            &stats.fsync_latencies_us,
        );
    }
    let (keys, used_bytes) = shard
        .dbs
        .borrow()
        .iter()
        .fold((0u64, 0u64), |(keys, bytes), db| {
            (keys + db.len() as u64, bytes + db.used_bytes())
        });
    shard.metrics.set_keyspace(keys, used_bytes);
    if let Some(pool) = &shard.shared.offload {
        shard
            .metrics
            .set_password_hash_offload_queue_depth(pool.queue_depth());
    }
}
