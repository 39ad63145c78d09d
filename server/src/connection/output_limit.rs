//! `--client-output-buffer-limit`: how many unwritten reply bytes one client may hold.
//!
//! Redis's normal-class limit (Redis 7.0 `networking.c`, `checkClientOutputBufferLimits`): a
//! client whose unwritten replies reach the hard limit is closed at once; one that stays at or
//! over the soft limit for more than the soft seconds is closed too. 0 disables a limit; the
//! default `0 0 0` disables both, as in Redis, so a client may write a whole pipeline before it
//! reads any reply.
//!
//! A subscribed client (Redis's `pubsub` class) is held to `--client-output-buffer-limit-pubsub`
//! instead, Redis's default `32mb 8mb 60`, so a subscriber that does not read cannot grow the
//! server's memory without bound; its pending Pub/Sub deliveries count too
//! ([`crate::pubsub::Mailbox`]).

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

/// A parsed `--client-output-buffer-limit` value: `HARD SOFT SECONDS`, optionally preceded
/// by the class name `normal` (the only class a shardline client has), e.g. `0 0 0`,
/// `256mb 64mb 60` or `normal 1gb 0 0`.
///
/// Sizes take Redis's units (`memtoull`): none or `b` = bytes, `k` = 1000, `kb` = 1024,
/// `m` = 1000², `mb` = 1024², `g` = 1000³, `gb` = 1024³, case-insensitive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OutputBufferLimit {
    /// Close the client as soon as its unwritten replies reach this many bytes; 0 = no limit.
    pub hard_bytes: u64,
    /// Close the client once its unwritten replies stayed at or above this many bytes for
    /// more than `soft_seconds`; 0 = no limit.
    pub soft_bytes: u64,
    /// How long the soft limit may be exceeded, in seconds.
    pub soft_seconds: u64,
}

/// Why a `--client-output-buffer-limit` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "expected `HARD SOFT SECONDS` (e.g. `0 0 0` or `256mb 64mb 60`, class `normal` optional): {0}"
)]
pub struct OutputBufferLimitError(String);

impl FromStr for OutputBufferLimit {
    type Err = OutputBufferLimitError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let mut words: Vec<&str> = value.split_whitespace().collect();
        if words
            .first()
            .is_some_and(|w| w.eq_ignore_ascii_case("normal"))
        {
            words.remove(0);
        }
        let [hard, soft, seconds] = words[..] else {
            return Err(OutputBufferLimitError(format!(
                "got {} value(s) in {value:?}",
                words.len()
            )));
        };
        let size = |word: &str| {
            parse_memory(word)
                .ok_or_else(|| OutputBufferLimitError(format!("{word:?} is not a size")))
        };
        Ok(OutputBufferLimit {
            hard_bytes: size(hard)?,
            soft_bytes: size(soft)?,
            soft_seconds: seconds.parse().map_err(|_| {
                OutputBufferLimitError(format!("{seconds:?} is not a number of seconds"))
            })?,
        })
    }
}

impl fmt::Display for OutputBufferLimit {
    /// Redis's CONFIG GET form: `normal HARD SOFT SECONDS`, sizes in bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "normal {} {} {}",
            self.hard_bytes, self.soft_bytes, self.soft_seconds
        )
    }
}

impl OutputBufferLimit {
    /// Parses a `--client-output-buffer-limit-pubsub` value: `HARD SOFT SECONDS`, optionally
    /// preceded by the class name `pubsub` (same units as [`OutputBufferLimit::from_str`]).
    pub fn parse_pubsub(value: &str) -> Result<Self, OutputBufferLimitError> {
        let trimmed = value.trim_start();
        let rest = match trimmed.get(..6) {
            Some(class) if class.eq_ignore_ascii_case("pubsub") => &trimmed[6..],
            _ => value,
        };
        if rest
            .split_whitespace()
            .next()
            .is_some_and(|w| w.eq_ignore_ascii_case("normal"))
        {
            return Err(OutputBufferLimitError(format!(
                "{value:?} names class normal"
            )));
        }
        rest.parse()
    }
}

/// Redis's `memtoull`: digits with an optional unit; `None` for anything else.
pub fn parse_memory(word: &str) -> Option<u64> {
    let split = word
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(word.len());
    let (digits, unit) = word.split_at(split);
    if digits.is_empty() {
        return None;
    }
    let multiplier: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(multiplier)
}

/// One connection's view of the limit: remembers since when the soft limit is exceeded.
#[derive(Debug)]
pub struct OutputBufferCheck {
    limit: OutputBufferLimit,
    soft_exceeded_since: Option<Instant>,
}

