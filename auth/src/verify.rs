//! Credential verification on a shard, with the three hashing strategies.

use std::cell::RefCell;
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use zeroize::Zeroizing;

use crate::cache::{CacheConfig, CredentialsCache};
use crate::offload::{OffloadError, OffloadPool};
use crate::sha512_crypt::PasswordHash;
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
}

impl Default for VerifierConfig {
    fn default() -> Self {
        VerifierConfig {
            mode: HashMode::Yield,
            max_password_bytes: 256,
            yield_every_rounds: DEFAULT_YIELD_EVERY_ROUNDS,
            offload: None,
            cache: CacheConfig::default(),
        }
    }
}

/// A configuration the verifier cannot run with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifierConfigError {
    /// `mode` is offload but no pool was given.
    #[error("hash mode offload needs an offload pool")]
    MissingOffloadPool,
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
}

/// Verifies credentials on one shard. Not `Send`: build one per executor.
pub struct Verifier {
    strategy: Strategy,
    max_password_bytes: usize,
    cache: Option<RefCell<CredentialsCache>>,
}

/// The mode with what it needs, so offload without a pool cannot be represented.
enum Strategy {
    Inline,
    Yield { every_rounds: u32 },
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
        let strategy = match (config.mode, config.offload) {
            (HashMode::Inline, _) => Strategy::Inline,
            (HashMode::Yield, _) => Strategy::Yield {
                every_rounds: config.yield_every_rounds.max(1),
            },
            (HashMode::Offload, Some(pool)) => Strategy::Offload(pool),
            (HashMode::Offload, None) => return Err(VerifierConfigError::MissingOffloadPool),
        };
        Ok(Verifier {
            strategy,
            max_password_bytes: config.max_password_bytes,
            cache: CredentialsCache::new(&config.cache).map(RefCell::new),
        })
    }

    /// The strategy.
    pub fn mode(&self) -> HashMode {
        match self.strategy {
            Strategy::Inline => HashMode::Inline,
            Strategy::Yield { .. } => HashMode::Yield,
            Strategy::Offload(_) => HashMode::Offload,
        }
    }

    /// Credentials-cache (hits, misses), or `None` when the cache is off.
    pub fn cache_stats(&self) -> Option<(u64, u64)> {
        self.cache.as_ref().map(|c| {
            let c = c.borrow();
            (c.hits(), c.misses())
        })
    }

    /// Checks `user`/`password` against `users`.
    ///
    /// An unknown user is hashed against [`Users::dummy_hash`] and then rejected, so it costs
    /// as long as a wrong password. Yield mode must run inside a glommio executor.
    ///
    /// # Errors
    /// [`AuthError::PasswordTooLong`] (not hashed), [`AuthError::Offload`].
    pub async fn verify(
        &self,
        users: &Users,
        user: &[u8],
        password: &[u8],
    ) -> Result<Verified, AuthError> {
        if password.len() > self.max_password_bytes {
            return Err(AuthError::PasswordTooLong {
                len: password.len(),
                max: self.max_password_bytes,
            });
        }
        let known = users.get(user);
        let user_known = known.is_some();
        let hash = known.unwrap_or_else(|| users.dummy_hash());
        let mut verified = Verified {
            accepted: false,
            user_known,
            cache_hit: false,
            hash_micros: 0,
            mode: self.mode(),
        };

        if let (Some(cache), true) = (&self.cache, user_known) {
            if cache
                .borrow_mut()
                .lookup(users.generation(), user, password, Instant::now())
            {
                verified.accepted = true;
                verified.cache_hit = true;
                return Ok(verified);
            }
        }

        let start = Instant::now();
        let matched = match &self.strategy {
            Strategy::Inline => hash.verify(password),
            Strategy::Yield { every_rounds } => {
                verify_yielding(hash, password, *every_rounds).await
            }
            Strategy::Offload(pool) => {
                let (hash, password) = (hash.clone(), Zeroizing::new(password.to_vec()));
                pool.submit(move || hash.verify(&password))?.await?
            }
        };
        verified.hash_micros = duration_micros(start.elapsed());
        verified.accepted = matched && user_known;

        if let (Some(cache), true) = (&self.cache, verified.accepted) {
            cache
                .borrow_mut()
                .insert(users.generation(), user, password, Instant::now());
        }
        Ok(verified)
    }
}

/// Runs the rounds `every_rounds` at a time, checking `need_preempt` in between.
async fn verify_yielding(hash: &PasswordHash, password: &[u8], every_rounds: u32) -> bool {
    let mut state = hash.start(password);
    while !state.run_rounds(every_rounds) {
        glommio::yield_if_needed().await;
    }
    hash.matches(&state.finish())
}

fn duration_micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}
