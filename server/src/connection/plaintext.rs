//! A plaintext client on the TLS port.
//!
//! Every TLS connection opens with a handshake record, content type 22 (RFC 8446 §5.1); a
//! Redis client speaking plaintext starts with `*` (a RESP array) or an inline command's
//! first letter. Cut off without a word, such a client only reports "Server closed the
//! connection". Instead it gets one RESP error naming the cause, the shard counts it in
//! `shardline_tls_handshakes_failed_total{reason="plaintext"}`, and logs at most one line per
//! [`LOG_INTERVAL`] (with the number of others since), so a misconfigured fleet cannot flood
//! the log.

use std::cell::Cell;
use std::net::{Shutdown, SocketAddr};
use std::time::{Duration, Instant};

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;
use shardline_metrics::labels::tls_failure;
use tracing::warn;

use super::CloseReason;
use crate::shard::Shard;

/// The content type of a TLS handshake record: the first byte a TLS client sends.
pub const TLS_HANDSHAKE_RECORD: u8 = 22;

/// What a plaintext client reads before the connection closes (a RESP simple error, so
/// redis-cli and client libraries print it).
pub const REPLY: &[u8] = b"-ERR this port accepts TLS connections only: connect with TLS \
(redis-cli --tls --cacert <CA certificate>)\r\n";

/// At most one log line per shard per this interval.
pub const LOG_INTERVAL: Duration = Duration::from_secs(10);

/// How long the refused connection's further bytes are read and dropped after the reply, so
/// that closing does not reset the connection (and discard the reply) under them.
const DRAIN_LIMIT: Duration = Duration::from_secs(1);

/// The most bytes read and dropped after the reply.
const DRAIN_MAX_BYTES: usize = 64 * 1024;

/// One shard's rate limit on the "plaintext client" log line.
#[derive(Debug, Default)]
pub struct PlaintextLog {
    /// When the next line may be written; `None`: at once.
    next_line: Cell<Option<Instant>>,
    /// Plaintext clients refused since the last line, not logged.
    unlogged: Cell<u64>,
}

impl PlaintextLog {
    /// Counts one refused client at `now`; returns how many were refused without a line
    /// since the last one, when a line is due now, or `None` when it is not.
    pub fn due(&self, now: Instant) -> Option<u64> {
        if self.next_line.get().is_some_and(|next| now < next) {
            self.unlogged.set(self.unlogged.get() + 1);
            return None;
        }
        self.next_line.set(Some(now + LOG_INTERVAL));
        Some(self.unlogged.replace(0))
    }
}

/// Answers a plaintext client with [`REPLY`], counts and (rate-limited) logs it, and closes
/// its connection; returns the reason the connection closed.
pub async fn refuse(shard: &Shard, mut tcp: TcpStream, peer: Option<SocketAddr>) -> CloseReason {
    shard.metrics.tls_handshake_failed(tls_failure::PLAINTEXT);
    if let Some(others) = shard.plaintext_log.due(Instant::now()) {
        let peer = peer.map_or_else(|| "unknown".to_owned(), |peer| peer.to_string());
        let others = match others {
            0 => String::new(),
            n => format!("; {n} more since the last such line"),
        };
        warn!(
            "plaintext client {peer} on the TLS port, refused with an error reply (clients must \
             connect with TLS, e.g. redis-cli --tls --cacert <CA certificate>{others})"
        );
    }
    if tcp.write_all(REPLY).await.is_err() {
        return CloseReason::IoError;
    }
    let _ = tcp.shutdown(Shutdown::Write).await;
    let _ = glommio::timer::timeout(DRAIN_LIMIT, async {
        let mut sink = [0u8; 4096];
        let mut drained = 0;
        while drained < DRAIN_MAX_BYTES {
            match tcp.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
        Ok(())
    })
    .await;
    CloseReason::HandshakeFailed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_interval_with_the_count_of_the_others() {
        let log = PlaintextLog::default();
        let start = Instant::now();
        assert_eq!(log.due(start), Some(0));
        assert_eq!(log.due(start + Duration::from_secs(1)), None);
        assert_eq!(log.due(start + Duration::from_secs(9)), None);
        assert_eq!(log.due(start + LOG_INTERVAL), Some(2));
        assert_eq!(
            log.due(start + LOG_INTERVAL + Duration::from_millis(1)),
            None
        );
        assert_eq!(log.due(start + LOG_INTERVAL * 2), Some(1));
    }
}
