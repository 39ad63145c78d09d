//! Credential verification on a shard, with the three hashing strategies.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::str::FromStr;
use std::time::{Duration, Instant};

use zeroize::Zeroizing;

use crate::batching::{Computation, Outcome, Pace, Queued, ShardBatcher};
use crate::cache::{CacheConfig, CredentialsCache};
use crate::offload::{OffloadError, OffloadPool};
use crate::sha512_crypt::PasswordHash;
use crate::sha512_lanes::Kernel;
use crate::users::Users;

/// How the shard pays for the hash (`--hash-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashMode {
    /// All rounds in one poll of the login task: fastest, but one stall per login.
    Inline,
    /// On the shard, calling `glommio::yield_if_needed()` between rounds (default).
    Yield,
    /// On the process-wide [`OffloadPool`]; the shard awaits the result.
    Offload,
}

impl HashMode {
    /// The flag value: `inline`, `yield` or `offload`.
    pub fn as_str(self) -> &'static str {
        match self {
            HashMode::Inline => "inline",
            HashMode::Yield => "yield",
            HashMode::Offload => "offload",
        }
    }
}

impl fmt::Display for HashMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `--hash-mode` value other than `inline`, `yield`, `offload`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown hash mode {0:?} (expected inline, yield or offload)")]
pub struct ParseHashModeError(pub String);

impl FromStr for HashMode {
    type Err = ParseHashModeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "inline" => Ok(HashMode::Inline),
            "yield" => Ok(HashMode::Yield),
            "offload" => Ok(HashMode::Offload),
            other => Err(ParseHashModeError(other.to_string())),
        }
    }
}

/// Whether verifications queued together are hashed together (`--hash-batch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashBatch {
    /// Batch on the widest lane kernel this CPU has (AVX-512F: 8, AVX2: 4); one at a time
    /// when it has none (default).
    Auto,
    /// One verification at a time.
    Off,
}

impl HashBatch {
    /// The flag value: `auto` or `off`.
    pub fn as_str(self) -> &'static str {
        match self {
            HashBatch::Auto => "auto",
            HashBatch::Off => "off",
        }
    }

    /// The kernel batches run on: for `auto`, [`Kernel::detect`] when it has more than one
    /// lane; `None` = no batching.
    pub fn kernel(self) -> Option<Kernel> {
        match self {
            HashBatch::Auto => Some(Kernel::detect()).filter(|k| k.lanes() > 1),
            HashBatch::Off => None,
        }
    }
}

impl fmt::Display for HashBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `--hash-batch` value other than `auto` or `off`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown hash batch setting {0:?} (expected auto or off)")]
pub struct ParseHashBatchError(pub String);

impl FromStr for HashBatch {
    type Err = ParseHashBatchError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(HashBatch::Auto),
            "off" => Ok(HashBatch::Off),
            other => Err(ParseHashBatchError(other.to_string())),
        }
    }
}

/// Default rounds between `need_preempt` checks in yield mode. One round is ~0.2 µs and a
/// check ~2 ns, so checking every 4 rounds keeps the overhead well under 1 % while the
/// latency added to a preemption request stays below 1 µs.
pub const DEFAULT_YIELD_EVERY_ROUNDS: u32 = 4;

/// Settings of a [`Verifier`].
#[derive(Debug, Clone)]
pub struct VerifierConfig {
    /// Strategy (default [`HashMode::Yield`]).
    pub mode: HashMode,
    /// Longer passwords are rejected without hashing (`--max-password-bytes`, default 256;
    /// the hash cost grows with the length).
    pub max_password_bytes: usize,
    /// Yield mode: rounds between `yield_if_needed` checks (default 4, at least 1).
    pub yield_every_rounds: u32,
    /// The pool used by [`HashMode::Offload`] (required for that mode).
    pub offload: Option<OffloadPool>,
    /// The credentials cache (default off).
    pub cache: CacheConfig,
    /// Inline and yield modes: the lane kernel queued verifications are batched on
    /// (`--hash-batch`; `None`, the default here, = one at a time). Must be available on
    /// this CPU. Offload mode batches in the pool instead ([`OffloadPool::with_batching`]).
    pub batch_kernel: Option<Kernel>,
}

impl Default for VerifierConfig {
    fn default() -> Self {
        VerifierConfig {
            mode: HashMode::Yield,
            max_password_bytes: 256,
            yield_every_rounds: DEFAULT_YIELD_EVERY_ROUNDS,
            offload: None,
            cache: CacheConfig::default(),
            batch_kernel: None,
        }
    }
}

/// A configuration the verifier cannot run with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifierConfigError {
    /// `mode` is offload but no pool was given.
    #[error("hash mode offload needs an offload pool")]
    MissingOffloadPool,
    /// `batch_kernel` names a kernel this CPU cannot run.
    #[error("the {0} hash kernel is not available on this CPU")]
    KernelUnavailable(&'static str),
}

