//! SHA-512-crypt (`$6$`), our own implementation on the `sha2` crate.
//!
//! Follows Ulrich Drepper, "Unix crypt using SHA-256 and SHA-512", 2008, and is byte for
//! byte equal to glibc and libxcrypt (checked against the spec's vectors and a fixture of
//! libxcrypt answers). Passwords are bytes: NUL and 0xFF are hashed like any other byte.
//!
//! - [`Sha512CryptState`]: the resumable computation (prepare, run N rounds, finish).
//! - [`Sha512CryptBatch`]: up to eight of them in lock-step on the multi-buffer SHA-512
//!   kernel ([`crate::sha512_lanes`]).
//! - [`HashSetting`] / [`PasswordHash`]: the `$6$[rounds=N$]SALT[$HASH]` text forms.
//! - [`hash_password`]: a new hash with a random salt.

mod batch;
mod encode;
mod format;
mod schedule;
mod state;

pub use batch::Sha512CryptBatch;
pub use encode::{ALPHABET, ENCODED_LEN};
pub use format::{hash_password, random_salt, HashFormatError, HashSetting, PasswordHash};
pub use state::{CryptDigest, Sha512CryptState, ROUNDS_DEFAULT, ROUNDS_MAX, ROUNDS_MIN, SALT_MAX};
