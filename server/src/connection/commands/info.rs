//! INFO [section …] with Redis 7.0's sections, field names and section selection
//! (server.c `genRedisInfoString`): `default` (also no argument), `all` (default plus
//! commandstats), `everything`, or any list of section names, case-insensitively. Figures come
//! from every shard ([`super::info_figures`]).

use std::fmt::Write as _;
use std::rc::Rc;
use std::sync::OnceLock;

use bytes::Bytes;

use super::info_figures::{gather, Figures};
use crate::introspection::process::{self, cpu_times, human_bytes};
use crate::resp::Frame;
use crate::shard::Shard;

/// Every section, in output order (`all`, `everything`).
const ALL_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "commandstats",
    "errorstats",
    "cluster",
    "keyspace",
];

/// The sections `default` (and no argument) leaves out.
const NOT_DEFAULT: &[&str] = &["commandstats"];

fn is_default(section: &str) -> bool {
    !NOT_DEFAULT.contains(&section)
}

/// The sections `args` (after INFO) select, in output order.
fn selected(args: &[Bytes]) -> Vec<&'static str> {
    let wanted: Vec<String> = args
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    let all = wanted.iter().any(|w| w == "all" || w == "everything");
    let default = wanted.is_empty() || wanted.iter().any(|w| w == "default");
    ALL_SECTIONS
        .iter()
        .copied()
        .filter(|s| all || (default && is_default(s)) || wanted.iter().any(|w| w == s))
        .collect()
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
    Frame::Integer(figures.total.last_rewrite_unix.max(start_unix(shard)))
}

/// Renders the selected sections.
pub async fn info(shard: &Rc<Shard>, args: &[Bytes]) -> Frame {
    let sections = selected(&args[1..]);
    let figures = if sections.is_empty() {
        Figures::default()
    } else {
        gather(shard).await
    };
    let mut text = String::new();
    for section in sections {
        if !text.is_empty() {
            text.push_str("\r\n");
        }
        match section {
            "server" => server(&mut text, shard),
            "clients" => clients(&mut text, shard, &figures),
            "memory" => memory(shard, &mut text),
            "persistence" => persistence(&mut text, shard, &figures),
            "stats" => stats(&mut text, &figures, super::pubsub::counts(shard).await),
            "replication" => replication(&mut text),
            "cpu" => cpu(&mut text, &figures),
            "modules" => text.push_str("# Modules\r\n"),
            "commandstats" => commandstats(&mut text, &figures),
            "errorstats" => errorstats(&mut text, &figures),
            "cluster" => text.push_str("# Cluster\r\ncluster_enabled:0\r\n"),
            _ => keyspace(&mut text, &figures),
        }
    }
    Frame::Verbatim {
        format: *b"txt",
        text: Bytes::from(text),
    }
}

/// 40 hex digits, random per process (Redis `run_id`).
fn run_id() -> &'static str {
    static RUN_ID: OnceLock<String> = OnceLock::new();
    RUN_ID.get_or_init(|| {
        (0..20)
            .map(|_| format!("{:02x}", rand::random::<u8>()))
            .collect()
    })
}

/// `uname -s -r -m`, as Redis's `os` field.
fn os_name() -> String {
    let mut name = std::mem::MaybeUninit::<libc::utsname>::zeroed();
    // SAFETY: uname fills the struct or fails; its fields are NUL-terminated.
    let name = unsafe {
        if libc::uname(name.as_mut_ptr()) != 0 {
            return std::env::consts::OS.to_string();
        }
        name.assume_init()
    };
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!(
        "{} {} {}",
        field(&name.sysname),
        field(&name.release),
        field(&name.machine)
    )
}

fn server(text: &mut String, shard: &Shard) {
    let shared = &shard.shared;
    let uptime = shared.started.elapsed().as_secs();
    let now_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0);
    let executable = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let _ = write!(
        text,
        "# Server\r\nredis_version:{}\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\n\
         redis_build_id:0\r\nredis_mode:standalone\r\nos:{}\r\narch_bits:{}\r\n\
         monotonic_clock:POSIX clock_gettime\r\nmultiplexing_api:io_uring\r\n\
         process_id:{}\r\nprocess_supervised:no\r\nrun_id:{}\r\ntcp_port:{}\r\n\
         server_time_usec:{now_us}\r\nuptime_in_seconds:{uptime}\r\nuptime_in_days:{}\r\n\
         hz:10\r\nconfigured_hz:10\r\nlru_clock:{}\r\nexecutable:{executable}\r\n\
         config_file:\r\nio_threads_active:0\r\nshardline_version:{}\r\nshards:{}\r\n\
         hash_mode:{}\r\nhash_batch_lanes:{}\r\ntask_quota_ms:{}\r\n",
        crate::REDIS_COMPAT_VERSION,
        os_name(),
        usize::BITS,
        std::process::id(),
        run_id(),
        shared.bound.port(),
        uptime / 86_400,
        (now_us / 1_000_000) & 0xFF_FFFF,
        env!("CARGO_PKG_VERSION"),
        shard.nr_shards,
        shared.config.hash_mode,
        shard.verifier.batch_kernel().map_or(1, |k| k.lanes()),
        shared.config.task_quota_ms,
    );
}

