//! Per-shard command and error statistics for `INFO commandstats` and `INFO errorstats`
//! (Redis 7.0 server.c `call` / `afterErrorReply`): calls, µs spent, rejected and failed
//! calls per command, and error replies per error code. Counted by the shard serving the
//! connection; INFO adds up every shard's figures.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use crate::cmd::table::{self, CommandSpec};

/// Redis's `ERRORSTATS_LIMIT`: distinct error codes tracked before new ones are dropped.
pub const ERROR_CODES_LIMIT: usize = 128;

/// One command's counters (`cmdstat_<name>:calls=…,usec=…,rejected_calls=…,failed_calls=…`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CallStats {
    /// Executed calls (rejected ones excluded, as Redis).
    pub calls: u64,
    /// Time spent executing, in µs, on the serving shard (a hop's wait excluded).
    pub usec: u64,
    /// Refused before execution: wrong arity, `NOAUTH`, `MISCONF`, `OOM` (also EXEC's).
    pub rejected_calls: u64,
    /// Executed and answered with an error.
    pub failed_calls: u64,
}

/// A shard's command and error statistics. Indexed by the command's position in the table,
/// so counting a call is two array updates.
#[derive(Debug, Default)]
pub struct CommandStats {
    calls: RefCell<Vec<CallStats>>,
    /// Error replies per error code (the first word of the message).
    errors: RefCell<BTreeMap<String, u64>>,
    /// Every error reply (`total_error_replies`), also those past the code limit.
    error_replies: Cell<u64>,
}

/// Whether an error reply means the command was refused before it ran (Redis's
/// `rejectCommand`) rather than failed while running.
pub fn is_rejection(message: &str) -> bool {
    message.starts_with("ERR wrong number of arguments")
        // EXEC refused by `processCommand` (Redis's `execCommandAbort`), e.g. `-OOM`.
        || message.starts_with("EXECABORT Transaction discarded because of: ")
        || ["NOAUTH ", "MISCONF ", "OOM ", "NOPERM "]
            .iter()
            .any(|code| message.starts_with(code))
}

/// The error code of an error reply: its first word (Redis `afterErrorReply`).
pub fn error_code(message: &str) -> &str {
    message.split(' ').next().unwrap_or("ERR")
}

impl CommandStats {
    fn with_call(&self, spec: &'static CommandSpec, update: impl FnOnce(&mut CallStats)) {
        let Some(index) = table::index_of(spec) else {
            return;
        };
        let mut calls = self.calls.borrow_mut();
        if calls.len() <= index {
            calls.resize(table::all().len().max(index + 1), CallStats::default());
        }
        update(&mut calls[index]);
    }

    /// Counts one executed call of `spec` that took `usec` µs.
    pub fn called(&self, spec: &'static CommandSpec, usec: u64) {
        self.with_call(spec, |s| {
            s.calls += 1;
            s.usec += usec;
        });
    }

    /// Counts a call of `spec` refused before it ran.
    pub fn rejected(&self, spec: &'static CommandSpec) {
        self.with_call(spec, |s| s.rejected_calls += 1);
    }

    /// Counts a call of `spec` that ran and answered an error.
    pub fn failed(&self, spec: &'static CommandSpec) {
        self.with_call(spec, |s| s.failed_calls += 1);
    }

    /// Counts one error reply with `message` (e.g. `"WRONGTYPE Operation …"`).
    pub fn error_reply(&self, message: &str) {
        self.error_replies.set(self.error_replies.get() + 1);
        let code = error_code(message);
        let mut errors = self.errors.borrow_mut();
        if let Some(count) = errors.get_mut(code) {
            *count += 1;
        } else if errors.len() < ERROR_CODES_LIMIT {
            errors.insert(code.to_owned(), 1);
        }
    }

    /// Every error reply so far.
    pub fn error_replies(&self) -> u64 {
        self.error_replies.get()
    }

    /// `(command name, counters)` of every command called or rejected at least once.
    pub fn snapshot_calls(&self) -> Vec<(&'static str, CallStats)> {
        let calls = self.calls.borrow();
        table::all()
            .iter()
            .zip(calls.iter())
            .filter(|(_, s)| s.calls + s.rejected_calls + s.failed_calls > 0)
            .map(|(spec, s)| (spec.name, *s))
            .collect()
    }

    /// `(error code, count)` in code order.
    pub fn snapshot_errors(&self) -> Vec<(String, u64)> {
        self.errors
            .borrow()
            .iter()
            .map(|(code, n)| (code.clone(), *n))
            .collect()
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        self.calls.borrow_mut().clear();
        self.errors.borrow_mut().clear();
        self.error_replies.set(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_calls_and_errors() {
        let stats = CommandStats::default();
        let get = table::lookup(b"get").expect("get");
        stats.called(get, 3);
        stats.called(get, 4);
        stats.failed(get);
        stats.rejected(get);
        assert_eq!(
            stats.snapshot_calls(),
            vec![(
                "get",
                CallStats {
                    calls: 2,
                    usec: 7,
                    rejected_calls: 1,
                    failed_calls: 1
                }
            )]
        );
        stats.error_reply("WRONGTYPE Operation against a key");
        stats.error_reply("ERR syntax error");
        stats.error_reply("ERR x");
        assert_eq!(
            stats.snapshot_errors(),
            vec![("ERR".to_string(), 2), ("WRONGTYPE".to_string(), 1)]
        );
        assert_eq!(stats.error_replies(), 3);
        stats.reset();
        assert!(stats.snapshot_calls().is_empty());
        assert_eq!(stats.error_replies(), 0);
    }

    #[test]
    fn rejections() {
        assert!(is_rejection(
            "ERR wrong number of arguments for 'get' command"
        ));
        assert!(is_rejection("NOAUTH Authentication required."));
        assert!(!is_rejection("ERR syntax error"));
        assert_eq!(error_code("WRONGTYPE x"), "WRONGTYPE");
    }
}
