//! The Markdown tables printed on stdout (and pasted into benches/README.md).

use std::fmt::Write;

use super::results::Results;
use crate::stats::Summary;

/// A number with precision that suits its size.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let a = v.abs();
    if a >= 1000.0 {
        // Thousands separator for readability (e.g. 13,186).
        let s = format!("{:.0}", v.abs());
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        if v < 0.0 {
            out.insert(0, '-');
        }
        out
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 || a == 0.0 {
        format!("{v:.2}")
    } else if a >= 0.01 {
        format!("{v:.3}")
    } else {
        // Two significant digits for tiny values (e.g. 0.00045 context switches/request).
        let decimals = (-a.log10().floor()) as usize + 1;
        format!("{v:.decimals$}")
    }
}

/// `median (min–max)`, or just the value when there was one run.
pub fn cell(s: &Summary) -> String {
    if s.runs.len() <= 1 || s.min == s.max {
        num(s.median)
    } else {
        format!("{} ({}–{})", num(s.median), num(s.min), num(s.max))
    }
}

fn ratio(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{}×", num(v)))
}

fn opt_cell(s: Option<&Summary>) -> String {
    s.map_or_else(|| "–".into(), cell)
}

/// Renders all tables.
pub fn render(r: &Results) -> String {
    let mut out = String::new();
    let p = &r.plan;
    if r.headline.is_empty() {
        let _ = writeln!(
            out,
            "shardline `--smp {}` on CPU(s) {}, clients on CPU(s) {}; median of {} run(s), min–max in brackets.",
            p.smp,
            p.server_cpus.as_deref().unwrap_or("any"),
            p.client_cpus.as_deref().unwrap_or("any"),
            p.runs
        );
    } else {
        let _ = writeln!(
            out,
            "### Login storm per `--hash-mode` (median of {} run(s), min–max in brackets)\n",
            p.runs
        );
        let _ = writeln!(
            out,
            "shardline `--smp {}` on CPU(s) {}, clients on CPU(s) {}; redis-benchmark `--tls -k 0 -c {} -t get` \
             (TLS handshake + AUTH per request); GET probe: {} persistent TLS connection(s), {} GET/s in total.\n",
            p.smp,
            p.server_cpus.as_deref().unwrap_or("any"),
            p.client_cpus.as_deref().unwrap_or("any"),
            p.storm_clients,
            p.probe_connections,
            p.probe_rate
        );
        out.push_str(
            "| hash mode | new conn/s per shard | mean hash batch | reactor stalls per shard | stalls preempted per shard | quota-violation ms per shard \
             | login p99 ms (client) | hash p99 ms (server) | probe GET p50 / p99 / max ms | own client conn/s per shard \
             | server CPU | server CPU ms per conn | other load on server CPU |\n\
             |---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        );
        for h in &r.headline {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} / {} / {} | {} | {} | {} | {} |",
                h.label(),
                cell(&h.conn_per_s_per_shard),
                opt_cell(h.batch_size_mean.as_ref()),
                cell(&h.stalls_per_shard),
                opt_cell(h.stalls_preempted_per_shard.as_ref()),
                cell(&h.quota_violation_ms_per_shard),
                cell(&h.login_p99_ms),
                opt_cell(h.hash_p99_ms.as_ref()),
                num(h.probe_p50_ms.median),
                num(h.probe_p99_ms.median),
                num(h.probe_max_ms.median),
                cell(&h.own_conn_per_s_per_shard),
                cell(&h.server_cpu_util),
                cell(&h.server_cpu_ms_per_conn),
                cell(&h.others_on_server_cpus),
            );
        }
    }

    if !r.reconnect.is_empty() {
        out.push_str(
            "\n### TLS reconnect rate (redis-benchmark `--tls -k 0`, AUTH + GET per connection; ratios to redis-server)\n\n\
             | server | conn/s per core | ratio | conn per server CPU-second | ratio | server user / sys µs per conn | ctxsw per conn | server CPU | client CPU | TCP retransmits |\n\
             |---|---|---|---|---|---|---|---|---|---|\n",
        );
        for row in &r.reconnect {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} / {} | {} | {} | {} | {} |",
                row.server,
                cell(&row.conn_per_s_per_core),
                ratio(row.ratio_to_redis),
                cell(&row.conn_per_server_cpu_s),
                ratio(row.cpu_ratio_to_redis),
                num(row.user_us_per_conn.median),
                num(row.sys_us_per_conn.median),
                num(row.ctxsw_per_conn.median),
                cell(&row.server_cpu_util),
                cell(&row.client_cpu_util),
                cell(&row.tcp_retransmits),
            );
        }
    }

    if !r.rpc.is_empty() {
        let _ = writeln!(
            out,
            "\n### RPC: persistent connections, pipelined (redis-benchmark `-c {} -P {} -r {} -d {}`), server process cost\n",
            p.rpc_clients, p.rpc_pipeline, p.rpc_keyspace, p.rpc_value_bytes
        );
        out.push_str(
            "| server | TLS | command | requests/s | user CPU µs/req | system CPU µs/req | context switches/req | server CPU | client CPU |\n\
             |---|---|---|---|---|---|---|---|---|\n",
        );
        for row in &r.rpc {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                row.server,
                if row.tls { "on" } else { "off" },
                row.command,
                cell(&row.req_per_s),
                cell(&row.user_us_per_req),
                cell(&row.sys_us_per_req),
                cell(&row.ctxsw_per_req),
                cell(&row.server_cpu_util),
                cell(&row.client_cpu_util),
            );
        }
    }

    if !r.types.is_empty() {
        let _ = writeln!(
            out,
            "\n### Sorted sets and Pub/Sub fan-out (redis-benchmark `--tls -c {} -P {}`, persistent connections; PUBLISH: `-c {}`, {} subscribers)\n",
            p.rpc_clients,
            p.rpc_pipeline,
            super::types::PUBLISH_CLIENTS,
            super::types::SUBSCRIBERS
        );
        out.push_str(
            "| server | workload | requests/s | deliveries/s | server CPU µs per request (per delivery for PUBLISH) | shardline ÷ redis-server (req/s) | client CPU |\n\
             |---|---|---|---|---|---|---|\n",
        );
        for row in &r.types {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                row.server,
                row.workload,
                cell(&row.req_per_s),
                row.deliveries_per_s
                    .as_ref()
                    .map(cell)
                    .unwrap_or_else(|| "–".into()),
                cell(&row.cpu_us_per_op),
                row.ratio_to_redis
                    .map(|x| format!("{x:.2}×"))
                    .unwrap_or_else(|| "–".into()),
                cell(&row.client_cpu_util),
            );
        }
    }

    if !r.scrape.is_empty() {
        let _ = writeln!(
            out,
            "\n### Scraping `/metrics` under load (redis-benchmark `-c {} -P {} -t get`, same server, alone then scraped)\n",
            p.rpc_clients, p.rpc_pipeline
        );
        out.push_str(
            "| scrapes during the run | requests/s | reactor stalls | quota-violation ms |\n\
             |---|---|---|---|\n",
        );
        for row in &r.scrape {
            let label = match row.scrape_interval_ms {
                Some(ms) => format!("every {ms} ms ({} scrapes)", cell(&row.scrapes)),
                None => "none".to_owned(),
            };
            let _ = writeln!(
                out,
                "| {label} | {} | {} | {} |",
                cell(&row.req_per_s),
                cell(&row.stalls),
                cell(&row.quota_violation_ms),
            );
        }
    }

    if !r.durability.is_empty() {
        let _ = writeln!(
            out,
            "\n### Durability: SET with the append-only log off / everysec / always (redis-benchmark `--tls -c {} -r {} -d {} -t set`, a fresh server and data directory per run; ratios to redis-server)\n",
            p.rpc_clients, p.rpc_keyspace, p.rpc_value_bytes
        );
        out.push_str(
            "| appendfsync | -P | server | requests/s | ratio | server CPU µs/req | user / sys µs/req | server CPU | client CPU | reactor stalls | quota-violation ms | log records per fdatasync |\n\
             |---|---|---|---|---|---|---|---|---|---|---|---|\n",
        );
        for row in &r.durability {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} / {} | {} | {} | {} | {} | {} |",
                row.persistence,
                row.pipeline,
                row.server,
                cell(&row.req_per_s),
                ratio(row.ratio_to_redis),
                cell(&row.cpu_us_per_req),
                num(row.user_us_per_req.median),
                num(row.sys_us_per_req.median),
                cell(&row.server_cpu_util),
                cell(&row.client_cpu_util),
                opt_cell(row.stalls.as_ref()),
                opt_cell(row.quota_violation_ms.as_ref()),
                opt_cell(row.records_per_fsync.as_ref()),
            );
        }
    }

    if !r.restart.is_empty() {
        out.push_str(
            "\n### Restart: loading an append-only log (`appendfsync everysec`, one SET per distinct key)\n\n\
             | server | keys | log size MB | load time s (server's log) | start → first DBSIZE reply s |\n\
             |---|---|---|---|---|\n",
        );
        for row in &r.restart {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                row.server,
                num(row.keys_written as f64),
                num(row.log_bytes as f64 / 1e6),
                cell(&row.load_s),
                cell(&row.ready_s),
            );
        }
    }

    out.push_str(
        "\n### Goals (medians)\n\n| goal | target | measured | met |\n|---|---|---|---|\n",
    );
    for g in &r.goals {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            g.name,
            g.target,
            g.measured
                .map_or_else(|| "not measured".into(), |v| format!("{v:.3}")),
            match g.met {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "–",
            }
        );
    }
    if !r.notes.is_empty() {
        out.push_str("\nNotes:\n");
        for n in &r.notes {
            let _ = writeln!(out, "- {}", n.lines().next().unwrap_or_default());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(num(13186.2), "13,186");
        assert_eq!(num(244.1), "244");
        assert_eq!(num(19.84), "19.8");
        assert_eq!(num(1.234), "1.23");
        assert_eq!(num(0.0123), "0.012");
        assert_eq!(num(0.0), "0.00");
        assert_eq!(num(0.00045197), "0.00045");
        assert_eq!(num(0.0003), "0.00030");
        assert_eq!(num(f64::NAN), "–");
        let s = Summary::of(&[1.0, 2.0, 3.0]).expect("values");
        assert_eq!(cell(&s), "2.00 (1.00–3.00)");
    }
}
