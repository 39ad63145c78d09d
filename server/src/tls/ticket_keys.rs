//! Session-ticket keys shared by every shard (RFC 5077 §4's recommended ticket format:
//! a 16-byte key name, AES-256-CBC for the state, HMAC-SHA256 over the whole).
//!
//! Every shard has its own `SSL_CTX` (no OpenSSL object crosses cores), and by default each
//! `SSL_CTX` invents its own ticket keys: a ticket then only decrypts on the shard that issued
//! it, and the kernel's SO_REUSEPORT spreading sends most reconnects elsewhere. So the process
//! makes one [`TicketKeys`] ring, every shard's context encrypts with its current key and
//! decrypts with the current or the previous one (see [`super::ticket_callback`]), and a
//! thread ([`super::ServerTls::spawn_rotation`]) rotates it every `--tls-ticket-key-rotation` (Seastar's fix for ScyllaDB, which had
//! the same bug). A ticket therefore stays valid between one and two rotation periods.

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use zeroize::{Zeroize, ZeroizeOnDrop};

/// Length of a ticket key name, bytes (the first field of every ticket).
pub const KEY_NAME_LEN: usize = 16;
/// Length of the AES-256 key, bytes.
pub const AES_KEY_LEN: usize = 32;
/// Length of the HMAC-SHA256 key, bytes.
pub const HMAC_KEY_LEN: usize = 32;

/// One ticket key: its public name and the two secrets. Zeroized on drop.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct TicketKey {
    /// Sent in clear at the start of each ticket; picks the key to decrypt with.
    pub name: [u8; KEY_NAME_LEN],
    /// AES-256-CBC key encrypting the session state.
    pub aes_key: [u8; AES_KEY_LEN],
    /// HMAC-SHA256 key authenticating the ticket.
    pub hmac_key: [u8; HMAC_KEY_LEN],
}

impl TicketKey {
    /// A key with fresh random material from OpenSSL's CSPRNG.
    ///
    /// Errors: OpenSSL's RNG failed (its error queue, drained).
    pub fn generate() -> Result<TicketKey, openssl::error::ErrorStack> {
        let mut key = TicketKey {
            name: [0; KEY_NAME_LEN],
            aes_key: [0; AES_KEY_LEN],
            hmac_key: [0; HMAC_KEY_LEN],
        };
        openssl::rand::rand_bytes(&mut key.name)?;
        openssl::rand::rand_bytes(&mut key.aes_key)?;
        openssl::rand::rand_bytes(&mut key.hmac_key)?;
        Ok(key)
    }
}

impl std::fmt::Debug for TicketKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The name is public (it travels in every ticket); the secrets are never printed.
        f.debug_struct("TicketKey")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The keys in use at one moment.
#[derive(Debug)]
pub struct KeyRing {
    /// Encrypts new tickets and decrypts.
    pub current: TicketKey,
    /// The key before the last rotation: still decrypts (the ticket is then renewed).
    pub previous: Option<TicketKey>,
}

/// Which key of the ring decrypts a ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyAge {
    /// The current key: the ticket is fine as it is.
    Current,
    /// The previous key: accept it, and issue a new ticket under the current key.
    Previous,
}

/// The process-wide ticket key ring; `Send + Sync`, read by every shard's ticket callback
/// without locks (`arc-swap`), written only by [`TicketKeys::rotate`].
#[derive(Debug)]
pub struct TicketKeys {
    ring: ArcSwap<KeyRing>,
    rotation: Duration,
}

impl TicketKeys {
    /// A ring with one fresh key and no previous key; `rotation` is
    /// `--tls-ticket-key-rotation`.
    ///
    /// Errors: OpenSSL's RNG failed.
    pub fn generate(rotation: Duration) -> Result<Arc<TicketKeys>, openssl::error::ErrorStack> {
        Ok(Arc::new(TicketKeys {
            ring: ArcSwap::from_pointee(KeyRing {
                current: TicketKey::generate()?,
                previous: None,
            }),
            rotation,
        }))
    }