fn clients(text: &mut String, shard: &Shard, f: &Figures) {
    let _ = write!(
        text,
        "# Clients\r\nconnected_clients:{}\r\ncluster_connections:0\r\nmaxclients:{}\r\n\
         client_recent_max_input_buffer:{}\r\nclient_recent_max_output_buffer:{}\r\n\
         blocked_clients:{}\r\ntracking_clients:0\r\nclients_in_timeout_table:0\r\n",
        f.total.connected_clients,
        shard.shared.clients.max(),
        f.total.max_query_buffer,
        f.total.max_output_buffer,
        f.total.blocked_clients,
    );
}

/// The largest `used_memory` INFO has seen (Redis `used_memory_peak`).
fn peak_memory(used: u64) -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static PEAK: AtomicU64 = AtomicU64::new(0);
    PEAK.fetch_max(used, Ordering::Relaxed).max(used)
}

fn memory(shard: &Shard, text: &mut String) {
    let used = process::used_memory();
    let rss = process::rss_bytes();
    let peak = peak_memory(used);
    let system = process::total_system_memory();
    let (maxmemory, policy) = {
        let runtime = shard.runtime.borrow();
        (runtime.maxmemory, runtime.maxmemory_policy.name())
    };
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    // This shard's Lua VMs; the script cache and the libraries are the server's.
    let lua = shard.scripting.memory_used();
    let (scripts, script_bytes) = shard.shared.scripts.stats();
    let functions = shard
        .shared
        .scripts
        .functions
        .read()
        .map_or(0, |libraries| libraries.functions_count());
    let _ = write!(
        text,
        "# Memory\r\nused_memory:{used}\r\nused_memory_human:{}\r\nused_memory_rss:{rss}\r\n\
         used_memory_rss_human:{}\r\nused_memory_peak:{peak}\r\nused_memory_peak_human:{}\r\n\
         used_memory_peak_perc:{:.2}%\r\ntotal_system_memory:{system}\r\n\
         total_system_memory_human:{}\r\nused_memory_lua:{lua}\r\nused_memory_lua_human:{}\r\n\
         used_memory_scripts_eval:{script_bytes}\r\nnumber_of_cached_scripts:{scripts}\r\n\
         number_of_functions:{functions}\r\nused_memory_scripts:{script_bytes}\r\n\
         used_memory_scripts_human:{}\r\n\
         maxmemory:{maxmemory}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{policy}\r\n\
         mem_fragmentation_ratio:{:.2}\r\nmem_fragmentation_bytes:{}\r\n\
         mem_allocator:mimalloc\r\nlazyfree_pending_objects:0\r\nlazyfreed_objects:0\r\n",
        human_bytes(used),
        human_bytes(rss),
        human_bytes(peak),
        ratio(used, peak) * 100.0,
        human_bytes(system),
        human_bytes(lua as u64),
        human_bytes(script_bytes as u64),
        human_bytes(maxmemory),
        ratio(rss, used),
        rss as i64 - used as i64,
    );
}

/// `# Persistence` with Redis 7's field names; sizes and counts are summed over the shards'
/// logs, times are the longest of any shard, a status is `err` when any shard's is.
fn persistence(text: &mut String, shard: &Shard, f: &Figures) {
    let total = &f.total;
    let in_progress = i32::from(total.rewrite_running_s >= 0);
    let enabled = shard.aof.is_some();
    let status = |failed: bool| if failed { "err" } else { "ok" };
    let _ = write!(
        text,
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
    );
    if enabled {
        let _ = write!(
            text,
            "aof_current_size:{}\r\naof_base_size:{}\r\naof_pending_rewrite:0\r\n\
             aof_buffer_length:{}\r\naof_pending_bio_fsync:0\r\naof_delayed_fsync:0\r\n",
            total.aof_current_size, total.aof_base_size, total.aof_buffer_length
        );
    }
}

