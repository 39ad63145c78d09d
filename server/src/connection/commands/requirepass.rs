//! `CONFIG SET requirepass` / `CONFIG GET requirepass` (Redis 7.0 `requirepass`): the default
//! user's password, kept as a SHA-512-crypt hash in the users file.
//!
//! Setting it rewrites the default user's line of the users file (`--users`) as
//! `shardline passwd` does — atomically, keeping the file's owner and mode — with a hash of
//! the default 5000 rounds, or `default:nopass` for `""`; then loads the file back and installs
//! it as a SIGHUP reload does, so every shard's next login sees it. Connections already logged
//! in stay so (as in Redis). The hash and the file I/O run on the shard's blocking thread, not
//! on its reactor.

use std::sync::Arc;

use bytes::Bytes;
use shardline_auth::{set_requirepass, PasswdLimits};

use crate::server::Shared;
use crate::shard::Shard;

/// The value CONFIG GET shows: the last password given to CONFIG SET requirepass, in clear
/// (as Redis shows it), or empty.
pub fn get(shard: &Shard) -> Bytes {
    match shard.shared.requirepass.lock() {
        Ok(value) => Bytes::copy_from_slice(&value),
        Err(poisoned) => Bytes::copy_from_slice(&poisoned.into_inner()),
    }
}

/// Makes `password` the default user's (empty: no password needed), in the users file and in
/// the users every shard checks logins against.
///
/// # Errors
/// The reason, for CONFIG SET's error reply: a password longer than `--max-password-bytes`,
/// a `--max-hash-rounds` below 5000, a users file that does not load (left untouched) or
/// cannot be rewritten.
pub async fn set(shard: &Shard, password: &[u8]) -> Result<(), String> {
    let shared: Arc<Shared> = shard.shared.clone();
    let password = zeroize::Zeroizing::new(password.to_vec());
    glommio::executor()
        .spawn_blocking(move || {
            let mut current = shared
                .requirepass
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let limits = PasswdLimits {
                max_password_bytes: shared.config.max_password_bytes,
                max_hash_rounds: shared.config.max_hash_rounds,
            };
            let path = shared.config.users_path();
            let users = set_requirepass(&path, &password, limits).map_err(|e| e.to_string())?;
            let nopass = users.default_nopass();
            shared.users.store(Arc::new(users));
            *current = password;
            if nopass {
                tracing::warn!(
                    "CONFIG SET requirepass \"\": the default user needs no password now \
                     ({} says default:nopass); every client that connects is logged in",
                    path.display()
                );
            } else {
                tracing::info!(
                    "CONFIG SET requirepass: the default user's password changed in {}",
                    path.display()
                );
            }
            Ok(())
        })
        .await
}
