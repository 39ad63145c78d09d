//! CLIENT PAUSE timeout [WRITE|ALL] / CLIENT UNPAUSE (Redis 7.0 networking.c
//! `pauseClients`): set on every shard; a paused command waits (it does not fail) until the
//! deadline passes or CLIENT UNPAUSE.

use std::cell::Cell;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::cmd::table;

/// How often a paused command looks again whether the pause is over.
const PAUSE_POLL: Duration = Duration::from_millis(10);

/// What a pause holds back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PauseKind {
    /// Commands that may write (Redis `PAUSE_ACTIONS_CLIENT_WRITE_SET`).
    Write,
    /// Every command.
    All,
}

/// One shard's pause: until when, and what.
#[derive(Debug, Default)]
pub struct ClientPause {
    until: Cell<Option<(Instant, PauseKind)>>,
    /// Connections of this shard whose command a pause holds back right now.
    waiting: Cell<usize>,
}

/// Counts one held-back connection in [`ClientPause::waiting`] while alive (also when its
/// wait is dropped: the connection closed).
struct Held<'a>(&'a Cell<usize>);

impl<'a> Held<'a> {
    fn new(count: &'a Cell<usize>) -> Self {
        count.set(count.get() + 1);
        Held(count)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.set(self.0.get().saturating_sub(1));
    }
}

/// Whether a command `args` may write, as Redis's pause WRITE sees it: write commands, and
/// EXEC of a transaction holding one (`queued`).
pub fn may_write(args: &[Bytes], queued: Option<&[Vec<Bytes>]>) -> bool {
    may_write_with(args, queued, &|_| true)
}

/// As [`may_write`], with `script_writes` telling whether an EVAL, EVALSHA or FCALL (its
/// arguments) may write (Redis 7.0 `evalGetCommandFlags`: unless its script or function is
/// flagged `no-writes`; EVAL_RO and FCALL_RO never write).
pub fn may_write_with(
    args: &[Bytes],
    queued: Option<&[Vec<Bytes>]>,
    script_writes: &dyn Fn(&[Bytes]) -> bool,
) -> bool {
    let writes = |a: &[Bytes]| {
        a.first()
            .and_then(|name| table::lookup(name))
            .is_some_and(|spec| match spec.name {
                "eval" | "evalsha" | "fcall" => script_writes(a),
                _ => spec.has_flag("write"),
            })
    };
    let is_exec = args
        .first()
        .is_some_and(|n| n.eq_ignore_ascii_case(b"exec"));
    if is_exec {
        return queued.is_some_and(|q| q.iter().any(|a| writes(a)));
    }
    writes(args)
}

impl ClientPause {
    /// Pauses until `deadline`. As Redis, a longer or stronger pause already in force stays.
    pub fn pause(&self, deadline: Instant, kind: PauseKind) {
        let merged = match self.current() {
            Some((until, old)) => (
                until.max(deadline),
                if old == PauseKind::All || kind == PauseKind::All {
                    PauseKind::All
                } else {
                    PauseKind::Write
                },
            ),
            None => (deadline, kind),
        };
        self.until.set(Some(merged));
    }

    /// CLIENT UNPAUSE.
    pub fn unpause(&self) {
        self.until.set(None);
    }

    /// The pause in force, if any.
    pub fn current(&self) -> Option<(Instant, PauseKind)> {
        match self.until.get() {
            Some((until, _)) if until <= Instant::now() => {
                self.until.set(None);
                None
            }
            other => other,
        }
    }

    /// Whether any pause is set (cheap: one read, no clock).
    pub fn is_set(&self) -> bool {
        self.until.get().is_some()
    }

    /// Connections of this shard held back by the pause now: Redis counts them in INFO
    /// `blocked_clients` (its `BLOCKED_POSTPONE`).
    pub fn waiting(&self) -> usize {
        self.waiting.get()
    }

    /// Waits while a pause holds back a command for which `writes` says whether it may
    /// write, or until `stop` (server shutdown) says to go on; counted in
    /// [`ClientPause::waiting`] meanwhile. Returns whether it waited.
    pub async fn wait(&self, writes: impl Fn() -> bool, stop: impl Fn() -> bool) -> bool {
        let mut held = None;
        while let Some((until, kind)) = self.current() {
            if (kind == PauseKind::Write && !writes()) || stop() {
                break;
            }
            held.get_or_insert_with(|| Held::new(&self.waiting));
            let left = until.saturating_duration_since(Instant::now());
            glommio::timer::sleep(left.min(PAUSE_POLL)).await;
        }
        held.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_detection() {
        let set = vec![Bytes::from_static(b"SET"), Bytes::from_static(b"k")];
        let get = vec![Bytes::from_static(b"get"), Bytes::from_static(b"k")];
        let exec = vec![Bytes::from_static(b"EXEC")];
        assert!(may_write(&set, None));
        assert!(!may_write(&get, None));
        assert!(may_write(&exec, Some(std::slice::from_ref(&set))));
        assert!(!may_write(&exec, Some(std::slice::from_ref(&get))));
    }

    #[test]
    fn stronger_pause_stays() {
        let pause = ClientPause::default();
        let far = Instant::now() + Duration::from_secs(60);
        pause.pause(far, PauseKind::All);
        pause.pause(Instant::now() + Duration::from_secs(1), PauseKind::Write);
        assert_eq!(pause.current(), Some((far, PauseKind::All)));
        pause.unpause();
        assert_eq!(pause.current(), None);
    }
}