/// The Stats section; `pubsub` is the distinct channels and patterns subscribed on any shard.
fn stats(text: &mut String, f: &Figures, pubsub: (usize, usize)) {
    let t = &f.total;
    let milli = |v: i64| v as f64 / 1000.0;
    let _ = write!(
        text,
        "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\n\
         instantaneous_ops_per_sec:{}\r\ntotal_net_input_bytes:{}\r\n\
         total_net_output_bytes:{}\r\ninstantaneous_input_kbps:{:.2}\r\n\
         instantaneous_output_kbps:{:.2}\r\nrejected_connections:{}\r\nsync_full:0\r\n\
         sync_partial_ok:0\r\nsync_partial_err:0\r\nexpired_keys:{}\r\n\
         expired_stale_perc:0.00\r\nexpired_time_cap_reached_count:0\r\n\
         evicted_keys:{}\r\nevicted_clients:0\r\ntotal_eviction_exceeded_time:0\r\n\
         current_eviction_exceeded_time:0\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\n\
         pubsub_channels:{}\r\npubsub_patterns:{}\r\npubsubshard_channels:0\r\n\
         latest_fork_usec:0\r\ntotal_forks:0\r\nmigrate_cached_sockets:0\r\n\
         slave_expires_tracked_keys:0\r\nactive_defrag_hits:0\r\nactive_defrag_misses:0\r\n\
         active_defrag_key_hits:0\r\nactive_defrag_key_misses:0\r\ntracking_total_keys:0\r\n\
         tracking_total_items:0\r\ntracking_total_prefixes:0\r\n\
         unexpected_error_replies:0\r\ntotal_error_replies:{}\r\n\
         dump_payload_sanitizations:0\r\nio_threaded_reads_processed:0\r\n\
         io_threaded_writes_processed:0\r\n",
        t.connections_received,
        t.commands_processed,
        t.ops_per_sec_milli / 1000,
        t.net_input_bytes,
        t.net_output_bytes,
        milli(t.input_kbps_milli),
        milli(t.output_kbps_milli),
        t.rejected_connections,
        t.expired_keys,
        t.evicted_keys,
        t.keyspace_hits,
        t.keyspace_misses,
        pubsub.0,
        pubsub.1,
        t.error_replies,
    );
}

fn replication(text: &mut String) {
    let _ = write!(
        text,
        "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n\
         master_failover_state:no-failover\r\nmaster_replid:{}\r\n\
         master_replid2:0000000000000000000000000000000000000000\r\n\
         master_repl_offset:0\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\n\
         repl_backlog_size:1048576\r\nrepl_backlog_first_byte_offset:0\r\n\
         repl_backlog_histlen:0\r\n",
        run_id()
    );
}

fn cpu(text: &mut String, f: &Figures) {
    let seconds = |d: std::time::Duration| format!("{}.{:06}", d.as_secs(), d.subsec_micros());
    let us = |n: i64| seconds(std::time::Duration::from_micros(n.max(0) as u64));
    let own = cpu_times(libc::RUSAGE_SELF);
    let children = cpu_times(libc::RUSAGE_CHILDREN);
    let _ = write!(
        text,
        "# CPU\r\nused_cpu_sys:{}\r\nused_cpu_user:{}\r\nused_cpu_sys_children:{}\r\n\
         used_cpu_user_children:{}\r\nused_cpu_sys_main_thread:{}\r\n\
         used_cpu_user_main_thread:{}\r\n",
        seconds(own.sys),
        seconds(own.user),
        seconds(children.sys),
        seconds(children.user),
        us(f.total.thread_cpu_sys_us),
        us(f.total.thread_cpu_user_us),
    );
}

fn commandstats(text: &mut String, f: &Figures) {
    text.push_str("# Commandstats\r\n");
    for (name, c) in &f.calls {
        let per_call = if c.calls == 0 {
            0.0
        } else {
            c.usec as f64 / c.calls as f64
        };
        let _ = write!(
            text,
            "cmdstat_{name}:calls={},usec={},usec_per_call={per_call:.2},rejected_calls={},\
             failed_calls={}\r\n",
            c.calls, c.usec, c.rejected_calls, c.failed_calls
        );
    }
}

fn errorstats(text: &mut String, f: &Figures) {
    text.push_str("# Errorstats\r\n");
    for (code, n) in &f.errors {
        let _ = write!(text, "errorstat_{code}:count={n}\r\n");
    }
}

fn keyspace(text: &mut String, f: &Figures) {
    text.push_str("# Keyspace\r\n");
    for (index, (keys, expires)) in f.keyspace.iter().enumerate() {
        if *keys > 0 {
            let _ = write!(
                text,
                "db{index}:keys={keys},expires={expires},avg_ttl=0\r\n"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sections(line: &str) -> Vec<&'static str> {
        let args: Vec<Bytes> = line
            .split_whitespace()
            .map(|s| Bytes::copy_from_slice(s.as_bytes()))
            .collect();
        selected(&args)
    }

    #[test]
    fn selection() {
        let default: Vec<&str> = ALL_SECTIONS
            .iter()
            .copied()
            .filter(|s| *s != "commandstats")
            .collect();
        assert_eq!(sections(""), default);
        assert_eq!(sections("default"), default);
        assert_eq!(sections("all"), ALL_SECTIONS);
        assert_eq!(sections("cpu sentinel"), ["cpu"]);
        assert_eq!(sections("commandSTATS"), ["commandstats"]);
        assert_eq!(sections("keyspace CPU"), ["cpu", "keyspace"]);
        assert_eq!(sections("cpu default"), default);
        assert!(sections("nosuch").is_empty());
    }
}
