//! A comparison session: the tools, the shared files (certificate, users file), and the
//! server and client settings every scenario derives from the plan.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::certs;
use super::endpoint::Endpoint;
use super::error::{HarnessError, IoContext};
use super::load_client::LoadClient;
use super::plan::{HashMode, Persistence, Plan};
use super::redis::RedisOptions;
use super::redis_benchmark::{RedisBenchmark, Workload};
use super::shardline::{add_user, ShardlineFiles, ShardlineOptions};

/// Paths of the programs a comparison runs.
#[derive(Debug, Clone)]
pub struct Tools {
    /// `shardline`.
    pub shardline: PathBuf,
    /// `shardline-load`.
    pub load: PathBuf,
    /// `redis-benchmark`.
    pub redis_benchmark: PathBuf,
    /// `redis-server`, if the peer is compared.
    pub redis_server: Option<PathBuf>,
}

/// Shared state of one comparison.
pub struct Session {
    /// The plan.
    pub plan: Plan,
    /// Tools.
    pub tools: Tools,
    /// redis-benchmark, pinned to the client CPUs.
    pub bench: RedisBenchmark,
    /// `shardline-load`, pinned to the client CPUs.
    pub load: LoadClient,
    /// Certificate, users file and credentials shared by all servers.
    pub files: ShardlineFiles,
    /// Scratch directory (certificates, users file, redis `--dir`).
    pub work_dir: PathBuf,
    /// When the session started (for progress lines).
    pub started: Instant,
}

/// Attempts of one run before its failure is reported.
pub const ATTEMPTS: u32 = 3;

/// User the servers get and the clients log in as.
pub const BENCH_USER: &str = "bench";

fn random_password() -> Result<String, HarnessError> {
    let mut bytes = [0u8; 12];
    openssl::rand::rand_bytes(&mut bytes)
        .map_err(|e| HarnessError::Config(format!("no random bytes: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl Session {
    /// Creates `work_dir`, a certificate and a users file with [`BENCH_USER`] (via
    /// `shardline passwd`, 5000 rounds).
    ///
    /// # Errors
    /// File-system errors, or `shardline passwd` failing.
    pub fn prepare(plan: Plan, tools: Tools, work_dir: &Path) -> Result<Session, HarnessError> {
        if plan.runs == 0 || plan.smp == 0 || plan.modes.is_empty() {
            return Err(HarnessError::Config(
                "runs, smp and modes must not be zero/empty".into(),
            ));
        }
        fs::create_dir_all(work_dir).context(|| format!("creating {}", work_dir.display()))?;
        // Absolute paths: redis-server changes into `--dir` before it loads the certificate.
        let work_dir = &work_dir
            .canonicalize()
            .context(|| format!("resolving {}", work_dir.display()))?;
        let cert = certs::generate(work_dir)?;
        let users = work_dir.join("users");
        if users.exists() {
            fs::remove_file(&users).context(|| format!("removing {}", users.display()))?;
        }
        let password = random_password()?;
        add_user(&tools.shardline, &users, BENCH_USER, &password)?;
        let data_dir = work_dir.join("shardline-data");
        fs::create_dir_all(&data_dir).context(|| format!("creating {}", data_dir.display()))?;
        let bench = RedisBenchmark {
            bin: tools.redis_benchmark.clone(),
            cpus: plan.client_cpus.clone(),
        };
        let load = LoadClient {
            bin: tools.load.clone(),
            cpus: plan.client_cpus.clone(),
        };
        Ok(Session {
            files: ShardlineFiles {
                cert,
                users,
                data_dir,
                user: BENCH_USER.into(),
                password,
            },
            plan,
            tools,
            bench,
            load,
            work_dir: work_dir.to_owned(),
            started: Instant::now(),
        })
    }

    /// shardline options for one row.
    pub fn shardline(&self, mode: HashMode, tls: bool, cache_ttl_ms: u64) -> ShardlineOptions {
        ShardlineOptions {
            bin: self.tools.shardline.clone(),
            smp: self.plan.smp,
            cpus: self.plan.server_cpus.clone(),
            hash_mode: mode,
            hash_batch: None,
            tls,
            cache_ttl_ms,
            persistence: Persistence::Off,
            data_dir: None,
        }
    }

    /// redis-server options, when redis-server is compared.
    pub fn redis(&self, tls: bool) -> Option<RedisOptions> {
        let bin = self.tools.redis_server.clone()?;
        Some(RedisOptions {
            bin,
            // redis-server runs its commands on one thread: pin it to the first server CPU.
            cpus: self
                .plan
                .server_cpus
                .as_ref()
                .map(|c| c.split([',', '-']).next().unwrap_or(c).to_owned()),
            tls,
            cert: self.files.cert.clone(),
            dir: self.work_dir.clone(),
            persistence: Persistence::Off,
            user: self.files.user.clone(),
            password: self.files.password.clone(),
        })
    }

    /// A new empty directory under the work directory, on the same file system as every other
    /// server's, deleted when the returned guard is dropped: the data directory of one server
    /// start that keeps a log, so logs never carry over from one run to the next.
    ///
    /// # Errors
    /// [`HarnessError::Io`] when it cannot be created.
    pub fn fresh_dir(&self, prefix: &str) -> Result<tempfile::TempDir, HarnessError> {
        tempfile::Builder::new()
            .prefix(prefix)
            .tempdir_in(&self.work_dir)
            .context(|| {
                format!(
                    "creating a {prefix}* directory in {}",
                    self.work_dir.display()
                )
            })
    }

    /// Prints a progress line on stderr, prefixed with the seconds since the session started.
    pub fn progress(&self, message: &str) {
        eprintln!("[{:6.1} s] {message}", self.started.elapsed().as_secs_f64());
    }

    /// Runs `step`, trying again up to [`ATTEMPTS`] times in all when it fails (other programs
    /// on a shared machine can kill or starve a run); the last failure is returned.
    ///
    /// # Errors
    /// The last attempt's error.
    pub fn with_retry<T>(
        &self,
        what: &str,
        mut step: impl FnMut() -> Result<T, HarnessError>,
    ) -> Result<T, HarnessError> {
        let mut attempt = 1;
        loop {
            match step() {
                Ok(v) => return Ok(v),
                Err(err) if attempt < ATTEMPTS => {
                    self.progress(&format!(
                        "  {what} failed (attempt {attempt} of {ATTEMPTS}): {}",
                        err.to_string().lines().next().unwrap_or_default()
                    ));
                    attempt += 1;
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// Time limit of a client run that should last `seconds`.
    pub fn timeout(&self, seconds: f64) -> Duration {
        Duration::from_secs_f64(seconds.max(0.0) * 5.0 + 60.0)
    }

    /// Calibrates `work` on `endpoint` with the RPC tables' sizes (a probe of
    /// `rpc_calibration_requests`, then requests for `rpc_seconds` within
    /// `rpc_requests_min..=rpc_requests_max`) and returns the workload to measure. Used by the
    /// RPC, scrape and types tables.
    ///
    /// # Errors
    /// redis-benchmark failing or timing out.
    pub fn calibrate_rpc(
        &self,
        endpoint: &Endpoint,
        work: &Workload,
        timeout: Duration,
    ) -> Result<Workload, HarnessError> {
        let plan = &self.plan;
        let (_warm, work) = self.bench.calibrate(
            endpoint,
            work,
            plan.rpc_calibration_requests,
            plan.rpc_seconds,
            (plan.rpc_requests_min, plan.rpc_requests_max),
            timeout,
        )?;
        Ok(work)
    }
}
