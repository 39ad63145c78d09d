//! Reply frames and their RESP2 / RESP3 wire encoding.
//!
//! One [`Frame`] value describes a reply independently of the protocol
//! version; [`Frame::encode`] lowers RESP3-only types to their RESP2 form the
//! way Redis 7 `networking.c` does (`addReplyNull`, `addReplyMapLen`,
//! `addReplySetLen`, `addReplyDouble`, `addReplyBool`, `addReplyVerbatim`).

use bytes::{BufMut, Bytes, BytesMut};

use super::double::format_double;

/// Protocol version negotiated by the connection (`HELLO 2` / `HELLO 3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// RESP2, the default for a new connection.
    #[default]
    Resp2,
    /// RESP3, selected with `HELLO 3`.
    Resp3,
}

/// One reply value. RESP3-only variants are downgraded by [`Frame::encode`]
/// when the connection speaks RESP2.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// `+text\r\n`. CR and LF in the text are encoded as spaces (trailing ones dropped).
    Simple(String),
    /// `-text\r\n`; the text includes the error code prefix, e.g.
    /// `"ERR syntax error"` or `"WRONGTYPE Operation against ..."`. CR and LF in the text
    /// are encoded as spaces (trailing ones dropped), as Redis 7 `addReplyErrorFormat` does.
    Error(String),
    /// `:n\r\n`.
    Integer(i64),
    /// `$len\r\n<bytes>\r\n`.
    Bulk(Bytes),
    /// Null reply: RESP2 `$-1\r\n`, RESP3 `_\r\n`.
    Null,
    /// Null array: RESP2 `*-1\r\n`, RESP3 `_\r\n`.
    NullArray,
    /// `*n\r\n` followed by the elements.
    Array(Vec<Frame>),
    /// RESP3 `%n\r\n` + key/value pairs; RESP2 a flat array of `2n` elements.
    Map(Vec<(Frame, Frame)>),
    /// Pairs as Redis 7 replies them for HRANDFIELD ... WITHVALUES: RESP3 `*n\r\n` of
    /// two-element arrays `*2\r\n<a><b>`; RESP2 a flat array of `2n` elements.
    Pairs(Vec<(Frame, Frame)>),
    /// RESP3 `~n\r\n` + elements; RESP2 an array.
    Set(Vec<Frame>),
    /// RESP3 `,<double>\r\n`; RESP2 the same text as a bulk string.
    Double(f64),
    /// RESP3 `#t\r\n` / `#f\r\n`; RESP2 `:1\r\n` / `:0\r\n`.
    Boolean(bool),
    /// RESP3 `=len\r\nfmt:text\r\n` (`format` is e.g. `*b"txt"`); RESP2 a bulk
    /// string of `text` alone.
    Verbatim {
        /// Three-byte format tag, `txt` or `mkd`.
        format: [u8; 3],
        /// Payload without the format prefix.
        text: Bytes,
    },
    /// RESP3 out-of-band push `>n\r\n`; RESP2 an array (as Redis does for
    /// pub/sub messages).
    Push(Vec<Frame>),
    /// RESP3 big number `(digits\r\n`; RESP2 a bulk string of the digits (Redis
    /// `addReplyBigNum`). Only DEBUG PROTOCOL bignum replies one.
    BigNumber(String),
    /// RESP3 attribute `|n\r\n` + pairs, then `reply`; RESP2 `reply` alone (Redis
    /// `addReplyAttributeLen`). Only DEBUG PROTOCOL attrib replies one.
    Attribute {
        /// The attribute's key/value pairs.
        attributes: Vec<(Frame, Frame)>,
        /// The reply they annotate.
        reply: Box<Frame>,
    },
}

impl Frame {
    /// `+OK`.
    pub fn ok() -> Frame {
        Frame::Simple("OK".to_string())
    }

    /// Error reply from the full text including its code, e.g.
    /// `Frame::error("ERR syntax error")`.
    pub fn error(msg: impl Into<String>) -> Frame {
        Frame::Error(msg.into())
    }

    /// Bulk string copied from a byte slice.
    pub fn bulk(data: &[u8]) -> Frame {
        Frame::Bulk(Bytes::copy_from_slice(data))
    }

    /// Bulk string from static bytes (no copy).
    pub fn bulk_static(data: &'static [u8]) -> Frame {
        Frame::Bulk(Bytes::from_static(data))
    }

    /// Array of bulk strings.
    pub fn bulk_array<I: IntoIterator<Item = Bytes>>(items: I) -> Frame {
        Frame::Array(items.into_iter().map(Frame::Bulk).collect())
    }

