//! What an instrumented task is doing, for the stall reporter.
//!
//! Seastar's stall reporter prints a backtrace of the stalled task. A backtrace taken after
//! the fact is useless, so instead every instrumented task labels its work as it goes:
//!
//! ```
//! use shardline_metrics::activity::{self, Activity};
//!
//! # async fn handle_command() {
//! activity::set(Activity::Command("GET"));
//! // ... run the command ...
//! # }
//! ```
//!
//! The label belongs to the task: [`crate::Instrumented`] saves it after each poll and
//! restores it before the next, so a connection that set [`Activity::Handshake`] keeps that
//! label across polls until it sets another. A poll that turns out to be a stall is reported
//! with the label current when the poll returned.

use std::cell::Cell;
use std::fmt;

use crate::context::CONTEXT;

/// What a task is doing, shown in stall reports as `", while <activity>"`.
///
/// All variants carry only `&'static str`, so the type is `Copy` and setting it never
/// allocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Activity {
    /// Nothing set yet (displayed as `unspecified work`).
    #[default]
    Unspecified,
    /// A connection's TLS handshake (displayed as `handshake`).
    Handshake,
    /// Password hashing during authentication (displayed as `auth-hash`).
    AuthHash,
    /// Executing a command; carries the command name as the server spells it, e.g. `"GET"`
    /// (displayed as `command GET`).
    Command(&'static str),
    /// Anything else, displayed verbatim (e.g. `"expiry"`, `"accept"`).
    Other(&'static str),
}

impl fmt::Display for Activity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Activity::Unspecified => f.write_str("unspecified work"),
            Activity::Handshake => f.write_str("handshake"),
            Activity::AuthHash => f.write_str("auth-hash"),
            Activity::Command(name) => write!(f, "command {name}"),
            Activity::Other(what) => f.write_str(what),
        }
    }
}

#[inline]
fn with_slot<R>(f: impl FnOnce(&Cell<Activity>) -> R) -> Option<R> {
    CONTEXT.try_with(|ctx| f(&ctx.activity)).ok()
}

/// Sets the activity of the instrumented task currently being polled on this thread.
///
/// Cheap (a thread-local `Cell` write). Outside an instrumented poll the value is simply
/// overwritten by the next instrumented poll, so calling it from uninstrumented code is
/// harmless. Does nothing while the thread is being torn down. Inlined: it runs once per
/// command.
#[inline]
pub fn set(activity: Activity) {
    with_slot(|slot| slot.set(activity));
}

/// Returns the activity last set on this thread ([`Activity::Unspecified`] if none, or while
/// the thread is being torn down).
pub fn current() -> Activity {
    with_slot(Cell::get).unwrap_or_default()
}

/// Replaces the thread's current activity, returning the previous one.
pub(crate) fn replace(activity: Activity) -> Activity {
    with_slot(|slot| slot.replace(activity)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_matches_report_wording() {
        assert_eq!(Activity::Unspecified.to_string(), "unspecified work");
        assert_eq!(Activity::Handshake.to_string(), "handshake");
        assert_eq!(Activity::AuthHash.to_string(), "auth-hash");
        assert_eq!(Activity::Command("GET").to_string(), "command GET");
        assert_eq!(Activity::Other("expiry").to_string(), "expiry");
    }

    #[test]
    fn set_and_current_round_trip() {
        set(Activity::Command("SET"));
        assert_eq!(current(), Activity::Command("SET"));
        assert_eq!(replace(Activity::Handshake), Activity::Command("SET"));
        assert_eq!(current(), Activity::Handshake);
        set(Activity::Unspecified);
    }
}
