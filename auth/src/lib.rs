//! Authentication for shardline: SHA-512-crypt, the users file, login admission and
//! credential verification on a thread-per-core server.
//!
//! # Hashing strategies ([`HashMode`], `--hash-mode`)
//!
//! Verifying a SHA-512-crypt password costs 5000 rounds (~1 ms) by design. On a
//! thread-per-core server that millisecond blocks every other connection of the shard, so
//! one hashing core ([`sha512_crypt::Sha512CryptState`], resumable N rounds at a time) is
//! driven three ways:
//!
//! - **inline**: all rounds in one task poll. Highest login rate, but each login is a
//!   reactor stall.
//! - **yield** (default): `glommio::yield_if_needed()` between rounds, so the hash runs in
//!   slices of at most one task quota; other tasks (the server puts hashing in a task queue
//!   with fewer shares) run in between. Near-inline speed without stalls.
//! - **offload**: jobs go to a process-wide [`OffloadPool`] of `--hash-threads` std threads
//!   (ScyllaDB's "alien" thread when 1); the shard awaits a oneshot. No stalls, but the
//!   node's login rate is that of the pool.
//!
//! In every mode, `--hash-batch` ([`HashBatch`]) hashes the verifications already queued when
//! one starts together, up to 8 in lock-step on the CPU's SIMD lanes ([`sha512_lanes`],
//! [`sha512_crypt::Sha512CryptBatch`], [`batching`]); a lone one starts at once, alone.
//!
//! Around it: [`Users`] (the users file, checked at load), [`LoginGate`] (at most N logins
//! in progress per shard, FIFO, shed after a timeout), [`CredentialsCache`] (optional, off
//! by default) and [`run_passwd`] (the `shardline passwd` command).

pub mod admission;
pub mod batching;
pub mod cache;
pub mod offload;
pub mod passwd;
pub mod sha512_crypt;
pub mod sha512_lanes;
pub mod users;
pub mod verify;

pub use admission::{LoginGate, LoginPermit, LoginShed, LoginStage, PASSWORDS_PER_HANDSHAKE};
pub use cache::{CacheConfig, CredentialsCache};
pub use offload::{OffloadError, OffloadPool};
pub use passwd::{run_passwd, set_requirepass, PasswdError, PasswdLimits};
pub use sha512_crypt::{
    hash_password, HashFormatError, HashSetting, PasswordHash, Sha512CryptState,
};
pub use users::{
    set_default_nopass, set_user_password, Users, UsersFileError, UsersLimits, UsersWarning,
    DEFAULT_USER, NOPASS,
};
pub use verify::{
    AuthError, HashBatch, HashMode, ParseHashBatchError, ParseHashModeError, Submitted, Verified,
    Verifier, VerifierConfig, VerifierConfigError,
};
