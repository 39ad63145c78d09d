//! Scraping under load (issue 4: "a scrape every 100 ms under load adds no stall"): the RPC
//! GET workload against shardline twice on the same server, once alone and once while a
//! scraper fetches `/metrics` every `plan.scrape_interval_ms`; the reactor-stall and
//! quota-violation deltas of the two are compared.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::error::HarnessError;
use super::headline::shard_deltas;
use super::plan::HashMode;
use super::prom::Scrape;
use super::results::{ScrapeRow, ScrapeRun};
use super::rpc;
use super::session::Session;
use super::shardline::ShardlineServer;
use crate::stats::Summary;

/// Fetches `url` every `interval` on its own thread until stopped.
struct Scraper {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<(u64, u64)>,
}

impl Scraper {
    fn start(url: String, interval: Duration) -> Scraper {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let (mut ok, mut failed) = (0, 0);
            let mut next = Instant::now();
            while !flag.load(Ordering::Relaxed) {
                match Scrape::fetch(&url) {
                    Ok(_) => ok += 1,
                    Err(_) => failed += 1,
                }
                next += interval;
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            (ok, failed)
        });
        Scraper { stop, thread }
    }

    /// Stops the scraper; returns (successful, failed) scrapes.
    fn finish(self) -> (u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or((0, 0))
    }
}

/// One server: the GET workload without scraping, then with.
fn one_server_run(session: &Session) -> Result<[ScrapeRun; 2], HarnessError> {
    let plan = &session.plan;
    let options = session.shardline(HashMode::Yield, true, plan.cache_ttl_ms);
    let mut server = ShardlineServer::start(&options, &session.files)?;
    let ep = server.endpoint().clone();
    let timeout = session.timeout(plan.rpc_seconds);
    let work = session.calibrate_rpc(&ep, &rpc::workload(session, "get"), timeout)?;
    let mut measure = |interval: Option<Duration>| -> Result<ScrapeRun, HarnessError> {
        let before = Scrape::fetch(server.metrics_url())?;
        let scraper = interval.map(|i| Scraper::start(server.metrics_url().to_owned(), i));
        let bench = session.bench.run(&ep, &work, timeout);
        let (scrapes, failed_scrapes) = scraper.map(Scraper::finish).unwrap_or((0, 0));
        let after = Scrape::fetch(server.metrics_url())?;
        server.check_alive()?;
        let shards = shard_deltas(&before, &after);
        Ok(ScrapeRun {
            scrape_interval_ms: interval.map(|i| i.as_millis() as u64),
            req_per_s: bench?.rps,
            stalls: shards.values().map(|s| s.stalls).sum(),
            quota_violation_ms: shards.values().map(|s| s.quota_violation_ms).sum(),
            scrapes,
            failed_scrapes,
        })
    };
    let alone = measure(None)?;
    let scraped = measure(Some(Duration::from_millis(plan.scrape_interval_ms)))?;
    server.stop();
    Ok([alone, scraped])
}

/// Runs `plan.runs` servers and returns the two rows (no scraping, scraping).
///
/// # Errors
/// The first failing run's error.
pub fn run(session: &Session) -> Result<Vec<ScrapeRow>, HarnessError> {
    let mut alone = Vec::new();
    let mut scraped = Vec::new();
    for i in 1..=session.plan.runs {
        let [a, s] = session.with_retry(&format!("scrape run {i}"), || one_server_run(session))?;
        session.progress(&format!(
            "  scrape run {i}: {:.0} stalls alone, {:.0} with {} scrapes",
            a.stalls, s.stalls, s.scrapes
        ));
        alone.push(a);
        scraped.push(s);
    }
    Ok([alone, scraped]
        .into_iter()
        .map(|runs| ScrapeRow {
            scrape_interval_ms: runs.first().and_then(|r| r.scrape_interval_ms),
            req_per_s: Summary::collect(runs.iter().map(|r| r.req_per_s)),
            stalls: Summary::collect(runs.iter().map(|r| r.stalls)),
            quota_violation_ms: Summary::collect(runs.iter().map(|r| r.quota_violation_ms)),
            scrapes: Summary::collect(runs.iter().map(|r| r.scrapes as f64)),
            runs,
        })
        .collect())
}
