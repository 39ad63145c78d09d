//! The restart table (issue 9): how long a server takes to load an append-only log of
//! `plan.restart_keys` distinct keys at start. Each server gets a fresh data directory with
//! `appendfsync everysec`; the harness writes `SET restart:<i> <value>` for every `i` over one
//! TLS connection in pipelined batches (deterministic keys, unlike redis-benchmark `-r`),
//! checks DBSIZE, stops the server (SIGTERM: both write out their logs), then starts it
//! `plan.runs` times on that directory and times each start.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use super::endpoint::Endpoint;
use super::error::{HarnessError, IoContext};
use super::plan::{HashMode, Persistence};
use super::redis::RedisOptions;
use super::results::{RestartRow, RestartRun};
use super::rpc::{REDIS, SHARDLINE};
use super::server::ServerSpec;
use super::session::Session;
use super::shardline::ShardlineOptions;
use crate::load::conn::{Conn, Connector, Stage};
use crate::load::{Credentials, LoadError, Target, TlsTarget};
use crate::resp::{self, Reply};
use crate::stats::Summary;

/// SETs written per round trip while filling the log.
const BATCH: u64 = 1_000;

/// Longest a start (replay included) may take before the run fails.
const START_LIMIT: Duration = Duration::from_secs(300);

/// Pause between two readiness polls.
const POLL: Duration = Duration::from_millis(2);

pub(super) fn load_err(what: &str) -> impl Fn(LoadError) -> HarnessError + '_ {
    move |e| HarnessError::Process {
        what: what.to_owned(),
        detail: e.to_string(),
    }
}

/// A connector to `ep` (TLS with its CA, the benchmark user) with `io_timeout` per operation.
pub(super) fn connector(ep: &Endpoint, io_timeout: Duration) -> Result<Connector, HarnessError> {
    Connector::new(Target {
        addr: SocketAddr::from((Ipv4Addr::LOCALHOST, ep.port)),
        tls: ep.tls_ca.clone().map(|ca_file| TlsTarget {
            ca_file,
            server_name: "localhost".into(),
        }),
        credentials: Some(Credentials {
            user: ep.user.clone(),
            password: ep.password.clone(),
        }),
        connect_timeout: Duration::from_secs(2),
        io_timeout,
    })
    .map_err(load_err("restart client"))
}

/// DBSIZE's reply: `Ok(Some(n))`, `Ok(None)` while the server is still loading (`-LOADING`).
fn dbsize(conn: &mut Conn) -> Result<Option<u64>, LoadError> {
    let mut request = Vec::new();
    resp::encode_command(&mut request, &["DBSIZE"]);
    let (replies, _) = conn.round_trip_raw(&request, 1, Stage::Command)?;
    match replies.first() {
        Some(Reply::Integer(n)) => Ok(u64::try_from(*n).ok()),
        Some(Reply::Error(e)) if e.starts_with("LOADING") => Ok(None),
        other => Err(LoadError::Reply(format!("DBSIZE answered {other:?}"))),
    }
}

/// Writes `SET restart:<i> <value>` for `i` in `0..keys` in batches of [`BATCH`]; returns
/// DBSIZE afterwards.
fn fill(ep: &Endpoint, keys: u64, value_bytes: u32) -> Result<u64, HarnessError> {
    let fail = load_err("filling the log");
    let mut conn = connector(ep, Duration::from_secs(60))?
        .open_authenticated()
        .map_err(&fail)?;
    let value = vec![b'v'; value_bytes as usize];
    let mut request = Vec::new();
    let mut next = 0;
    while next < keys {
        let end = (next + BATCH).min(keys);
        request.clear();
        for i in next..end {
            let key = format!("restart:{i}");
            resp::encode_command(&mut request, &[b"SET".as_slice(), key.as_bytes(), &value]);
        }
        let count = usize::try_from(end - next).unwrap_or(usize::MAX);
        conn.round_trip(&request, count, Stage::Command)
            .map_err(&fail)?;
        next = end;
    }
    dbsize(&mut conn)
        .map_err(&fail)?
        .ok_or_else(|| HarnessError::Config("server loading after the writes".into()))
}

