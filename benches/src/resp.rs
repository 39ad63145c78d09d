//! Minimal RESP2 framing for the load client: encoding a command, reading one reply.
//!
//! Only what a benchmark client needs: commands are arrays of bulk strings, replies are the
//! five RESP2 types. Sizes and nesting are capped so a misbehaving server cannot make the client
//! allocate without bound.

use std::io::{self, BufRead};

/// Largest bulk string or array the client accepts in a reply (elements or bytes).
pub const MAX_REPLY_LEN: usize = 64 * 1024 * 1024;

/// Deepest array nesting the client accepts in a reply.
pub const MAX_REPLY_DEPTH: usize = 8;

/// One RESP2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`
    Simple(String),
    /// `-ERR …`
    Error(String),
    /// `:42`
    Integer(i64),
    /// `$N…` (`None` for the null bulk `$-1`).
    Bulk(Option<Vec<u8>>),
    /// `*N…` (`None` for the null array `*-1`).
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// The error text when this is an error reply.
    pub fn as_error(&self) -> Option<&str> {
        match self {
            Reply::Error(text) => Some(text),
            _ => None,
        }
    }
}

/// Appends `args` to `out` as one RESP array of bulk strings (the form every client sends).
pub fn encode_command<A: AsRef<[u8]>>(out: &mut Vec<u8>, args: &[A]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        let arg = arg.as_ref();
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// Reads one complete reply from `reader`.
///
/// # Errors
/// I/O errors of the reader (including time-outs and `UnexpectedEof` when the server closes
/// the connection), and `InvalidData` for malformed or oversized replies.
pub fn read_reply<R: BufRead>(reader: &mut R) -> io::Result<Reply> {
    read_at_depth(reader, 0)
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

fn read_line<R: BufRead>(reader: &mut R) -> io::Result<String> {
    let mut line = Vec::new();
    let n = io::Read::take(&mut *reader, MAX_REPLY_LEN as u64).read_until(b'\n', &mut line)?;
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed by the server",
        ));
    }
    if !line.ends_with(b"\r\n") {
        return Err(invalid("reply line does not end with CRLF"));
    }
    line.truncate(line.len() - 2);
    String::from_utf8(line).map_err(|_| invalid("reply line is not UTF-8"))
}

fn parse_len(text: &str) -> io::Result<Option<usize>> {
    let n: i64 = text
        .parse()
        .map_err(|_| invalid(format!("bad length {text:?}")))?;
    if n < 0 {
        return Ok(None);
    }
    let n = usize::try_from(n).map_err(|_| invalid("length out of range"))?;
    if n > MAX_REPLY_LEN {
        return Err(invalid(format!("reply length {n} exceeds {MAX_REPLY_LEN}")));
    }
    Ok(Some(n))
}

fn read_at_depth<R: BufRead>(reader: &mut R, depth: usize) -> io::Result<Reply> {
    if depth > MAX_REPLY_DEPTH {
        return Err(invalid("reply nested too deeply"));
    }
    let line = read_line(reader)?;
    let (kind, rest) = line.split_at(line.len().min(1));
    match kind {
        "+" => Ok(Reply::Simple(rest.to_owned())),
        "-" => Ok(Reply::Error(rest.to_owned())),
        ":" => rest
            .parse()
            .map(Reply::Integer)
            .map_err(|_| invalid(format!("bad integer {rest:?}"))),
        "$" => match parse_len(rest)? {
            None => Ok(Reply::Bulk(None)),
            Some(n) => {
                let mut data = vec![0; n + 2];
                reader.read_exact(&mut data)?;
                if !data.ends_with(b"\r\n") {
                    return Err(invalid("bulk string does not end with CRLF"));
                }
                data.truncate(n);
                Ok(Reply::Bulk(Some(data)))
            }
        },
        "*" => match parse_len(rest)? {
            None => Ok(Reply::Array(None)),
            Some(n) => (0..n)
                .map(|_| read_at_depth(reader, depth + 1))
                .collect::<io::Result<Vec<_>>>()
                .map(|items| Reply::Array(Some(items))),
        },
        _ => Err(invalid(format!("unexpected reply type in {line:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_arrays_of_bulk_strings() {
        let mut out = Vec::new();
        encode_command(&mut out, &["AUTH", "u", "p"]);
        assert_eq!(out, b"*3\r\n$4\r\nAUTH\r\n$1\r\nu\r\n$1\r\np\r\n");
    }

    #[test]
    fn reads_every_reply_type() {
        let input: &[u8] =
            b"+OK\r\n-WRONGPASS x\r\n:7\r\n$3\r\nabc\r\n$-1\r\n*2\r\n:1\r\n$0\r\n\r\n";
        let mut reader = io::BufReader::new(input);
        assert_eq!(
            read_reply(&mut reader).ok(),
            Some(Reply::Simple("OK".into()))
        );
        assert_eq!(
            read_reply(&mut reader)
                .ok()
                .as_ref()
                .and_then(Reply::as_error),
            Some("WRONGPASS x")
        );
        assert_eq!(read_reply(&mut reader).ok(), Some(Reply::Integer(7)));
        assert_eq!(
            read_reply(&mut reader).ok(),
            Some(Reply::Bulk(Some(b"abc".to_vec())))
        );
        assert_eq!(read_reply(&mut reader).ok(), Some(Reply::Bulk(None)));
        assert_eq!(
            read_reply(&mut reader).ok(),
            Some(Reply::Array(Some(vec![
                Reply::Integer(1),
                Reply::Bulk(Some(Vec::new()))
            ])))
        );
        let eof = read_reply(&mut reader).err().map(|e| e.kind());
        assert_eq!(eof, Some(io::ErrorKind::UnexpectedEof));
    }

    #[test]
    fn refuses_malformed_and_oversized_replies() {
        for input in [&b"?x\r\n"[..], b"$99999999999\r\n", b"+OK\n", b":x\r\n"] {
            let mut reader = io::BufReader::new(input);
            assert!(read_reply(&mut reader).is_err(), "{input:?}");
        }
    }
}
