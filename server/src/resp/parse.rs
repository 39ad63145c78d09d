//! Incremental request parser: RESP multibulk (`*N\r\n$len\r\n...`) and
//! inline commands (`PING\r\n`), following Redis 7 `networking.c`
//! (`processMultibulkBuffer`, `processInlineBuffer`) including its limits and
//! exact error texts.

use bytes::{Buf, Bytes, BytesMut};
use thiserror::Error;

use super::num::parse_i64;
use super::split::split_args;

/// Redis `PROTO_INLINE_MAX_SIZE`: 64 KiB.
pub const PROTO_INLINE_MAX_SIZE: usize = 64 * 1024;
/// Redis `proto-max-bulk-len` default: 512 MiB.
pub const PROTO_MAX_BULK_LEN: usize = 512 * 1024 * 1024;

/// Size limits applied while parsing one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLimits {
    /// Largest accepted multibulk count (`*N`).
    pub max_args: usize,
    /// Largest accepted bulk length (`$len`) in bytes.
    pub max_bulk_bytes: usize,
    /// Largest inline line, or multibulk/bulk header line, in bytes.
    pub max_inline_bytes: usize,
    /// Whether the connection is not yet authenticated: selects Redis's
    /// "unauthenticated multibulk/bulk length" errors when `max_args` /
    /// `max_bulk_bytes` are exceeded.
    pub unauthenticated: bool,
}

impl RequestLimits {
    /// Limits of an authenticated connection: 1 Mi arguments, 512 MiB bulks
    /// (`proto-max-bulk-len`), 64 KiB inline.
    pub const fn authenticated() -> Self {
        RequestLimits {
            max_args: 1024 * 1024,
            max_bulk_bytes: PROTO_MAX_BULK_LEN,
            max_inline_bytes: PROTO_INLINE_MAX_SIZE,
            unauthenticated: false,
        }
    }

    /// Limits before AUTH, as Redis 7: 10 arguments, 16384-byte bulks,
    /// 64 KiB inline.
    pub const fn unauthenticated() -> Self {
        RequestLimits {
            max_args: 10,
            max_bulk_bytes: 16384,
            max_inline_bytes: PROTO_INLINE_MAX_SIZE,
            unauthenticated: true,
        }
    }
}

impl Default for RequestLimits {
    fn default() -> Self {
        Self::authenticated()
    }
}

/// A malformed or oversized request. `Display` is Redis's exact text; the
/// connection replies `-ERR <text>` and closes.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtocolError {
    /// `*N` is not an integer, or is above `max_args` when authenticated.
    #[error("Protocol error: invalid multibulk length")]
    InvalidMultibulkLength,
    /// `$len` is not a non-negative integer, or above `max_bulk_bytes`.
    #[error("Protocol error: invalid bulk length")]
    InvalidBulkLength,
    /// A bulk header does not start with `$`; carries the byte found, CR and LF shown as a
    /// space (Redis `addReplyErrorFormat` maps them so the reply stays one line).
    #[error("Protocol error: expected '$', got '{0}'")]
    ExpectedDollar(char),
    /// `*N` above `max_args` before authentication.
    #[error("Protocol error: unauthenticated multibulk length")]
    UnauthenticatedMultibulkLength,
    /// `$len` above `max_bulk_bytes` before authentication.
    #[error("Protocol error: unauthenticated bulk length")]
    UnauthenticatedBulkLength,
    /// No newline within `max_inline_bytes` of an inline request.
    #[error("Protocol error: too big inline request")]
    TooBigInline,
    /// No CR within `max_inline_bytes` of a `*N` header.
    #[error("Protocol error: too big mbulk count string")]
    TooBigMultibulkCount,
    /// No CR within `max_inline_bytes` of a `$len` header.
    #[error("Protocol error: too big bulk count string")]
    TooBigBulkCount,
    /// Inline request with unbalanced quotes.
    #[error("Protocol error: unbalanced quotes in request")]
    UnbalancedQuotes,
}

