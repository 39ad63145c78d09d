//! The query-buffer size CLIENT LIST reports (`qbuf-free`, Redis 7.0 networking.c
//! `readQueryFromClient` and server.c `clientsCronResizeQueryBuffer`).
//!
//! shardline reads the socket through a fixed chunk and keeps unparsed bytes in a buffer that
//! grows as needed, so its allocation says little about what Redis would hold. This model
//! follows Redis's rules instead, so that `qbuf + qbuf-free` (the buffer's allocation) moves
//! as Redis's does:
//! - each read makes room for [`READ_LEN`] more bytes after those already buffered, and
//!   raises the recent peak to that;
//! - every [`RESIZE_PERIOD`] (Redis's `clientsCron` at `hz 10`), a buffer wasting more than
//!   [`RESIZE_MIN_WASTE`] bytes, larger than [`RESIZE_THRESHOLD`] and more than twice the
//!   recent peak shrinks to that peak; the peak then restarts from what is buffered;
//! - a connection idle for more than [`IDLE_FREE`] gives its whole buffer back (when it wastes
//!   more than [`RESIZE_MIN_WASTE`] bytes).

use std::time::{Duration, Instant};

/// Bytes Redis makes room for per read (`PROTO_IOBUF_LEN`).
pub const READ_LEN: usize = 16 * 1024;
/// A buffer above this many bytes may shrink to its recent peak (`PROTO_RESIZE_THRESHOLD`).
pub const RESIZE_THRESHOLD: usize = 32 * 1024;
/// Free bytes below which a buffer is never resized (Redis: 4 KiB).
pub const RESIZE_MIN_WASTE: usize = 4 * 1024;
/// How often the resize rule runs (Redis's `clientsCron` at the default `hz 10`).
pub const RESIZE_PERIOD: Duration = Duration::from_millis(100);
/// Idle time after which the buffer is given back: Redis frees it once `idle > 2` whole
/// seconds, so at 3 s.
pub const IDLE_FREE: Duration = Duration::from_secs(3);

/// One connection's modelled query-buffer allocation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryBufferSize {
    /// Allocated bytes (buffered plus free), in bytes.
    alloc: usize,
    /// Largest size asked for since the last resize period (Redis `querybuf_peak`), in bytes.
    peak: usize,
    /// When the current resize period started; `None` before the first read.
    period_start: Option<Instant>,
}

impl QueryBufferSize {
    /// Bytes arrived at `now`: `before` were buffered (unparsed) before them, `after` are now.
    pub fn read(&mut self, before: usize, after: usize, now: Instant) {
        match self.period_start {
            Some(start) if now.saturating_duration_since(start) >= RESIZE_PERIOD => {
                self.resize(before);
                self.period_start = Some(now);
            }
            Some(_) => {}
            None => self.period_start = Some(now),
        }
        let wanted = before.saturating_add(READ_LEN);
        self.peak = self.peak.max(wanted);
        self.alloc = self.alloc.max(wanted).max(after);
    }

    /// Redis's shrink to the recent peak, `len` bytes being buffered.
    fn resize(&mut self, len: usize) {
        if self.alloc.saturating_sub(len) > RESIZE_MIN_WASTE
            && self.alloc > RESIZE_THRESHOLD
            && self.alloc / 2 > self.peak
        {
            self.alloc = len.max(self.peak);
        }
        self.peak = len;
    }

    /// The allocation CLIENT LIST reports with `len` bytes buffered after `idle` without
    /// interaction: `len` once the idle buffer was given back, else the allocation.
    pub fn allocated(&self, len: usize, idle: Duration) -> usize {
        if idle >= IDLE_FREE && self.alloc.saturating_sub(len) > RESIZE_MIN_WASTE {
            len
        } else {
            self.alloc.max(len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_request_holds_one_read_and_idle_frees_it() {
        let t = Instant::now();
        let mut q = QueryBufferSize::default();
        assert_eq!(q.allocated(0, Duration::ZERO), 0);
        q.read(0, 47, t);
        let alloc = q.allocated(0, Duration::ZERO);
        assert!((READ_LEN..RESIZE_THRESHOLD).contains(&alloc), "{alloc}");
        assert_eq!(q.allocated(0, Duration::from_secs(2)), alloc);
        assert_eq!(q.allocated(0, IDLE_FREE), 0);
    }

    #[test]
    fn a_big_request_grows_it_and_small_ones_shrink_it_back_to_the_peak() {
        let t = Instant::now();
        let mut q = QueryBufferSize::default();
        let mut buffered = 0;
        while buffered < 400_000 {
            q.read(buffered, buffered + READ_LEN, t);
            buffered += READ_LEN;
        }
        let big = q.allocated(0, Duration::ZERO);
        assert!(big > 400_000);
        // Small requests in later periods: the first one ends the period of the big peak,
        // the next one the period whose peak was one read.
        q.read(0, 100, t + RESIZE_PERIOD);
        assert_eq!(q.allocated(0, Duration::ZERO), big);
        q.read(0, 100, t + RESIZE_PERIOD * 2);
        assert_eq!(q.allocated(0, Duration::ZERO), READ_LEN);
    }
}