/// Why a login could not be decided by a hash comparison.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// The password is longer than `max_password_bytes`; it was not hashed.
    #[error("password of {len} bytes exceeds the {max}-byte limit")]
    PasswordTooLong {
        /// Bytes given.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Offload mode: the queue was full, the job panicked, or the pool is gone.
    #[error(transparent)]
    Offload(#[from] OffloadError),
}

/// The outcome of one verification, with what the server exports as metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Whether the user exists and the password matched.
    pub accepted: bool,
    /// Whether the user exists (an unknown user is hashed against the dummy and rejected).
    pub user_known: bool,
    /// Whether the credentials cache answered (no hash was computed).
    pub cache_hit: bool,
    /// Wall time from the start of hashing to the result, in microseconds (0 on a cache
    /// hit). In yield and offload modes this includes time spent waiting.
    pub hash_micros: u64,
    /// The strategy used.
    pub mode: HashMode,
    /// Verifications hashed together with this one, itself included (1 = alone; 0 on a
    /// cache hit).
    pub batch_size: usize,
}

/// Verifies credentials on one shard. Not `Send`: build one per executor.
pub struct Verifier {
    strategy: Strategy,
    max_password_bytes: usize,
    cache: Option<Rc<RefCell<CredentialsCache>>>,
}

/// The mode with what it needs, so offload without a pool cannot be represented.
enum Strategy {
    /// Inline or yield (the pace says which), with the shard's batch queue when batching.
    OnShard {
        pace: Pace,
        batcher: Option<Rc<ShardBatcher>>,
    },
    Offload(OffloadPool),
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier")
            .field("mode", &self.mode())
            .field("max_password_bytes", &self.max_password_bytes)
            .finish_non_exhaustive()
    }
}

impl Verifier {
    /// Builds a verifier.
    ///
    /// # Errors
    /// [`VerifierConfigError::MissingOffloadPool`] for offload mode without a pool.
    pub fn new(config: VerifierConfig) -> Result<Verifier, VerifierConfigError> {
        if let Some(kernel) = config.batch_kernel.filter(|k| !k.is_available()) {
            return Err(VerifierConfigError::KernelUnavailable(kernel.as_str()));
        }
        let strategy = match (config.mode, config.offload) {
            (HashMode::Offload, Some(pool)) => Strategy::Offload(pool),
            (HashMode::Offload, None) => return Err(VerifierConfigError::MissingOffloadPool),
            (mode, _) => Strategy::OnShard {
                pace: if mode == HashMode::Inline {
                    Pace::Inline
                } else {
                    Pace::Yield(config.yield_every_rounds.max(1))
                },
                batcher: config
                    .batch_kernel
                    .map(|kernel| Rc::new(ShardBatcher::new(kernel))),
            },
        };
        Ok(Verifier {
            strategy,
            max_password_bytes: config.max_password_bytes,
            cache: CredentialsCache::new(&config.cache).map(|c| Rc::new(RefCell::new(c))),
        })
    }

    /// The strategy.
    pub fn mode(&self) -> HashMode {
        match &self.strategy {
            Strategy::OnShard { pace, .. } => pace.mode(),
            Strategy::Offload(_) => HashMode::Offload,
        }
    }

    /// The kernel verifications are batched on, `None` when they run one at a time.
    pub fn batch_kernel(&self) -> Option<crate::sha512_lanes::Kernel> {
        match &self.strategy {
            Strategy::OnShard { batcher, .. } => batcher.as_ref().map(|b| b.kernel()),
            Strategy::Offload(pool) => pool.batch_kernel(),
        }
    }

    /// Credentials-cache (hits, misses), or `None` when the cache is off.
    pub fn cache_stats(&self) -> Option<(u64, u64)> {
        self.cache.as_ref().map(|c| {
            let c = c.borrow();
            (c.hits(), c.misses())
        })
    }

    /// Checks `user`/`password` against `users`: [`submit`](Self::submit), then
    /// [`Submitted::wait`].
    ///
    /// # Errors
    /// [`AuthError::PasswordTooLong`] (not hashed), [`AuthError::Offload`].
    pub async fn verify(
        &self,
        users: &Users,
        user: &[u8],
        password: &[u8],
    ) -> Result<Verified, AuthError> {
        self.submit(users, user, password)?.wait().await
    }

