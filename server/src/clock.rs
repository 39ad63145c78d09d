//! A shard's command clock: one monotonic read per command serves both its timing (µs, for
//! INFO commandstats and SLOWLOG) and the Unix time in ms its expiry and LRU/LFU decisions use
//! (Redis's `server.mstime` / `commandTimeSnapshot`, cached per command too).
//!
//! Reading the Unix clock as well costs a second `clock_gettime` per command (~50 ns on a VM).
//! Instead the shard keeps an anchor — a monotonic [`Instant`] and the Unix time read next to
//! it — and converts any instant to Unix ms by adding the monotonic time elapsed since the
//! anchor. NTP slewing changes both clocks alike, so the conversion only drifts when the wall
//! clock is stepped (settimeofday, a VM resumed); the expiry sweep re-anchors every
//! [`crate::shard::EXPIRE_SWEEP_PERIOD`] (100 ms), so a step reaches expiry decisions within
//! that period. Cold paths keep reading the Unix clock directly ([`crate::shard::unix_time_ms`]).

use std::cell::Cell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An instant of the command clock: `quanta`'s, a read of the TSC (scaled to ns) where the CPU's
/// TSC is invariant, the OS monotonic clock elsewhere. Commands are timed with it (INFO
/// commandstats, SLOWLOG, µs): on a VM a TSC read costs ~7 ns where `clock_gettime` costs
/// ~25 ns, and it is read once per command.
pub type CommandInstant = quanta::Instant;

/// Converts this shard's monotonic instants to Unix time. Lives on one shard (not `Sync`).
#[derive(Debug)]
pub struct CommandClock {
    /// A monotonic instant and the time since the Unix epoch read right after it.
    anchor: Cell<(CommandInstant, Duration)>,
}

impl Default for CommandClock {
    fn default() -> Self {
        Self {
            anchor: Cell::new(read_anchor()),
        }
    }
}

impl CommandClock {
    /// Re-reads both clocks (the expiry sweep, every 100 ms) and returns the Unix time now, in
    /// ms, so a wall-clock step is picked up.
    pub fn resync(&self) -> u64 {
        let anchor = read_anchor();
        self.anchor.set(anchor);
        anchor.1.as_millis() as u64
    }

    /// The Unix time in ms at monotonic instant `at` (taken on this shard, e.g. when a
    /// command started), as of the last [`CommandClock::resync`].
    pub fn unix_ms(&self, at: CommandInstant) -> u64 {
        let (base, unix) = self.anchor.get();
        let unix = match at.checked_duration_since(base) {
            Some(later) => unix + later,
            None => unix.saturating_sub(base.duration_since(at)),
        };
        unix.as_millis() as u64
    }
}

fn read_anchor() -> (CommandInstant, Duration) {
    let now = CommandInstant::now();
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    (now, unix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_instants_around_the_anchor() {
        let clock = CommandClock::default();
        let (base, unix) = clock.anchor.get();
        let unix_ms = unix.as_millis() as u64;
        assert_eq!(clock.unix_ms(base), unix_ms);
        assert_eq!(
            clock.unix_ms(base + Duration::from_millis(1500)),
            (unix + Duration::from_millis(1500)).as_millis() as u64
        );
        if let Some(earlier) = base.checked_sub(Duration::from_millis(250)) {
            assert_eq!(
                clock.unix_ms(earlier),
                (unix - Duration::from_millis(250)).as_millis() as u64
            );
        }
    }

    #[test]
    fn follows_the_unix_clock_after_a_resync() {
        let clock = CommandClock::default();
        let before = crate::shard::unix_time_ms();
        let now = clock.resync();
        let after = crate::shard::unix_time_ms();
        assert!(
            before <= now && now <= after,
            "{before} <= {now} <= {after}"
        );
        let derived = clock.unix_ms(CommandInstant::now());
        assert!(derived >= now && derived <= crate::shard::unix_time_ms() + 1);
    }
}