/// Stateful parser that remembers how far it got inside a partial request, so
/// that feeding a request in many reads costs O(total bytes) overall.
///
/// Contract: between calls the caller may only append to `buf` (never consume
/// from it); the parser consumes exactly the bytes of each complete request it
/// returns (and of skipped empty requests).
#[derive(Debug, Default)]
pub struct RequestParser {
    /// Bytes of `buf` already examined.
    pos: usize,
    /// Multibulk state; `None` while no `*N` header has been parsed.
    multibulk: Option<Multibulk>,
    /// Where each argument parsed so far lies in the buffer (start, end), kept from request to
    /// request so a request costs no allocation for it.
    ranges: Vec<(usize, usize)>,
}

/// Capacity of [`RequestParser::ranges`] kept after a request (a request with more arguments
/// gives its extra memory back).
const KEPT_RANGES: usize = 64;

#[derive(Debug)]
struct Multibulk {
    remaining: usize,
    bulk_len: Option<usize>,
}

impl RequestParser {
    /// A parser at the start of a request.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses the next request from the front of `buf`: `Ok(Some(args))`
    /// consumes one request (args\[0\] = command name); `Ok(None)` needs more
    /// bytes; `Err` is fatal for the connection.
    pub fn parse(
        &mut self,
        buf: &mut BytesMut,
        limits: &RequestLimits,
    ) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        let mut args = Vec::new();
        Ok(self.parse_into(buf, limits, &mut args)?.then_some(args))
    }

    /// As [`RequestParser::parse`], appending the arguments of a complete request to `args`
    /// (`Ok(true)`; `Ok(false)`: more bytes are needed and `args` is unchanged), so a caller
    /// can reuse one vector for all its requests.
    pub fn parse_into(
        &mut self,
        buf: &mut BytesMut,
        limits: &RequestLimits,
        args: &mut Vec<Bytes>,
    ) -> Result<bool, ProtocolError> {
        loop {
            if self.multibulk.is_none() {
                if self.pos == 0 && buf.is_empty() {
                    return Ok(false);
                }
                // A new request that is not a multibulk, or an inline line being resumed.
                if self.pos > 0 || buf[0] != b'*' {
                    match self.inline(buf, limits)? {
                        Some(parts) if parts.is_empty() => continue,
                        Some(parts) => {
                            args.extend(parts);
                            return Ok(true);
                        }
                        None => return Ok(false),
                    }
                }
            }
            match self.multibulk(buf, limits, args)? {
                Step::Done => return Ok(true),
                Step::Skip => continue,
                Step::Wait => return Ok(false),
            }
        }
    }

    fn reset(&mut self) {
        self.pos = 0;
        self.multibulk = None;
        self.ranges.clear();
        self.ranges.shrink_to(KEPT_RANGES);
    }

    fn inline(
        &mut self,
        buf: &mut BytesMut,
        limits: &RequestLimits,
    ) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        let Some(nl) = find(buf, self.pos, b'\n') else {
            if buf.len() > limits.max_inline_bytes {
                return Err(ProtocolError::TooBigInline);
            }
            self.pos = buf.len();
            return Ok(None);
        };
        let end = if nl > 0 && buf[nl - 1] == b'\r' {
            nl - 1
        } else {
            nl
        };
        let parts = split_args(&buf[..end]).ok_or(ProtocolError::UnbalancedQuotes)?;
        buf.advance(nl + 1);
        self.reset();
        Ok(Some(parts.into_iter().map(Bytes::from).collect()))
    }

    fn multibulk(
        &mut self,
        buf: &mut BytesMut,
        limits: &RequestLimits,
        args: &mut Vec<Bytes>,
    ) -> Result<Step, ProtocolError> {
        if self.multibulk.is_none() {
            let Some((n, next)) = header_line(buf, 0, limits, ProtocolError::TooBigMultibulkCount)?
            else {
                return Ok(Step::Wait);
            };
            let n = match n {
                Some(n) if n <= i64::from(i32::MAX) => n,
                _ => return Err(ProtocolError::InvalidMultibulkLength),
            };
            if n > 0 && n as u64 > limits.max_args as u64 {
                return Err(if limits.unauthenticated {
                    ProtocolError::UnauthenticatedMultibulkLength
                } else {
                    ProtocolError::InvalidMultibulkLength
                });
            }
            if n <= 0 {
                buf.advance(next);
                self.reset();
                return Ok(Step::Skip);
            }
            let n = n as usize;
            self.pos = next;
            self.multibulk = Some(Multibulk {
                remaining: n,
                bulk_len: None,
            });
            self.ranges.reserve(n.min(1024));
        }
        let Some(mb) = self.multibulk.as_mut() else {
            return Ok(Step::Wait);
        };
        while mb.remaining > 0 {
            let len = match mb.bulk_len {
                Some(len) => len,
                None => {
                    if self.pos >= buf.len() {
                        return Ok(Step::Wait);
                    }
                    let Some((n, next)) =
                        header_line(buf, self.pos, limits, ProtocolError::TooBigBulkCount)?
                    else {
                        return Ok(Step::Wait);
                    };
                    if buf[self.pos] != b'$' {
                        return Err(ProtocolError::ExpectedDollar(reply_char(buf[self.pos])));
                    }
                    let len = match n {
                        Some(n) if n >= 0 => n as u64,
                        _ => return Err(ProtocolError::InvalidBulkLength),
                    };
                    if len > limits.max_bulk_bytes as u64 {
                        return Err(if limits.unauthenticated {
                            ProtocolError::UnauthenticatedBulkLength
                        } else {
                            ProtocolError::InvalidBulkLength
                        });
                    }
                    self.pos = next;
                    mb.bulk_len = Some(len as usize);
                    len as usize
                }
            };
            let need = self.pos + len + 2;
            if buf.len() < need {
                buf.reserve(need - buf.len());
                return Ok(Step::Wait);
            }
            // Like Redis, the two bytes after the payload are skipped unchecked.
            self.ranges.push((self.pos, self.pos + len));
            self.pos = need;
            mb.bulk_len = None;
            mb.remaining -= 1;
        }
        let chunk = buf.split_to(self.pos).freeze();
        args.extend(self.ranges.iter().map(|&(s, e)| chunk.slice(s..e)));
        self.reset();
        Ok(Step::Done)
    }
}

