//! Decoded RESP2 replies for tests that look inside arrays (scan pages, random picks).

use super::RawClient;

/// A decoded reply: a bulk string, an aggregate, or any other line as sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Bulk(Vec<u8>),
    Many(Vec<Reply>),
    Line(Vec<u8>),
}

/// Decodes one reply from the front of `buf`: the reply and the bytes after it.
pub fn parse(buf: &[u8]) -> (Reply, &[u8]) {
    let end = buf.windows(2).position(|w| w == b"\r\n").expect("CRLF");
    let (head, rest) = (&buf[..end], &buf[end + 2..]);
    let n = || -> usize {
        std::str::from_utf8(&head[1..])
            .ok()
            .and_then(|s| s.parse().ok())
            .expect("length")
    };
    match head[0] {
        b'$' => {
            let len = n();
            (Reply::Bulk(rest[..len].to_vec()), &rest[len + 2..])
        }
        b'*' => {
            let mut rest = rest;
            let mut items = Vec::new();
            for _ in 0..n() {
                let (item, tail) = parse(rest);
                items.push(item);
                rest = tail;
            }
            (Reply::Many(items), rest)
        }
        _ => (Reply::Line(head.to_vec()), rest),
    }
}

/// Sends `args` and decodes the reply (which must be the only bytes received).
pub fn request(c: &mut RawClient, args: &[&str]) -> Reply {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    let raw = c.request(&args);
    let (reply, rest) = parse(&raw);
    assert!(rest.is_empty(), "trailing bytes in {raw:?}");
    reply
}

/// The text of a bulk string reply (lossy UTF-8); panics on any other reply.
pub fn text(reply: &Reply) -> String {
    match reply {
        Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("not a bulk string: {other:?}"),
    }
}

/// The texts of an array of bulk strings; panics on any other reply.
pub fn strings(reply: Reply) -> Vec<String> {
    match reply {
        Reply::Many(items) => items.iter().map(text).collect(),
        other => panic!("not an array: {other:?}"),
    }
}

/// The RESP2 bulk string `value` as sent: `$len\r\nvalue\r\n`.
pub fn bulk(value: &str) -> String {
    format!("${}\r\n{value}\r\n", value.len())
}

/// The RESP2 reply of a map (CONFIG GET's) holding `pairs`: a flat array, name then value.
pub fn flat_map(pairs: &[(&str, &str)]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", pairs.len() * 2);
    for (name, value) in pairs {
        out.push_str(&bulk(name));
        out.push_str(&bulk(value));
    }
    out.into_bytes()
}
