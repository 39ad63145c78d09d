//! Scripts running now, seen from every shard: what `-BUSY`, SCRIPT KILL and FUNCTION KILL
//! act on (Redis 7.0 `script.c`).
//!
//! A script runs on its connection's shard and holds the gates of the shards it touches. Once
//! it has run for `busy-reply-threshold` ms, every other client gets `-BUSY` for any command
//! but the few Redis allows meanwhile, as Redis answers while a script is busy (clients and
//! transactions rely on it: an EXEC then aborts). The check costs one atomic load per command
//! while no script is busy.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use bytes::Bytes;

/// The function running on a shard, for FUNCTION STATS `running_script`.
#[derive(Debug, Clone)]
pub struct RunningFunction {
    /// The function's name as called.
    pub name: String,
    /// The whole FCALL command.
    pub command: Vec<Bytes>,
    /// When it started.
    pub started: Instant,
}

/// One shard's running script (at most one runs per shard: it holds the shard's gate).
#[derive(Debug, Default)]
pub struct Slot {
    running: AtomicBool,
    busy: AtomicBool,
    kill: AtomicBool,
    wrote: AtomicBool,
    is_function: AtomicBool,
    function: Mutex<Option<RunningFunction>>,
}

/// The running scripts of every shard.
#[derive(Debug)]
pub struct Busy {
    slots: Vec<Slot>,
    busy_count: AtomicUsize,
}

/// What SCRIPT KILL / FUNCTION KILL found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kill {
    /// A script was told to stop.
    Killed,
    /// No script runs (`NOTBUSY`).
    NotBusy,
    /// The running script has written: it cannot be stopped (`UNKILLABLE`).
    Unkillable,
    /// The running one is of the other kind (a function for SCRIPT KILL, or an EVAL script
    /// for FUNCTION KILL).
    OtherKind,
}

impl Busy {
    /// Slots for `shards` shards.
    pub fn new(shards: usize) -> Self {
        Self {
            slots: (0..shards).map(|_| Slot::default()).collect(),
            busy_count: AtomicUsize::new(0),
        }
    }

    /// Shard `shard` starts a script; `function` names it when it is a function.
    pub fn start(&self, shard: usize, function: Option<RunningFunction>) {
        let Some(slot) = self.slots.get(shard) else {
            return;
        };
        let is_function = function.is_some();
        if let Ok(mut running) = slot.function.lock() {
            *running = function;
        }
        slot.kill.store(false, Ordering::Relaxed);
        slot.wrote.store(false, Ordering::Relaxed);
        slot.is_function.store(is_function, Ordering::Relaxed);
        slot.running.store(true, Ordering::Release);
    }

    /// The script of `shard` wrote.
    pub fn wrote(&self, shard: usize) {
        if let Some(slot) = self.slots.get(shard) {
            slot.wrote.store(true, Ordering::Relaxed);
        }
    }

    /// The script of `shard` ran past `busy-reply-threshold`.
    pub fn mark_busy(&self, shard: usize) {
        if let Some(slot) = self.slots.get(shard) {
            if !slot.busy.swap(true, Ordering::AcqRel) {
                self.busy_count.fetch_add(1, Ordering::AcqRel);
            }
        }
    }

    /// The script of `shard` ended.
    pub fn finish(&self, shard: usize) {
        if let Some(slot) = self.slots.get(shard) {
            slot.running.store(false, Ordering::Release);
            slot.kill.store(false, Ordering::Relaxed);
            if let Ok(mut running) = slot.function.lock() {
                *running = None;
            }
            if slot.busy.swap(false, Ordering::AcqRel) {
                self.busy_count.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// Whether the script of `shard` was told to stop.
    pub fn kill_requested(&self, shard: usize) -> bool {
        self.slots
            .get(shard)
            .is_some_and(|slot| slot.kill.load(Ordering::Relaxed))
    }

    /// Whether any script is busy (the fast check before each command).
    #[inline]
    pub fn any(&self) -> bool {
        self.busy_count.load(Ordering::Relaxed) > 0
    }

    /// Whether a script is busy: `Some(is_function)` of the first one.
    pub fn busy_kind(&self) -> Option<bool> {
        self.slots.iter().find_map(|slot| {
            slot.busy
                .load(Ordering::Acquire)
                .then(|| slot.is_function.load(Ordering::Relaxed))
        })
    }

    /// The function running on any shard, if one is (FUNCTION STATS).
    pub fn running_function(&self) -> Option<RunningFunction> {
        self.slots
            .iter()
            .filter(|slot| slot.running.load(Ordering::Acquire))
            .find_map(|slot| slot.function.lock().ok()?.clone())
    }

    /// SCRIPT KILL (`function == false`) or FUNCTION KILL: stops the first running script
    /// of that kind that has not written.
    pub fn kill(&self, function: bool) -> Kill {
        let mut found = Kill::NotBusy;
        for slot in &self.slots {
            if !slot.running.load(Ordering::Acquire) {
                continue;
            }
            if slot.is_function.load(Ordering::Relaxed) != function {
                found = Kill::OtherKind;
                continue;
            }
            if slot.wrote.load(Ordering::Relaxed) {
                found = Kill::Unkillable;
                continue;
            }
            slot.kill.store(true, Ordering::Relaxed);
            return Kill::Killed;
        }
        found
    }
}

/// The `-BUSY` error for a script (`function == false`) or a function.
pub fn busy_error(function: bool) -> &'static str {
    if function {
        "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
    } else {
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kill_and_busy_follow_the_running_script() {
        let busy = Busy::new(2);
        assert_eq!(busy.kill(false), Kill::NotBusy);
        busy.start(1, None);
        assert!(!busy.any());
        assert_eq!(busy.busy_kind(), None);
        busy.mark_busy(1);
        assert!(busy.any());
        assert_eq!(busy.busy_kind(), Some(false));
        assert_eq!(busy.kill(true), Kill::OtherKind);
        busy.wrote(1);
        assert_eq!(busy.kill(false), Kill::Unkillable);
        busy.finish(1);
        assert!(!busy.any());
        let running = RunningFunction {
            name: "f".into(),
            command: vec![Bytes::from_static(b"fcall")],
            started: Instant::now(),
        };
        busy.start(0, Some(running));
        assert_eq!(
            busy.running_function().map(|f| f.name),
            Some("f".to_owned())
        );
        assert_eq!(busy.kill(true), Kill::Killed);
        assert!(busy.kill_requested(0));
        busy.finish(0);
        assert!(!busy.kill_requested(0));
    }
}
