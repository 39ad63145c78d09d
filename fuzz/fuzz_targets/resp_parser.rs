//! RESP request parser (`shardline::resp::RequestParser`).
//!
//! Input: byte 0 picks the limits, byte 1 seeds the read sizes, the rest is a client's byte
//! stream. The stream is parsed three ways — whole, in reads of 1–16 bytes with one stateful
//! parser, and in the same reads with the stateless `parse_request` — and the runs must agree.
//! Every request must also survive a canonical re-encoding, respect the limits, and (for
//! multibulk requests) consume exactly its own bytes; error texts must be one line.

#![no_main]

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use shardline::resp::{parse_request, ProtocolError, RequestLimits, RequestParser};

/// Small limits so the fuzzer reaches every limit error with short inputs.
const TIGHT: RequestLimits = RequestLimits {
    max_args: 3,
    max_bulk_bytes: 8,
    max_inline_bytes: 16,
    unauthenticated: false,
};

fn limits(selector: u8) -> RequestLimits {
    match selector % 4 {
        0 => RequestLimits::authenticated(),
        1 => RequestLimits::unauthenticated(),
        2 => TIGHT,
        _ => RequestLimits {
            unauthenticated: true,
            ..TIGHT
        },
    }
}

/// One parsed request and the bytes of the stream it consumed (with any empty requests
/// skipped before it).
struct Parsed {
    args: Vec<Bytes>,
    start: usize,
    end: usize,
}

/// How a run over the stream ended.
#[derive(Debug, PartialEq)]
enum End {
    /// All complete requests served; the parser waits for more bytes.
    Wait,
    Error(ProtocolError),
}

/// Parses the whole stream from one buffer; also returns the buffer's address, to map the
/// (zero-copy) multibulk arguments back to stream offsets.
fn parse_whole(stream: &[u8], limits: &RequestLimits) -> (Vec<Parsed>, End, usize) {
    let mut buf = BytesMut::from(stream);
    let base = buf.as_ptr() as usize;
    let mut parser = RequestParser::new();
    let mut out = Vec::new();
    loop {
        let start = stream.len() - buf.len();
        match parser.parse(&mut buf, limits) {
            Ok(Some(args)) => {
                let end = stream.len() - buf.len();
                assert!(end > start, "a request consumed no bytes");
                out.push(Parsed { args, start, end });
            }
            Ok(None) => return (out, End::Wait, base),
            Err(e) => return (out, End::Error(e), base),
        }
    }
}

/// Feeds `stream` in reads whose sizes come from `seed` (xorshift), parsing after each read.
fn parse_in_reads(
    stream: &[u8],
    seed: u8,
    limits: &RequestLimits,
    stateful: bool,
) -> (Vec<Vec<Bytes>>, End) {
    let mut state = u32::from(seed) | 0x100;
    let mut parser = RequestParser::new();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut fed = 0;
    while fed < stream.len() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let n = (1 + (state % 16) as usize).min(stream.len() - fed);
        buf.extend_from_slice(&stream[fed..fed + n]);
        fed += n;
        loop {
            let parsed = if stateful {
                parser.parse(&mut buf, limits)
            } else {
                parse_request(&mut buf, limits)
            };
            match parsed {
                Ok(Some(args)) => out.push(args),
                Ok(None) => break,
                Err(e) => return (out, End::Error(e)),
            }
        }
    }
    (out, End::Wait)
}

/// Errors a run in reads may hit earlier than a whole-buffer run: a line longer than
/// `max_inline_bytes` is refused while its end has not arrived yet (as in Redis).
fn is_too_big(end: &End) -> bool {
    matches!(
        end,
        End::Error(
            ProtocolError::TooBigInline
                | ProtocolError::TooBigMultibulkCount
                | ProtocolError::TooBigBulkCount
        )
    )
}

fn check_same_as_whole(whole: &[Parsed], whole_end: &End, reads: &[Vec<Bytes>], end: &End) {
    assert!(reads.len() <= whole.len(), "reads parsed more requests");
    for (i, (a, b)) in whole.iter().zip(reads).enumerate() {
        assert_eq!(&a.args, b, "request {i} differs between whole and reads");
    }
    if !is_too_big(end) {
        assert_eq!(reads.len(), whole.len(), "reads parsed fewer requests");
        assert_eq!(end, whole_end, "runs ended differently");
    }
}

fn canonical(args: &[Bytes]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// The canonical multibulk encoding of `args` parses back to `args`, consuming it all.
fn check_round_trip(args: &[Bytes]) {
    let encoded = canonical(args);
    let mut buf = BytesMut::from(&encoded[..]);
    let back = RequestParser::new().parse(&mut buf, &RequestLimits::authenticated());
    assert_eq!(back, Ok(Some(args.to_vec())), "canonical re-encoding");
    assert!(buf.is_empty(), "canonical re-encoding left bytes");
}

/// For a multibulk request: every non-empty argument is a slice of the consumed bytes,
/// preceded by its `$len\r` header, in order, and the request ends two bytes after the last
/// argument. Inline requests (arguments copied out of the line) end with `\n`.
fn check_consumed(p: &Parsed, stream: &[u8], base: usize, limits: &RequestLimits) {
    let region = base + p.start..base + p.end;
    let inside: Vec<bool> = p
        .args
        .iter()
        .map(|a| !a.is_empty() && region.contains(&(a.as_ptr() as usize)))
        .collect();
    if !inside.iter().any(|&b| b) {
        if p.args.iter().any(|a| !a.is_empty()) {
            assert_eq!(stream[p.end - 1], b'\n', "inline request must end with LF");
        }
        return;
    }
    assert!(p.args.len() <= limits.max_args, "too many arguments");
    let mut after_prev = p.start;
    for (a, &is_inside) in p.args.iter().zip(&inside) {
        assert!(a.len() <= limits.max_bulk_bytes, "bulk over the limit");
        if a.is_empty() {
            continue;
        }
        assert!(is_inside, "multibulk argument outside its request's bytes");
        let at = a.as_ptr() as usize - base;
        assert!(at + a.len() + 2 <= p.end, "argument runs past the request");
        let header = format!("${}\r", a.len());
        assert!(at > after_prev + header.len(), "arguments overlap");
        let h = at - 1 - header.len();
        assert_eq!(&stream[h..at - 1], header.as_bytes(), "bulk header");
        after_prev = at + a.len() + 2;
    }
    if let Some(last) = p.args.last().filter(|a| !a.is_empty()) {
        let at = last.as_ptr() as usize - base;
        assert_eq!(
            at + last.len() + 2,
            p.end,
            "request must end after the last argument"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let [selector, seed, stream @ ..] = data else {
        return;
    };
    let limits = limits(*selector);

    let (whole, whole_end, base) = parse_whole(stream, &limits);
    if let End::Error(e) = &whole_end {
        // The connection replies `-ERR <text>\r\n`: the text must be one line.
        assert!(!e.to_string().contains(['\r', '\n']), "CR/LF in {e:?}");
    }
    for stateful in [true, false] {
        let (reads, end) = parse_in_reads(stream, *seed, &limits, stateful);
        check_same_as_whole(&whole, &whole_end, &reads, &end);
    }
    for p in &whole {
        assert!(!p.args.is_empty(), "empty request returned");
        check_consumed(p, stream, base, &limits);
        check_round_trip(&p.args);
    }
});
