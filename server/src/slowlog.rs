//! The slowlog (Redis 7.0 `slowlog.c`): each shard keeps the commands that ran longer than
//! `slowlog-log-slower-than` µs on it, newest first, at most `slowlog-max-len`; SLOWLOG GET
//! merges the shards' logs by entry id (ids are process-wide, so the merge is in time order).
//!
//! The time measured is the command's execution on its owner shard (not the network, the
//! parse or a hop between shards), as Redis measures `c->cmd->proc`.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use crate::resp::Frame;

/// Arguments kept per entry (Redis `SLOWLOG_ENTRY_MAX_ARGC`); the last slot then says how
/// many more there were.
pub const MAX_ARGS: usize = 32;
/// Bytes kept per argument (Redis `SLOWLOG_ENTRY_MAX_STRING`); the rest is summarised.
pub const MAX_ARG_BYTES: usize = 128;

/// Source of entry ids, unique over all shards (Redis `slowlog_entry_id`).
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// One logged command.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Process-wide id, increasing with time.
    pub id: u64,
    /// When the command ran, Unix seconds.
    pub unix_time: i64,
    /// Execution time, µs.
    pub duration_us: u64,
    /// The arguments, truncated as Redis does ([`MAX_ARGS`], [`MAX_ARG_BYTES`]).
    pub args: Vec<Bytes>,
    /// The client's `ip:port` (empty when the command came from another shard's client).
    pub client_addr: String,
    /// The client's name (CLIENT SETNAME), empty if none.
    pub client_name: String,
}

impl Entry {
    /// The entry as SLOWLOG GET shows it: `[id, time, µs, [args…], addr, name]`.
    pub fn to_frame(&self) -> Frame {
        Frame::Array(vec![
            Frame::Integer(self.id as i64),
            Frame::Integer(self.unix_time),
            Frame::Integer(self.duration_us as i64),
            Frame::Array(self.args.iter().cloned().map(Frame::Bulk).collect()),
            Frame::Bulk(Bytes::from(self.client_addr.clone())),
            Frame::Bulk(Bytes::from(self.client_name.clone())),
        ])
    }
}

/// Redis's truncation of a logged command's arguments.
pub fn truncate_args(args: &[Bytes]) -> Vec<Bytes> {
    let kept = args.len().min(MAX_ARGS);
    let mut out = Vec::with_capacity(kept);
    for (i, arg) in args.iter().take(kept).enumerate() {
        if kept == MAX_ARGS && i == MAX_ARGS - 1 && args.len() > MAX_ARGS {
            out.push(Bytes::from(format!(
                "... ({} more arguments)",
                args.len() - MAX_ARGS + 1
            )));
        } else if arg.len() > MAX_ARG_BYTES {
            let mut text = arg[..MAX_ARG_BYTES].to_vec();
            text.extend_from_slice(
                format!("... ({} more bytes)", arg.len() - MAX_ARG_BYTES).as_bytes(),
            );
            out.push(Bytes::from(text));
        } else {
            out.push(arg.clone());
        }
    }
    out
}

/// One shard's slowlog, newest first.
#[derive(Debug, Default)]
pub struct Slowlog {
    entries: RefCell<VecDeque<Entry>>,
}

impl Slowlog {
    /// Logs `args` as having run `duration_us` µs when it is over `slower_than_us` (≥ 0),
    /// keeping at most `max_len` entries.
    pub fn record(
        &self,
        args: &[Bytes],
        duration_us: u64,
        slower_than_us: i64,
        max_len: usize,
        client: (&str, &str),
    ) {
        if slower_than_us < 0 || duration_us < slower_than_us as u64 {
            return;
        }
        let entry = Entry {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            unix_time: (crate::shard::unix_time_ms() / 1000) as i64,
            duration_us,
            args: truncate_args(args),
            client_addr: client.0.to_string(),
            client_name: client.1.to_string(),
        };
        let mut entries = self.entries.borrow_mut();
        entries.push_front(entry);
        entries.truncate(max_len);
    }

    /// Drops entries past `max_len` (after CONFIG SET slowlog-max-len).
    pub fn trim(&self, max_len: usize) {
        self.entries.borrow_mut().truncate(max_len);
    }

    /// Up to `count` newest entries.
    pub fn newest(&self, count: usize) -> Vec<Entry> {
        self.entries.borrow().iter().take(count).cloned().collect()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.borrow().len()
    }

    /// Whether the log is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.borrow().is_empty()
    }

    /// Drops every entry (SLOWLOG RESET).
    pub fn reset(&self) {
        self.entries.borrow_mut().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_follows_redis() {
        let many: Vec<Bytes> = (0..40).map(|i| Bytes::from(i.to_string())).collect();
        let out = truncate_args(&many);
        assert_eq!(out.len(), 32);
        assert_eq!(out[30], Bytes::from("30"));
        assert_eq!(out[31], Bytes::from("... (9 more arguments)"));
        let long = Bytes::from(vec![b'x'; 130]);
        let out = truncate_args(&[Bytes::from("set"), long]);
        assert_eq!(out[1].len(), 128 + "... (2 more bytes)".len());
        assert!(out[1].ends_with(b"... (2 more bytes)"));
    }
}