impl OutputBufferCheck {
    /// A check against `limit`, nothing exceeded yet.
    pub fn new(limit: OutputBufferLimit) -> Self {
        Self {
            limit,
            soft_exceeded_since: None,
        }
    }

    /// Follows a new limit (CONFIG SET client-output-buffer-limit); a soft limit already
    /// exceeded keeps its start time.
    pub fn set_limit(&mut self, limit: OutputBufferLimit) {
        self.limit = limit;
    }

    /// Whether a client holding `pending` unwritten reply bytes must be closed; `now` gives
    /// the time, read only while the soft limit is exceeded (a clock read costs ~25 ns per
    /// reply otherwise).
    pub fn exceeded(&mut self, pending: usize, now: impl FnOnce() -> Instant) -> bool {
        let pending = pending as u64;
        let limit = &self.limit;
        if limit.hard_bytes > 0 && pending >= limit.hard_bytes {
            return true;
        }
        if limit.soft_bytes == 0 || pending < limit.soft_bytes {
            self.soft_exceeded_since = None;
            return false;
        }
        let now = now();
        let since = *self.soft_exceeded_since.get_or_insert(now);
        now.duration_since(since) > Duration::from_secs(limit.soft_seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_redis_forms() {
        assert_eq!(
            "0 0 0".parse::<OutputBufferLimit>(),
            Ok(OutputBufferLimit::default())
        );
        assert_eq!(
            "normal 256mb 64MB 60".parse::<OutputBufferLimit>(),
            Ok(OutputBufferLimit {
                hard_bytes: 256 << 20,
                soft_bytes: 64 << 20,
                soft_seconds: 60
            })
        );
        assert_eq!(
            "1k 2kb 3".parse::<OutputBufferLimit>(),
            Ok(OutputBufferLimit {
                hard_bytes: 1000,
                soft_bytes: 2048,
                soft_seconds: 3
            })
        );
        assert_eq!(
            "1gb 1g 0"
                .parse::<OutputBufferLimit>()
                .map(|l| l.hard_bytes - l.soft_bytes),
            Ok((1 << 30) - 1_000_000_000)
        );
        for bad in [
            "",
            "0 0",
            "0 0 0 0",
            "-1 0 0",
            "1x 0 0",
            "mb 0 0",
            "0 0 1.5",
            "replica 0 0 0",
        ] {
            assert!(bad.parse::<OutputBufferLimit>().is_err(), "{bad:?}");
        }
        assert_eq!(
            OutputBufferLimit::parse_pubsub("pubsub 32mb 8mb 60"),
            OutputBufferLimit::parse_pubsub("32mb 8mb 60")
        );
        assert_eq!(
            OutputBufferLimit::parse_pubsub("1kb 0 0").map(|l| l.hard_bytes),
            Ok(1024)
        );
        assert!(OutputBufferLimit::parse_pubsub("normal 1 2 3").is_err());
        assert!(OutputBufferLimit::parse_pubsub("pubsub 1 2").is_err());
        assert_eq!(
            "4kb 1kb 2"
                .parse::<OutputBufferLimit>()
                .map(|l| l.to_string()),
            Ok("normal 4096 1024 2".to_string())
        );
    }

    #[test]
    fn hard_limit_closes_at_once_soft_limit_after_its_seconds() {
        let start = Instant::now();
        let mut hard = OutputBufferCheck::new(OutputBufferLimit {
            hard_bytes: 100,
            ..Default::default()
        });
        assert!(!hard.exceeded(99, || start));
        assert!(hard.exceeded(100, || start));

        let mut soft = OutputBufferCheck::new(OutputBufferLimit {
            hard_bytes: 0,
            soft_bytes: 10,
            soft_seconds: 2,
        });
        assert!(!soft.exceeded(10, || start));
        assert!(!soft.exceeded(50, || start + Duration::from_secs(2)));
        assert!(soft.exceeded(50, || start + Duration::from_millis(2001)));
        // Dropping under the soft limit restarts the clock.
        assert!(!soft.exceeded(9, || start + Duration::from_secs(3)));
        assert!(!soft.exceeded(10, || start + Duration::from_secs(4)));
        assert!(!soft.exceeded(10, || start + Duration::from_secs(6)));
        assert!(soft.exceeded(10, || start + Duration::from_millis(6001)));

        let mut none = OutputBufferCheck::new(OutputBufferLimit::default());
        assert!(!none.exceeded(usize::MAX, || start + Duration::from_secs(3600)));
    }
}