    /// Whether this frame is an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, Frame::Error(_))
    }

    /// Appends the wire encoding of `self` for protocol `proto` to `out`.
    pub fn encode(&self, proto: Protocol, out: &mut BytesMut) {
        let resp3 = proto == Protocol::Resp3;
        match self {
            Frame::Simple(s) => text_line(out, b'+', s.as_bytes()),
            Frame::Error(s) => text_line(out, b'-', s.as_bytes()),
            Frame::Integer(n) => header(out, b':', *n),
            Frame::Bulk(b) => bulk(out, b),
            Frame::Null if resp3 => out.put_slice(b"_\r\n"),
            Frame::Null => out.put_slice(b"$-1\r\n"),
            Frame::NullArray if resp3 => out.put_slice(b"_\r\n"),
            Frame::NullArray => out.put_slice(b"*-1\r\n"),
            Frame::Array(items) => aggregate(out, b'*', items, proto),
            Frame::Set(items) => aggregate(out, if resp3 { b'~' } else { b'*' }, items, proto),
            Frame::Push(items) => aggregate(out, if resp3 { b'>' } else { b'*' }, items, proto),
            Frame::Map(pairs) => {
                if resp3 {
                    header(out, b'%', pairs.len() as i64);
                } else {
                    header(out, b'*', 2 * pairs.len() as i64);
                }
                for (k, v) in pairs {
                    k.encode(proto, out);
                    v.encode(proto, out);
                }
            }
            Frame::Pairs(pairs) => {
                header(out, b'*', pairs.len() as i64 * if resp3 { 1 } else { 2 });
                for (a, b) in pairs {
                    if resp3 {
                        header(out, b'*', 2);
                    }
                    a.encode(proto, out);
                    b.encode(proto, out);
                }
            }
            Frame::Double(d) => {
                let mut s = String::new();
                format_double(*d, &mut s);
                if resp3 {
                    line(out, b',', s.as_bytes());
                } else {
                    bulk(out, s.as_bytes());
                }
            }
            Frame::Boolean(b) if resp3 => out.put_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
            Frame::Boolean(b) => header(out, b':', i64::from(*b)),
            Frame::Verbatim { format, text } if resp3 => {
                header(out, b'=', text.len() as i64 + 4);
                out.put_slice(format);
                out.put_u8(b':');
                out.put_slice(text);
                out.put_slice(b"\r\n");
            }
            Frame::Verbatim { text, .. } => bulk(out, text),
            Frame::BigNumber(digits) if resp3 => line(out, b'(', digits.as_bytes()),
            Frame::BigNumber(digits) => bulk(out, digits.as_bytes()),
            Frame::Attribute { attributes, reply } => {
                if resp3 {
                    header(out, b'|', attributes.len() as i64);
                    for (k, v) in attributes {
                        k.encode(proto, out);
                        v.encode(proto, out);
                    }
                }
                reply.encode(proto, out);
            }
        }
    }

    /// Convenience: the encoding of `self` as a fresh buffer.
    pub fn to_bytes(&self, proto: Protocol) -> BytesMut {
        let mut out = BytesMut::new();
        self.encode(proto, &mut out);
        out
    }
}

fn line(out: &mut BytesMut, prefix: u8, text: &[u8]) {
    out.reserve(text.len() + 3);
    out.put_u8(prefix);
    out.put_slice(text);
    out.put_slice(b"\r\n");
}

/// A `+` / `-` line whose text may quote client input (e.g. `ERR Unsupported option <arg>`).
/// A CR or LF in it would end the reply early and pass the rest off as further replies, so,
/// as Redis 7 `addReplyErrorFormat` does, trailing ones are dropped and inner ones become
/// spaces.
fn text_line(out: &mut BytesMut, prefix: u8, text: &[u8]) {
    let is_eol = |b: &u8| *b == b'\r' || *b == b'\n';
    if !text.iter().any(is_eol) {
        return line(out, prefix, text);
    }
    let end = text.iter().rposition(|b| !is_eol(b)).map_or(0, |i| i + 1);
    out.reserve(end + 3);
    out.put_u8(prefix);
    out.extend(
        text[..end]
            .iter()
            .map(|&b| if is_eol(&b) { b' ' } else { b }),
    );
    out.put_slice(b"\r\n");
}

fn header(out: &mut BytesMut, prefix: u8, n: i64) {
    let mut buf = [0u8; 24];
    line(out, prefix, fmt_i64(n, &mut buf));
}

fn bulk(out: &mut BytesMut, data: &[u8]) {
    header(out, b'$', data.len() as i64);
    out.reserve(data.len() + 2);
    out.put_slice(data);
    out.put_slice(b"\r\n");
}

fn aggregate(out: &mut BytesMut, prefix: u8, items: &[Frame], proto: Protocol) {
    header(out, prefix, items.len() as i64);
    for item in items {
        item.encode(proto, out);
    }
}