    /// Starts checking `user`/`password` against `users` and returns the check to await.
    ///
    /// Everything that needs no hash happens here: the length limit, the credentials cache,
    /// and queueing the verification (on the shard's batch queue with `--hash-batch`, on the
    /// pool in offload mode), so verifications submitted before any is awaited can share a
    /// batch. An unknown user is hashed against [`Users::dummy_hash`] and then rejected, so it
    /// costs as long as a wrong password. Yield mode must be awaited inside a glommio executor.
    ///
    /// # Errors
    /// [`AuthError::PasswordTooLong`] (not hashed), [`AuthError::Offload`] (queue full or
    /// pool gone).
    pub fn submit(
        &self,
        users: &Users,
        user: &[u8],
        password: &[u8],
    ) -> Result<Submitted, AuthError> {
        if password.len() > self.max_password_bytes {
            return Err(AuthError::PasswordTooLong {
                len: password.len(),
                max: self.max_password_bytes,
            });
        }
        let known = users.get(user);
        let user_known = known.is_some();
        let hash = known.unwrap_or_else(|| users.dummy_hash());
        let verified = Verified {
            accepted: false,
            user_known,
            cache_hit: false,
            hash_micros: 0,
            mode: self.mode(),
            batch_size: 0,
        };
        let cache = self.cache.as_ref().filter(|_| user_known);
        if let Some(cache) = cache {
            if cache
                .borrow_mut()
                .lookup(users.generation(), user, password, Instant::now())
            {
                return Ok(Submitted {
                    verified: Verified {
                        accepted: true,
                        cache_hit: true,
                        ..verified
                    },
                    hashing: Hashing::CacheHit,
                    start: Instant::now(),
                    remember: None,
                });
            }
        }
        let start = Instant::now();
        let hashing = match &self.strategy {
            Strategy::OnShard {
                pace,
                batcher: Some(batcher),
            } => Hashing::Batched(batcher.submit(hash.clone(), password), *pace),
            Strategy::OnShard {
                pace,
                batcher: None,
            } => Hashing::Alone(hash.clone(), Zeroizing::new(password.to_vec()), *pace),
            Strategy::Offload(pool) => {
                Hashing::Offload(Box::pin(pool.submit_verify(hash.clone(), password)?))
            }
        };
        let remember = cache.map(|cache| Remember {
            cache: cache.clone(),
            generation: users.generation(),
            user: Zeroizing::new(user.to_vec()),
            password: Zeroizing::new(password.to_vec()),
        });
        Ok(Submitted {
            verified,
            hashing,
            start,
            remember,
        })
    }
}

/// A submitted check ([`Verifier::submit`]); await [`wait`](Self::wait) for the result.
/// Dropping it withdraws a verification that has not started.
pub struct Submitted {
    verified: Verified,
    hashing: Hashing,
    start: Instant,
    remember: Option<Remember>,
}

/// How the hash of a [`Submitted`] is being paid.
enum Hashing {
    CacheHit,
    /// On the shard, one at a time.
    Alone(PasswordHash, Zeroizing<Vec<u8>>, Pace),
    /// On the shard, in the batch queue.
    Batched(Queued, Pace),
    Offload(Pin<Box<dyn Future<Output = Result<Outcome, OffloadError>>>>),
}

/// What the credentials cache learns from an accepted login.
struct Remember {
    cache: Rc<RefCell<CredentialsCache>>,
    generation: u64,
    user: Zeroizing<Vec<u8>>,
    password: Zeroizing<Vec<u8>>,
}

impl fmt::Debug for Submitted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Submitted")
            .field("mode", &self.verified.mode)
            .finish_non_exhaustive()
    }
}

impl Submitted {
    /// Runs or awaits the hash and returns the result (`hash_micros` counts from
    /// [`Verifier::submit`]).
    ///
    /// # Errors
    /// [`AuthError::Offload`] if the pool job panicked or the pool is gone.
    pub async fn wait(self) -> Result<Verified, AuthError> {
        let Submitted {
            mut verified,
            hashing,
            start,
            remember,
        } = self;
        let outcome = match hashing {
            Hashing::CacheHit => return Ok(verified),
            Hashing::Alone(hash, password, pace) => {
                let mut computation = Computation::Single(hash.start(&password));
                pace.run(&mut computation).await;
                let matched = computation
                    .finish()
                    .first()
                    .is_some_and(|d| hash.matches(d));
                Outcome {
                    matched,
                    batch_size: 1,
                }
            }
            Hashing::Batched(queued, pace) => queued.wait(pace).await,
            Hashing::Offload(pending) => pending.await?,
        };
        verified.hash_micros = duration_micros(start.elapsed());
        verified.batch_size = outcome.batch_size;
        verified.accepted = outcome.matched && verified.user_known;
        if let (Some(r), true) = (remember, verified.accepted) {
            r.cache
                .borrow_mut()
                .insert(r.generation, &r.user, &r.password, Instant::now());
        }
        Ok(verified)
    }
}

fn duration_micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}
