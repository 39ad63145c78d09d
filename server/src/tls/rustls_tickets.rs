//! Session tickets for `--tls-provider rustls`: one ticketer shared by every shard (it sits
//! in the one `ServerConfig` they all use), rotated every `--tls-ticket-key-rotation` by the
//! same thread and with the same policy as the OpenSSL provider's [`super::TicketKeys`]: new
//! tickets are sealed with the current key, the previous key still opens tickets, so a ticket
//! resumes for one to two rotation periods.
//!
//! Each key is a rustls `aws_lc_rs::Ticketer` (RFC 5077 §4's recommended construction:
//! AES-256-CBC and HMAC-SHA256, random keys from aws-lc). That ticketer also renews its own
//! key every 6 hours, which only matters for a rotation period above 6 hours: tickets then
//! get a fresh key every 6 hours within a period, and each stays valid as above.

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use rustls::server::ProducesTickets;

/// RFC 8446 §4.6.1: a TLS 1.3 ticket lifetime hint may not exceed 7 days (seconds).
const MAX_LIFETIME_HINT_SECS: u64 = 7 * 24 * 3600;

struct Ring {
    /// Seals new tickets and opens tickets.
    current: Arc<dyn ProducesTickets>,
    /// The key before the last rotation: only opens tickets.
    previous: Option<Arc<dyn ProducesTickets>>,
}

/// The process-wide rustls ticketer; `Send + Sync`, read by every shard's handshakes without
/// locks (`arc-swap`), changed only by [`RustlsTickets::rotate`].
pub struct RustlsTickets {
    ring: ArcSwap<Ring>,
    rotation: Duration,
}

impl RustlsTickets {
    /// A ticketer with one fresh key; `rotation` is `--tls-ticket-key-rotation`.
    ///
    /// Errors: aws-lc's RNG or key setup failed.
    pub fn generate(rotation: Duration) -> Result<Arc<RustlsTickets>, rustls::Error> {
        Ok(Arc::new(RustlsTickets {
            ring: ArcSwap::from_pointee(Ring {
                current: rustls::crypto::aws_lc_rs::Ticketer::new()?,
                previous: None,
            }),
            rotation,
        }))
    }

    /// The rotation period (`--tls-ticket-key-rotation`).
    pub fn rotation(&self) -> Duration {
        self.rotation
    }

    /// A new current key; the current one becomes the previous one, the previous one is
    /// dropped.
    ///
    /// Errors: making the new key failed; the ticketer is then unchanged.
    pub fn rotate(&self) -> Result<(), rustls::Error> {
        let next = rustls::crypto::aws_lc_rs::Ticketer::new()?;
        self.ring.rcu(|old| Ring {
            current: next.clone(),
            previous: Some(old.current.clone()),
        });
        Ok(())
    }
}

impl ProducesTickets for RustlsTickets {
    fn enabled(&self) -> bool {
        true
    }

    /// Two rotation periods (the longest a ticket can open), at most 7 days; seconds.
    fn lifetime(&self) -> u32 {
        let secs = self
            .rotation
            .saturating_mul(2)
            .as_secs()
            .min(MAX_LIFETIME_HINT_SECS);
        u32::try_from(secs).unwrap_or(u32::MAX)
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        self.ring.load().current.encrypt(plain)
    }

    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        let ring = self.ring.load();
        // Each key checks the ticket's key name first: a miss costs a 16-byte compare.
        ring.current
            .decrypt(cipher)
            .or_else(|| ring.previous.as_ref()?.decrypt(cipher))
    }
}

impl std::fmt::Debug for RustlsTickets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RustlsTickets")
            .field("rotation", &self.rotation)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticket_opens_until_the_second_rotation_after_it() {
        let tickets = RustlsTickets::generate(Duration::from_secs(3600)).expect("ticketer");
        assert_eq!(tickets.lifetime(), 7200);
        let sealed = tickets.encrypt(b"session state").expect("seal");
        assert_eq!(
            tickets.decrypt(&sealed).as_deref(),
            Some(&b"session state"[..])
        );
        tickets.rotate().expect("rotate");
        assert_eq!(
            tickets.decrypt(&sealed).as_deref(),
            Some(&b"session state"[..])
        );
        let resealed = tickets.encrypt(b"session state").expect("seal");
        assert_ne!(resealed, sealed);
        tickets.rotate().expect("rotate");
        assert_eq!(tickets.decrypt(&sealed), None);
        assert_eq!(
            tickets.decrypt(&resealed).as_deref(),
            Some(&b"session state"[..])
        );
    }

    #[test]
    fn the_lifetime_hint_stays_within_seven_days() {
        let tickets =
            RustlsTickets::generate(Duration::from_secs(30 * 24 * 3600)).expect("ticketer");
        assert_eq!(tickets.lifetime(), 604_800);
    }
}