enum Step {
    Done,
    Skip,
    Wait,
}

/// Reads a `*N` / `$N` header line starting at `start` (the type byte).
/// Mirrors Redis: the line ends at the first CR, which must be followed by one
/// more byte (assumed LF). Returns the parsed number (`None` = not an
/// integer) and the offset after CRLF, or `Ok(None)` when incomplete.
#[allow(clippy::type_complexity)]
fn header_line(
    buf: &[u8],
    start: usize,
    limits: &RequestLimits,
    too_big: ProtocolError,
) -> Result<Option<(Option<i64>, usize)>, ProtocolError> {
    match find(buf, start, b'\r') {
        None => {
            if buf.len() - start > limits.max_inline_bytes {
                return Err(too_big);
            }
            Ok(None)
        }
        Some(cr) if cr + 2 > buf.len() => Ok(None),
        // A line that is only CRLF has no type byte and no number.
        Some(cr) => Ok(Some((buf.get(start + 1..cr).and_then(parse_i64), cr + 2))),
    }
}

/// The offending byte as it appears in an error reply: CR and LF become spaces, as Redis's
/// `addReplyErrorFormat` maps them, so the reply stays one line.
fn reply_char(byte: u8) -> char {
    match byte {
        b'\r' | b'\n' => ' ',
        other => char::from(other),
    }
}

fn find(buf: &[u8], from: usize, byte: u8) -> Option<usize> {
    buf.get(from..)?
        .iter()
        .position(|&c| c == byte)
        .map(|i| i + from)
}

/// Stateless form of [`RequestParser::parse`]: parses one request from the
/// front of `buf`, consuming it only when complete (`Ok(Some)`), leaving `buf`
/// untouched on `Ok(None)` (except skipped empty requests / empty inline
/// lines, which are consumed). Each call re-reads the header lines of a
/// partial request but skips bulk payloads by length, so a large bulk arriving
/// in many reads is not re-scanned; use [`RequestParser`] to make even
/// requests with very many arguments O(total bytes).
pub fn parse_request(
    buf: &mut BytesMut,
    limits: &RequestLimits,
) -> Result<Option<Vec<Bytes>>, ProtocolError> {
    RequestParser::new().parse(buf, limits)
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
