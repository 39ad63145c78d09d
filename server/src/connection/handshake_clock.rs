//! When a TLS handshake is cut: after `--handshake-timeout-ms` without progress, or after
//! `--handshake-max-ms` in all, both counted from the client's first byte (silence before it
//! is [`super::silent`]'s business).
//!
//! Progress is a read of at least one byte from the client's socket or a write of at least
//! one byte to it. A client that is slow but keeps going (a busy client event loop finishing
//! thousands of handshakes at once) is therefore never cut by the progress timeout; one that
//! stops is cut `--handshake-timeout-ms` after its last byte; and one that trickles a byte
//! just often enough (slowloris) is cut at the hard limit. Time spent waiting for a login
//! slot is the server's delay, not the client's: it counts for neither limit (the login
//! queue has its own, `--login-queue-timeout-ms`), and a granted slot counts as progress.

use std::cell::Cell;
use std::time::{Duration, Instant};

use shardline_metrics::labels::tls_failure;

/// The two limits, from `--handshake-timeout-ms` and `--handshake-max-ms`.
#[derive(Debug, Clone, Copy)]
pub struct HandshakeLimits {
    /// Longest time without progress.
    pub idle: Duration,
    /// Longest handshake in all, login-slot waits excluded.
    pub max: Duration,
}

/// Why a handshake was cut; [`HandshakeCut::label`] is the `reason` of
/// `tls_handshakes_failed_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandshakeCut {
    /// No progress for `--handshake-timeout-ms`.
    Idle,
    /// `--handshake-max-ms` elapsed.
    MaxDuration,
}

impl HandshakeCut {
    /// The metric label: `timeout` or `max_duration`.
    pub fn label(self) -> &'static str {
        match self {
            HandshakeCut::Idle => tls_failure::TIMEOUT,
            HandshakeCut::MaxDuration => tls_failure::MAX_DURATION,
        }
    }
}

/// What the watchdog does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// Cut the handshake now.
    Cut(HandshakeCut),
    /// Look again at this instant.
    CheckAt(Instant),
}

/// The progress record of one handshake: written by the socket wrapper, read by
/// [`HandshakeClock::watch`]. Shard-local (`Cell`s), shared through an `Rc`.
#[derive(Debug)]
pub struct HandshakeClock {
    started: Instant,
    last_progress: Cell<Instant>,
    queued_since: Cell<Option<Instant>>,
    queued_total: Cell<Duration>,
}

impl HandshakeClock {
    /// A clock for a handshake that starts now (the client's first byte has come).
    pub fn new() -> Self {
        let now = Instant::now();
        Self {
            started: now,
            last_progress: Cell::new(now),
            queued_since: Cell::new(None),
            queued_total: Cell::new(Duration::ZERO),
        }
    }

    /// When the handshake started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Bytes moved on the socket.
    pub fn progress(&self) {
        self.last_progress.set(Instant::now());
    }

    /// The handshake waits for a login slot from now on (a no-op while already waiting).
    pub fn queued(&self) {
        if self.queued_since.get().is_none() {
            self.queued_since.set(Some(Instant::now()));
        }
    }

    /// The wait for a login slot is over (granted or shed); counts as progress.
    pub fn dequeued(&self) {
        if let Some(since) = self.queued_since.take() {
            let now = Instant::now();
            self.queued_total
                .set(self.queued_total.get() + now.duration_since(since));
            self.last_progress.set(now);
        }
    }

    /// Resolves when the handshake must be cut, with the reason; meant to race the
    /// handshake itself. While the handshake waits for a login slot it looks again every
    /// `limits.idle`, so a cut right after such a wait may come up to that much late.
    pub async fn watch(&self, limits: HandshakeLimits) -> HandshakeCut {
        loop {
            let now = Instant::now();
            match self.next(now, limits) {
                Next::Cut(cut) => return cut,
                Next::CheckAt(at) => glommio::timer::sleep(at.saturating_duration_since(now)).await,
            }
        }
    }

    fn next(&self, now: Instant, limits: HandshakeLimits) -> Next {
        if self.queued_since.get().is_some() {
            return Next::CheckAt(now + limits.idle);
        }
        let idle_at = self.last_progress.get() + limits.idle;
        let max_at = self.started + limits.max + self.queued_total.get();
        let (at, cut) = if max_at <= idle_at {
            (max_at, HandshakeCut::MaxDuration)
        } else {
            (idle_at, HandshakeCut::Idle)
        };
        if at <= now {
            Next::Cut(cut)
        } else {
            Next::CheckAt(at)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: HandshakeLimits = HandshakeLimits {
        idle: Duration::from_secs(10),
        max: Duration::from_secs(60),
    };

    fn clock_at(started: Instant) -> HandshakeClock {
        HandshakeClock {
            started,
            last_progress: Cell::new(started),
            queued_since: Cell::new(None),
            queued_total: Cell::new(Duration::ZERO),
        }
    }

    #[test]
    fn silence_is_cut_at_the_idle_limit_and_progress_moves_it() {
        let t0 = Instant::now();
        let clock = clock_at(t0);
        let s = Duration::from_secs;
        assert_eq!(clock.next(t0, LIMITS), Next::CheckAt(t0 + s(10)));
        assert_eq!(
            clock.next(t0 + s(10), LIMITS),
            Next::Cut(HandshakeCut::Idle)
        );
        clock.last_progress.set(t0 + s(9));
        assert_eq!(clock.next(t0 + s(10), LIMITS), Next::CheckAt(t0 + s(19)));
    }

    #[test]
    fn a_trickle_is_cut_at_the_hard_limit() {
        let t0 = Instant::now();
        let clock = clock_at(t0);
        let s = Duration::from_secs;
        clock.last_progress.set(t0 + s(55));
        assert_eq!(clock.next(t0 + s(56), LIMITS), Next::CheckAt(t0 + s(60)));
        assert_eq!(
            clock.next(t0 + s(60), LIMITS),
            Next::Cut(HandshakeCut::MaxDuration)
        );
    }

    #[test]
    fn waiting_for_a_login_slot_counts_for_neither_limit() {
        let t0 = Instant::now();
        let clock = clock_at(t0);
        let s = Duration::from_secs;
        clock.queued_since.set(Some(t0 + s(1)));
        // Queued for 70 s: past both limits, yet not cut.
        assert_eq!(clock.next(t0 + s(71), LIMITS), Next::CheckAt(t0 + s(81)));
        // Dequeued at 71 s: 70 s of waiting are added to the hard limit.
        clock.queued_since.set(None);
        clock.queued_total.set(s(70));
        clock.last_progress.set(t0 + s(71));
        assert_eq!(clock.next(t0 + s(72), LIMITS), Next::CheckAt(t0 + s(81)));
        clock.last_progress.set(t0 + s(125));
        assert_eq!(clock.next(t0 + s(126), LIMITS), Next::CheckAt(t0 + s(130)));
    }
}