/// Decimal text of `n` written into `buf` without allocating.
fn fmt_i64(n: i64, buf: &mut [u8; 24]) -> &[u8] {
    let mut pos = buf.len();
    let mut v = n.unsigned_abs();
    loop {
        pos -= 1;
        buf[pos] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        pos -= 1;
        buf[pos] = b'-';
    }
    &buf[pos..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(f: &Frame, p: Protocol) -> Vec<u8> {
        f.to_bytes(p).to_vec()
    }

    fn both(f: Frame, resp2: &[u8], resp3: &[u8]) {
        assert_eq!(enc(&f, Protocol::Resp2), resp2, "RESP2 {f:?}");
        assert_eq!(enc(&f, Protocol::Resp3), resp3, "RESP3 {f:?}");
    }

    #[test]
    fn scalars() {
        both(Frame::ok(), b"+OK\r\n", b"+OK\r\n");
        both(
            Frame::error("ERR syntax error"),
            b"-ERR syntax error\r\n",
            b"-ERR syntax error\r\n",
        );
        both(Frame::Integer(0), b":0\r\n", b":0\r\n");
        both(Frame::Integer(-42), b":-42\r\n", b":-42\r\n");
        both(
            Frame::Integer(i64::MIN),
            b":-9223372036854775808\r\n",
            b":-9223372036854775808\r\n",
        );
        both(
            Frame::Integer(i64::MAX),
            b":9223372036854775807\r\n",
            b":9223372036854775807\r\n",
        );
        both(Frame::bulk(b"hi"), b"$2\r\nhi\r\n", b"$2\r\nhi\r\n");
        both(Frame::bulk(b""), b"$0\r\n\r\n", b"$0\r\n\r\n");
    }

    /// Found by the `command_loop` fuzz target: `EXPIRE k 10 "a\r\n+OK"` quoted the option
    /// into its error, and the client read `+OK` as a second reply. Replies as redis-server
    /// 7.0.15.
    #[test]
    fn line_breaks_in_text_become_spaces() {
        both(
            Frame::error("ERR Unsupported option a\r\n+OK"),
            b"-ERR Unsupported option a  +OK\r\n",
            b"-ERR Unsupported option a  +OK\r\n",
        );
        both(
            Frame::error("ERR Unsupported option \nx\r"),
            b"-ERR Unsupported option  x\r\n",
            b"-ERR Unsupported option  x\r\n",
        );
        both(Frame::Simple("\r\n".into()), b"+\r\n", b"+\r\n");
    }

    #[test]
    fn nulls() {
        both(Frame::Null, b"$-1\r\n", b"_\r\n");
        both(Frame::NullArray, b"*-1\r\n", b"_\r\n");
    }

    #[test]
    fn aggregates() {
        both(
            Frame::Array(vec![Frame::bulk(b"a"), Frame::Integer(1), Frame::Null]),
            b"*3\r\n$1\r\na\r\n:1\r\n$-1\r\n",
            b"*3\r\n$1\r\na\r\n:1\r\n_\r\n",
        );
        both(Frame::Array(vec![]), b"*0\r\n", b"*0\r\n");
        both(
            Frame::Map(vec![(Frame::bulk(b"f"), Frame::bulk(b"v"))]),
            b"*2\r\n$1\r\nf\r\n$1\r\nv\r\n",
            b"%1\r\n$1\r\nf\r\n$1\r\nv\r\n",
        );
        both(Frame::Map(vec![]), b"*0\r\n", b"%0\r\n");
        both(
            Frame::Pairs(vec![(Frame::bulk(b"f"), Frame::bulk(b"v"))]),
            b"*2\r\n$1\r\nf\r\n$1\r\nv\r\n",
            b"*1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n",
        );
        both(Frame::Pairs(vec![]), b"*0\r\n", b"*0\r\n");
        both(
            Frame::Set(vec![Frame::bulk(b"m")]),
            b"*1\r\n$1\r\nm\r\n",
            b"~1\r\n$1\r\nm\r\n",
        );
        both(Frame::Set(vec![]), b"*0\r\n", b"~0\r\n");
        both(
            Frame::Push(vec![Frame::bulk(b"x")]),
            b"*1\r\n$1\r\nx\r\n",
            b">1\r\n$1\r\nx\r\n",
        );
    }

    #[test]
    fn resp3_types_downgrade() {
        both(Frame::Double(1.5), b"$3\r\n1.5\r\n", b",1.5\r\n");
        both(Frame::Double(f64::INFINITY), b"$3\r\ninf\r\n", b",inf\r\n");
        both(Frame::Boolean(true), b":1\r\n", b"#t\r\n");
        both(Frame::Boolean(false), b":0\r\n", b"#f\r\n");
        both(
            Frame::Verbatim {
                format: *b"txt",
                text: Bytes::from_static(b"hello"),
            },
            b"$5\r\nhello\r\n",
            b"=9\r\ntxt:hello\r\n",
        );
    }
}