    /// The rotation period (`--tls-ticket-key-rotation`).
    pub fn rotation(&self) -> Duration {
        self.rotation
    }

    /// How long a ticket can decrypt at most: two rotation periods. Used as the sessions'
    /// timeout, which OpenSSL also sends as the ticket lifetime hint.
    pub fn max_ticket_lifetime(&self) -> Duration {
        self.rotation.saturating_mul(2)
    }

    /// A new current key; the current one becomes the previous one and the previous one is
    /// dropped (and zeroized once no callback still reads it).
    ///
    /// Errors: OpenSSL's RNG failed; the ring is then unchanged.
    pub fn rotate(&self) -> Result<(), openssl::error::ErrorStack> {
        let next = TicketKey::generate()?;
        self.ring.rcu(|old| KeyRing {
            current: next.clone(),
            previous: Some(old.current.clone()),
        });
        Ok(())
    }

    /// Calls `f` with the key to encrypt a new ticket with.
    pub fn with_current<R>(&self, f: impl FnOnce(&TicketKey) -> R) -> R {
        f(&self.ring.load().current)
    }

    /// Calls `f` with the key named `name` and its age, or with `None` for a name that is
    /// in neither slot (a ticket from before the last two rotations, or from elsewhere).
    pub fn with_named<R>(
        &self,
        name: &[u8; KEY_NAME_LEN],
        f: impl FnOnce(Option<(&TicketKey, KeyAge)>) -> R,
    ) -> R {
        let ring = self.ring.load();
        if ring.current.name == *name {
            f(Some((&ring.current, KeyAge::Current)))
        } else {
            match &ring.previous {
                Some(previous) if previous.name == *name => f(Some((previous, KeyAge::Previous))),
                _ => f(None),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name_of(keys: &TicketKeys) -> [u8; KEY_NAME_LEN] {
        keys.with_current(|key| key.name)
    }

    fn age_of(keys: &TicketKeys, name: &[u8; KEY_NAME_LEN]) -> Option<KeyAge> {
        keys.with_named(name, |found| found.map(|(_, age)| age))
    }

    #[test]
    fn rotation_keeps_exactly_one_previous_key() {
        let keys = TicketKeys::generate(Duration::from_secs(3600)).expect("keys");
        let first = name_of(&keys);
        assert_eq!(age_of(&keys, &first), Some(KeyAge::Current));
        keys.rotate().expect("rotate");
        let second = name_of(&keys);
        assert_ne!(first, second);
        assert_eq!(age_of(&keys, &first), Some(KeyAge::Previous));
        assert_eq!(age_of(&keys, &second), Some(KeyAge::Current));
        keys.rotate().expect("rotate");
        assert_eq!(age_of(&keys, &first), None);
        assert_eq!(age_of(&keys, &second), Some(KeyAge::Previous));
        assert_eq!(keys.max_ticket_lifetime(), Duration::from_secs(7200));
    }

    #[test]
    fn the_secrets_are_random_and_not_printed() {
        let a = TicketKey::generate().expect("key");
        let b = TicketKey::generate().expect("key");
        assert_ne!(a.aes_key, b.aes_key);
        assert_ne!(a.hmac_key, b.hmac_key);
        assert_ne!(a.aes_key, a.hmac_key);
        let printed = format!("{a:?}");
        assert!(!printed.contains("aes_key") && !printed.contains("hmac_key"));
    }

    #[test]
    fn zeroize_clears_every_secret() {
        let mut key = TicketKey::generate().expect("key");
        key.zeroize();
        assert_eq!(key.aes_key, [0; AES_KEY_LEN]);
        assert_eq!(key.hmac_key, [0; HMAC_KEY_LEN]);
        assert_eq!(key.name, [0; KEY_NAME_LEN]);
    }
}