/// Bytes of every file under `dir`.
fn dir_bytes(dir: &Path) -> Result<u64, HarnessError> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).context(|| format!("listing {}", dir.display()))? {
        let entry = entry.context(|| format!("listing {}", dir.display()))?;
        let meta = entry
            .metadata()
            .context(|| format!("reading {}", entry.path().display()))?;
        total += if meta.is_dir() {
            dir_bytes(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

/// Reads a `std::time::Duration` printed with `{:?}` (`1.234s`, `850.5ms`, `12µs`, `7ns`).
pub fn parse_debug_duration(text: &str) -> Option<f64> {
    let units = [("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3), ("s", 1.0)];
    units.iter().find_map(|(unit, scale)| {
        let number: f64 = text.strip_suffix(unit)?.parse().ok()?;
        Some(number * scale)
    })
}

/// Load time in seconds from a shardline replay line (`shard 0: replayed N command(s) from
/// F file(s) of DIR (B bytes) in 1.234s: K keys; appending to P`, server/src/server.rs).
pub fn shardline_replay_seconds(line: &str) -> Option<f64> {
    let rest = &line[line.find("replayed ")?..];
    let took = rest.rsplit_once(" in ")?.1.split(':').next()?;
    parse_debug_duration(took.trim())
}

/// Load time in seconds from redis-server 7's `DB loaded from append only file: 1.234
/// seconds` (aof.c, `loadAppendOnlyFiles` caller in server.c).
pub fn redis_load_seconds(line: &str) -> Option<f64> {
    let marker = "DB loaded from append only file: ";
    let rest = &line[line.find(marker)? + marker.len()..];
    rest.strip_suffix(" seconds")?.trim().parse().ok()
}

/// One start on `spec`'s data: spawn, the load time the server logs, the first DBSIZE.
fn one_start(session: &Session, spec: &ServerSpec) -> Result<RestartRun, HarnessError> {
    let started = Instant::now();
    let mut server = spec.start(&session.files)?;
    let ep = server.endpoint().clone();
    let fail = load_err("polling DBSIZE");
    let client = connector(&ep, START_LIMIT)?;
    let (keys, ready) = loop {
        // shardline accepts connections (TLS handshakes) only after its replay, so a
        // connection waits in the listen backlog; redis-server answers `-LOADING` meanwhile.
        let polled = client.open_authenticated().and_then(|mut conn| loop {
            match dbsize(&mut conn)? {
                Some(n) => break Ok(n),
                None => thread::sleep(POLL),
            }
        });
        match polled {
            Ok(n) => break (n, started.elapsed()),
            Err(_) if started.elapsed() < START_LIMIT => thread::sleep(POLL),
            Err(e) => return Err(fail(e)),
        }
    };
    let load_s = match spec {
        ServerSpec::Shardline(o) => {
            let mut slowest: f64 = 0.0;
            for _ in 0..o.smp.max(1) {
                slowest = slowest.max(server.wait_for_line(START_LIMIT, shardline_replay_seconds)?);
            }
            slowest
        }
        ServerSpec::Redis(_) => server.wait_for_line(START_LIMIT, redis_load_seconds)?,
    };
    server.stop();
    Ok(RestartRun {
        load_s,
        ready_s: ready.as_secs_f64(),
        keys,
    })
}

fn row(
    session: &Session,
    label: &str,
    make: &dyn Fn(&Path) -> ServerSpec,
) -> Result<RestartRow, HarnessError> {
    let plan = &session.plan;
    session.progress(&format!("  {label}: writing {} keys", plan.restart_keys));
    let dir = session.fresh_dir("restart-")?;
    let spec = make(dir.path());
    let server = spec.start(&session.files)?;
    let written = fill(server.endpoint(), plan.restart_keys, plan.rpc_value_bytes);
    server.stop();
    let written = written?;
    if written != plan.restart_keys {
        return Err(HarnessError::Config(format!(
            "{label}: DBSIZE {written} after writing {} distinct keys",
            plan.restart_keys
        )));
    }
    let log_bytes = dir_bytes(dir.path())?;
    let mut runs = Vec::new();
    for i in 1..=plan.runs {
        let run = session.with_retry(&format!("{label} restart {i}"), || {
            one_start(session, &spec)
        })?;
        session.progress(&format!(
            "  {label} restart {i}: loaded {} keys in {:.3} s (own log), first reply after {:.3} s",
            run.keys, run.load_s, run.ready_s
        ));
        if run.keys != written {
            return Err(HarnessError::Config(format!(
                "{label}: DBSIZE {} after the restart, {written} before",
                run.keys
            )));
        }
        runs.push(run);
    }
    Ok(RestartRow {
        server: label.to_owned(),
        keys_written: written,
        log_bytes,
        load_s: Summary::collect(runs.iter().map(|r| r.load_s)),
        ready_s: Summary::collect(runs.iter().map(|r| r.ready_s)),
        runs,
    })
}

/// Runs the restart table: shardline, then redis-server when available. Failures are
/// reported in `notes`.
pub fn run(session: &Session, notes: &mut Vec<String>) -> Vec<RestartRow> {
    let mut out = Vec::new();
    let mut record = |label: &str, result: Result<RestartRow, HarnessError>| match result {
        Ok(r) => out.push(r),
        Err(err) => notes.push(format!("restart row of {label} failed: {err}")),
    };
    record(
        SHARDLINE,
        row(session, SHARDLINE, &|dir| {
            ServerSpec::Shardline(ShardlineOptions {
                persistence: Persistence::Everysec,
                data_dir: Some(dir.to_owned()),
                ..session.shardline(HashMode::Yield, true, session.plan.cache_ttl_ms)
            })
        }),
    );
    if let Some(redis) = session.redis(true) {
        record(
            REDIS,
            row(session, REDIS, &|dir| {
                ServerSpec::Redis(RedisOptions {
                    persistence: Persistence::Everysec,
                    dir: dir.to_owned(),
                    ..redis.clone()
                })
            }),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_load_times_from_the_logs() {
        assert_eq!(parse_debug_duration("1.5s"), Some(1.5));
        assert_eq!(parse_debug_duration("250ms"), Some(0.25));
        assert_eq!(parse_debug_duration("12µs"), Some(12e-6));
        assert_eq!(parse_debug_duration("x"), None);
        let line = "2026-12-01T08:00:00Z  INFO shardline::server: shard 0: replayed 1000000 \
                    command(s) from 1 file(s) of /d/appendonlydir (51888890 bytes) in 812.5ms: \
                    1000000 keys; appending to /d/appendonlydir/shard-0.aof";
        assert_eq!(shardline_replay_seconds(line), Some(0.8125));
        assert_eq!(shardline_replay_seconds("shard 0: starting"), None);
        let redis =
            "4947:M 01 Dec 2026 08:07:20.259 * DB loaded from append only file: 0.734 seconds";
        assert_eq!(redis_load_seconds(redis), Some(0.734));
        assert_eq!(
            redis_load_seconds("* DB loaded from incr file appendonly.aof.1.incr.aof: 0.7 seconds"),
            None
        );
    }
}
