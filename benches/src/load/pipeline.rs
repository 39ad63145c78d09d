//! Write-before-read pipeline: one authenticated connection writes N GETs of one value, all
//! of them, before it reads any reply (as redis-py's default `pipeline().execute()` does), then
//! reads and checks every reply. A server that stops reading while its replies are blocked
//! deadlocks here (the client's write times out); one with flow control answers all of them.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::conn::{Connector, Stage};
use super::LoadError;
use crate::resp::{self, Reply};

/// Settings of a write-before-read run.
#[derive(Debug, Clone)]
pub struct PipelineConfig {
    /// GETs written before the first reply is read.
    pub requests: usize,
    /// Size of the value every GET reads, in bytes.
    pub value_bytes: usize,
    /// Key set once to the value and then read.
    pub key: String,
}

/// Result of a write-before-read run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PipelineReport {
    /// GETs written.
    pub requests: usize,
    /// Bytes of requests written.
    pub request_bytes: usize,
    /// Replies equal to the value.
    pub replies_ok: usize,
    /// From the first request byte written to the last reply read, seconds.
    pub elapsed_s: f64,
}

/// Sets the key, then writes every GET before reading the replies.
///
/// # Errors
/// Connection, handshake or AUTH failures, an I/O error or time-out (`--io-timeout-ms`) during
/// the pipeline, and [`LoadError::Reply`] when a reply is not the value.
pub fn run(connector: &Connector, config: &PipelineConfig) -> Result<PipelineReport, LoadError> {
    let mut conn = connector.open_authenticated()?;
    let value = vec![b'v'; config.value_bytes];
    let mut set = Vec::new();
    resp::encode_command(
        &mut set,
        &[b"SET".as_slice(), config.key.as_bytes(), &value],
    );
    conn.round_trip(&set, 1, Stage::Command)?;
    let mut request = Vec::new();
    for _ in 0..config.requests {
        resp::encode_command(&mut request, &[b"GET".as_slice(), config.key.as_bytes()]);
    }
    let started = Instant::now();
    let (replies, _) = conn.round_trip_raw(&request, config.requests, Stage::Command)?;
    let elapsed_s = started.elapsed().as_secs_f64();
    let expected = Reply::Bulk(Some(value));
    let replies_ok = replies.iter().filter(|r| **r == expected).count();
    if replies_ok != config.requests {
        return Err(LoadError::Reply(format!(
            "{} of {} replies differ from the value",
            config.requests - replies_ok,
            config.requests
        )));
    }
    Ok(PipelineReport {
        requests: config.requests,
        request_bytes: request.len(),
        replies_ok,
        elapsed_s,
    })
}
