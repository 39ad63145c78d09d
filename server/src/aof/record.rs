//! Record encoding: one command as a RESP array of bulk strings, exactly as Redis 7 writes its
//! append-only file (`catAppendOnlyGenericCommand`), and a strict decoder for replay.

use std::io::Write;

use bytes::Bytes;

/// Appends `args` to `out` as `*N\r\n` followed by N `$len\r\n<bytes>\r\n` bulk strings.
pub fn encode<A: AsRef<[u8]>>(out: &mut Vec<u8>, args: &[A]) {
    // Writing into a Vec cannot fail.
    let _ = write!(out, "*{}\r\n", args.len());
    for arg in args {
        let arg = arg.as_ref();
        let _ = write!(out, "${}\r\n", arg.len());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// Why a record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The bytes end inside the record: a crash cut the last write short.
    Truncated,
    /// The bytes are not a well-formed record (the message says what was expected).
    Invalid(&'static str),
}

/// Longest accepted argument count / bulk length: guards replay against a corrupt header
/// asking for absurd allocations (Redis's loader applies `proto-max-bulk-len`, 512 MiB).
const MAX_LEN: usize = 512 << 20;

/// Decodes the record at the start of `buf`: its arguments and its length in bytes.
///
/// Errors: [`DecodeError::Truncated`] when `buf` ends before the record does,
/// [`DecodeError::Invalid`] when the bytes are not `*N\r\n` + N bulk strings.
pub fn decode(buf: &[u8]) -> Result<(Vec<Bytes>, usize), DecodeError> {
    let (count, mut pos) = header(buf, 0, b'*')?;
    if count == 0 {
        return Err(DecodeError::Invalid("an empty command"));
    }
    let mut args = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        let (len, start) = header(buf, pos, b'$')?;
        let end = start + len;
        if buf.len() < end + 2 {
            return Err(DecodeError::Truncated);
        }
        if &buf[end..end + 2] != b"\r\n" {
            return Err(DecodeError::Invalid("CRLF after a bulk string"));
        }
        args.push(Bytes::copy_from_slice(&buf[start..end]));
        pos = end + 2;
    }
    Ok((args, pos))
}

/// Parses `<kind><decimal>\r\n` at `pos`; returns the number and the position after it.
fn header(buf: &[u8], pos: usize, kind: u8) -> Result<(usize, usize), DecodeError> {
    let Some(&first) = buf.get(pos) else {
        return Err(DecodeError::Truncated);
    };
    if first != kind {
        return Err(if kind == b'*' {
            DecodeError::Invalid("'*' starting a record")
        } else {
            DecodeError::Invalid("'$' starting a bulk string")
        });
    }
    let mut value: usize = 0;
    let mut i = pos + 1;
    loop {
        let Some(&c) = buf.get(i) else {
            return Err(DecodeError::Truncated);
        };
        match c {
            b'0'..=b'9' if i - pos <= 10 => value = value * 10 + usize::from(c - b'0'),
            b'\r' if i > pos + 1 => break,
            _ => return Err(DecodeError::Invalid("a decimal length")),
        }
        i += 1;
    }
    match buf.get(i + 1) {
        None => return Err(DecodeError::Truncated),
        Some(b'\n') => {}
        Some(_) => return Err(DecodeError::Invalid("CRLF after a length")),
    }
    if value > MAX_LEN {
        return Err(DecodeError::Invalid("a length of at most 512 MiB"));
    }
    Ok((value, i + 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let mut out = Vec::new();
        encode(&mut out, &[&b"SET"[..], b"k", b"a\r\nb"]);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\na\r\nb\r\n");
        let (args, len) = decode(&out).unwrap();
        assert_eq!(len, out.len());
        assert_eq!(args, vec![&b"SET"[..], b"k", b"a\r\nb"]);
        for cut in 0..out.len() {
            assert_eq!(
                decode(&out[..cut]),
                Err(DecodeError::Truncated),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn invalid_bytes() {
        assert_eq!(
            decode(b"+OK\r\n"),
            Err(DecodeError::Invalid("'*' starting a record"))
        );
        assert_eq!(
            decode(b"*1\r\n$3\r\nSETX\r\n"),
            Err(DecodeError::Invalid("CRLF after a bulk string"))
        );
        assert_eq!(
            decode(b"*x\r\n"),
            Err(DecodeError::Invalid("a decimal length"))
        );
        assert_eq!(
            decode(b"*0\r\n"),
            Err(DecodeError::Invalid("an empty command"))
        );
    }
}
