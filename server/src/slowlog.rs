//! The slowlog (Redis 7.0 `slowlog.c`): each shard keeps the commands that ran longer than
//! `slowlog-log-slower-than` µs on it, newest first, at most `slowlog-max-len`; SLOWLOG GET
//! merges the shards' logs by entry id (ids are process-wide, so the merge is in time order)
//! and SLOWLOG GET / LEN show at most `slowlog-max-len` entries in all, as Redis's one log.
//!
//! What is timed and where it is logged:
//! - a command whose keys all live on one shard: its execution on that owner shard (not the
//!   network, the parse or a hop between shards), as Redis measures `c->cmd->proc`; logged
//!   there;
//! - any other command (connection commands such as PING, CONFIG, DEBUG or SLOWLOG itself,
//!   commands over every shard, commands whose keys span shards): from its start on the
//!   client's shard to its reply, waits for other shards included; logged on the client's
//!   shard. EXEC is not logged (Redis's `skip_slowlog`), the commands it runs are; a blocked
//!   command is logged when it is served.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::net::SocketAddr;
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

/// What a redacted argument shows (Redis `redactClientCommandArgument`).
const REDACTED: &[u8] = b"(redacted)";

/// `args` with their secrets replaced as Redis 7.0 does before logging: every argument of
/// AUTH, the user and password after HELLO's `AUTH`, the value of CONFIG SET `requirepass` /
/// `masterauth`.
pub fn redact(args: &[Bytes]) -> Vec<Bytes> {
    let mut out = args.to_vec();
    let secret = Bytes::from_static(REDACTED);
    let Some(name) = args.first() else {
        return out;
    };
    if name.eq_ignore_ascii_case(b"auth") {
        out[1..].fill(secret);
    } else if name.eq_ignore_ascii_case(b"hello") {
        let mut i = 2;
        while i < out.len() {
            if out[i].eq_ignore_ascii_case(b"auth") {
                for j in (i + 1..out.len()).take(2) {
                    out[j] = secret.clone();
                }
                i += 3;
            } else if out[i].eq_ignore_ascii_case(b"setname") {
                i += 2;
            } else {
                i += 1;
            }
        }
    } else if name.eq_ignore_ascii_case(b"config")
        && args.get(1).is_some_and(|s| s.eq_ignore_ascii_case(b"set"))
    {
        for pair in out[2..].chunks_mut(2) {
            let sensitive = pair[0].eq_ignore_ascii_case(b"requirepass")
                || pair[0].eq_ignore_ascii_case(b"masterauth");
            if let (true, [_, value]) = (sensitive, pair) {
                *value = secret.clone();
            }
        }
    }
    out
}

/// Redis's truncation of a logged command's arguments, copied (an entry must not keep the
/// request buffer its arguments were parsed from alive).
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
            // A copy: a slice would keep the whole request buffer it points into alive.
            out.push(Bytes::copy_from_slice(arg));
        }
    }
    out
}

/// The client a logged command came from: its address and CLIENT SETNAME name. Cheap to
/// clone (an address and a shared name) so that a command sent to another shard carries it.
#[derive(Debug, Clone, Default)]
pub struct ClientTag {
    /// The client's address (`ip:port` in the entry), `None` for an internal command.
    pub addr: Option<SocketAddr>,
    /// The client's name, if it set one.
    pub name: Option<Bytes>,
}

/// How many entries SLOWLOG LEN shows for shards holding `lens` entries under
/// `slowlog-max-len` `max_len`: Redis keeps one log of at most `max_len`.
pub fn visible_len(lens: impl IntoIterator<Item = usize>, max_len: usize) -> usize {
    lens.into_iter().sum::<usize>().min(max_len)
}

/// Whether a command that ran `duration_us` µs is logged under `slowlog-log-slower-than`
/// `slower_than_us` (-1: never; 0: always).
pub fn is_slow(duration_us: u64, slower_than_us: i64) -> bool {
    slower_than_us >= 0 && duration_us >= slower_than_us as u64
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
        client: &ClientTag,
    ) {
        if !is_slow(duration_us, slower_than_us) {
            return;
        }
        let entry = Entry {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            unix_time: (crate::shard::unix_time_ms() / 1000) as i64,
            duration_us,
            args: truncate_args(&redact(args)),
            client_addr: client.addr.map(|a| a.to_string()).unwrap_or_default(),
            client_name: client
                .name
                .as_ref()
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .unwrap_or_default(),
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

    #[test]
    fn secrets_are_redacted() {
        let b = |words: &[&'static str]| -> Vec<Bytes> {
            words
                .iter()
                .map(|w| Bytes::from_static(w.as_bytes()))
                .collect()
        };
        assert_eq!(
            redact(&b(&["AUTH", "u", "p"])),
            b(&["AUTH", "(redacted)", "(redacted)"])
        );
        assert_eq!(
            redact(&b(&["hello", "3", "auth", "u", "p", "setname", "auth"])),
            b(&[
                "hello",
                "3",
                "auth",
                "(redacted)",
                "(redacted)",
                "setname",
                "auth"
            ])
        );
        assert_eq!(
            redact(&b(&["config", "set", "maxmemory", "1", "requirepass", "x"])),
            b(&[
                "config",
                "set",
                "maxmemory",
                "1",
                "requirepass",
                "(redacted)"
            ])
        );
        assert_eq!(redact(&b(&["get", "auth"])), b(&["get", "auth"]));
    }

    #[test]
    fn thresholds_and_caps() {
        assert!(is_slow(0, 0));
        assert!(!is_slow(u64::MAX, -1));
        assert!(!is_slow(99, 100));
        assert!(is_slow(100, 100));
        assert_eq!(visible_len([2, 3], 3), 3);
        assert_eq!(visible_len([1, 1], 3), 2);
        let log = Slowlog::default();
        let tag = ClientTag {
            addr: Some("127.0.0.1:5000".parse().expect("address")),
            name: Some(Bytes::from_static(b"n")),
        };
        for _ in 0..5 {
            log.record(&[Bytes::from_static(b"ping")], 1, 0, 3, &tag);
        }
        assert_eq!(log.len(), 3);
        let newest = &log.newest(1)[0];
        assert_eq!(newest.client_addr, "127.0.0.1:5000");
        assert_eq!(newest.client_name, "n");
    }
}
