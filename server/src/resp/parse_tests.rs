use super::*;

fn lim() -> RequestLimits {
    RequestLimits::authenticated()
}

fn args(v: &[&[u8]]) -> Vec<Bytes> {
    v.iter().map(|a| Bytes::copy_from_slice(a)).collect()
}

fn parse_all(input: &[u8], limits: &RequestLimits) -> Result<Vec<Vec<Bytes>>, ProtocolError> {
    let mut buf = BytesMut::from(input);
    let mut out = Vec::new();
    while let Some(req) = parse_request(&mut buf, limits)? {
        out.push(req);
    }
    Ok(out)
}

/// Feeds `input` split at every single byte boundary into both the stateful
/// and the stateless parser and checks the same requests come out.
fn check_splits(input: &[u8], expected: &[Vec<Bytes>]) {
    for cut in 0..=input.len() {
        for stateful in [true, false] {
            let mut parser = RequestParser::new();
            let mut buf = BytesMut::new();
            let mut got = Vec::new();
            for part in [&input[..cut], &input[cut..]] {
                buf.extend_from_slice(part);
                loop {
                    let r = if stateful {
                        parser.parse(&mut buf, &lim())
                    } else {
                        parse_request(&mut buf, &lim())
                    };
                    match r {
                        Ok(Some(req)) => got.push(req),
                        Ok(None) => break,
                        Err(e) => panic!("cut {cut}: {e}"),
                    }
                }
            }
            assert_eq!(got, expected, "cut at {cut}, stateful {stateful}");
            assert!(buf.is_empty(), "cut at {cut}: leftover {buf:?}");
        }
    }
}

#[test]
fn multibulk_single() {
    let got = parse_all(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", &lim()).unwrap_or_default();
    assert_eq!(got, vec![args(&[b"GET", b"k"])]);
}

#[test]
fn split_at_every_byte() {
    let input = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\na\r\nb\0\r\nPING\r\n\r\n*0\r\n*1\r\n$0\r\n\r\nECHO \"x y\"\n";
    check_splits(
        input,
        &[
            args(&[b"SET", b"key", b"a\r\nb\0"]),
            args(&[b"PING"]),
            args(&[b""]),
            args(&[b"ECHO", b"x y"]),
        ],
    );
}

#[test]
fn byte_by_byte_big_bulk() {
    let payload = vec![b'z'; 100_000];
    let mut input = format!("*2\r\n$4\r\nECHO\r\n${}\r\n", payload.len()).into_bytes();
    input.extend_from_slice(&payload);
    input.extend_from_slice(b"\r\n");
    let mut parser = RequestParser::new();
    let mut buf = BytesMut::new();
    let mut got = None;
    for chunk in input.chunks(7) {
        buf.extend_from_slice(chunk);
        if let Ok(Some(req)) = parser.parse(&mut buf, &lim()) {
            got = Some(req);
        }
    }
    assert_eq!(
        got,
        Some(vec![Bytes::from_static(b"ECHO"), Bytes::from(payload)])
    );
    assert!(buf.is_empty());
}

#[test]
fn incomplete_leaves_buffer() {
    let mut buf = BytesMut::from(&b"*2\r\n$3\r\nGET\r\n$1\r\n"[..]);
    assert_eq!(parse_request(&mut buf, &lim()), Ok(None));
    assert_eq!(&buf[..], b"*2\r\n$3\r\nGET\r\n$1\r\n");
    let mut buf = BytesMut::from(&b"PIN"[..]);
    assert_eq!(parse_request(&mut buf, &lim()), Ok(None));
    assert_eq!(&buf[..], b"PIN");
}

#[test]
fn pipelined_and_empty() {
    let got = parse_all(
        b"PING\r\n\r\n\n   \r\n*-1\r\n*0\r\nPING\n*1\r\n$4\r\nPING\r\n",
        &lim(),
    );
    assert_eq!(
        got,
        Ok(vec![args(&[b"PING"]), args(&[b"PING"]), args(&[b"PING"])])
    );
}

#[test]
fn inline_quoting() {
    let got = parse_all(b"SET k \"a\\x41\\n\" 'it\\'s'\r\n", &lim());
    assert_eq!(got, Ok(vec![args(&[b"SET", b"k", b"aA\n", b"it's"])]));
}

fn err(input: &[u8], limits: &RequestLimits) -> String {
    match parse_all(input, limits) {
        Err(e) => e.to_string(),
        Ok(v) => panic!("expected an error, got {v:?}"),
    }
}

#[test]
fn malformed() {
    assert_eq!(
        err(b"*x\r\n", &lim()),
        "Protocol error: invalid multibulk length"
    );
    assert_eq!(
        err(b"*2147483648\r\n", &lim()),
        "Protocol error: invalid multibulk length"
    );
    assert_eq!(
        err(b"*1048577\r\n", &lim()),
        "Protocol error: invalid multibulk length"
    );
    assert_eq!(
        err(b"*\r\n", &lim()),
        "Protocol error: invalid multibulk length"
    );
    assert_eq!(
        err(b"*1\r\nx3\r\nGET\r\n", &lim()),
        "Protocol error: expected '$', got 'x'"
    );
    assert_eq!(
        err(b"*1\r\n$-1\r\n", &lim()),
        "Protocol error: invalid bulk length"
    );
    assert_eq!(
        err(b"*1\r\n$abc\r\n", &lim()),
        "Protocol error: invalid bulk length"
    );
    assert_eq!(
        err(b"*1\r\n$536870913\r\n", &lim()),
        "Protocol error: invalid bulk length"
    );
    assert_eq!(
        err(b"SET \"a\r\n", &lim()),
        "Protocol error: unbalanced quotes in request"
    );
    assert_eq!(
        err(b"SET 'a'b\r\n", &lim()),
        "Protocol error: unbalanced quotes in request"
    );
}

#[test]
fn unauthenticated_limits() {
    let un = RequestLimits::unauthenticated();
    assert_eq!(
        err(b"*11\r\n", &un),
        "Protocol error: unauthenticated multibulk length"
    );
    assert_eq!(
        parse_all(b"*1\r\n$4\r\nPING\r\n", &un),
        Ok(vec![args(&[b"PING"])])
    );
    assert_eq!(
        err(b"*2\r\n$4\r\nAUTH\r\n$16385\r\n", &un),
        "Protocol error: unauthenticated bulk length"
    );
    let mut ok = b"*2\r\n$4\r\nAUTH\r\n$16384\r\n".to_vec();
    ok.extend(std::iter::repeat_n(b'p', 16384));
    ok.extend_from_slice(b"\r\n");
    assert_eq!(parse_all(&ok, &un).map(|v| v.len()), Ok(1));
}

#[test]
fn size_limits() {
    let mut buf = BytesMut::from(&vec![b'a'; PROTO_INLINE_MAX_SIZE][..]);
    assert_eq!(parse_request(&mut buf, &lim()), Ok(None));
    buf.extend_from_slice(b"a");
    assert_eq!(
        parse_request(&mut buf, &lim()),
        Err(ProtocolError::TooBigInline)
    );
    assert_eq!(
        ProtocolError::TooBigInline.to_string(),
        "Protocol error: too big inline request"
    );

    let mut big = b"*".to_vec();
    big.extend(std::iter::repeat_n(b'1', PROTO_INLINE_MAX_SIZE + 1));
    assert_eq!(
        err(&big, &lim()),
        "Protocol error: too big mbulk count string"
    );
    let mut big = b"*1\r\n$".to_vec();
    big.extend(std::iter::repeat_n(b'1', PROTO_INLINE_MAX_SIZE + 1));
    assert_eq!(
        err(&big, &lim()),
        "Protocol error: too big bulk count string"
    );
}

/// Cases checked byte for byte against redis-server 7.0.15.
#[test]
fn redis_quirks() {
    // The two bytes after a bulk payload are skipped without checking.
    assert_eq!(
        parse_all(b"*1\r\n$4\r\nPINGxx*1\r\n$4\r\nPING\r\n", &lim()),
        Ok(vec![args(&[b"PING"]), args(&[b"PING"])])
    );
    // Negative multibulk counts are consumed as empty requests.
    assert_eq!(
        parse_all(b"*-5\r\nPING\r\n", &lim()),
        Ok(vec![args(&[b"PING"])])
    );
    assert_eq!(
        err(b"*01\r\n", &lim()),
        "Protocol error: invalid multibulk length"
    );
    assert_eq!(
        err(b"*+1\r\n", &lim()),
        "Protocol error: invalid multibulk length"
    );
    assert_eq!(
        err(b"*1\r\n$01\r\n", &lim()),
        "Protocol error: invalid bulk length"
    );
    // Inline requests are not subject to the unauthenticated argument cap.
    let many = b"a a a a a a a a a a a a a a a a a a a a\r\n";
    assert_eq!(
        parse_all(many, &RequestLimits::unauthenticated()).map(|v| v[0].len()),
        Ok(20)
    );
}

/// Found by the `resp_parser` fuzz target: a bulk header line that is only CRLF (no type
/// byte) made `header_line` slice backwards and panic, which killed the shard — before AUTH.
/// Replies checked byte for byte against redis-server 7.0.15.
#[test]
fn bulk_header_without_type_byte() {
    for input in [
        &b"*1\r\n\r\n"[..],
        b"*1\r\n\nx\r\n",
        b"*2\r\n$3\r\xdf)\nGET\r\n$1\r\nk\r\n",
    ] {
        for limits in [lim(), RequestLimits::unauthenticated()] {
            assert_eq!(
                parse_all(input, &limits),
                Err(ProtocolError::ExpectedDollar(' ')),
                "{input:?}"
            );
        }
    }
    // CR and LF are shown as spaces so the error reply stays one line.
    assert_eq!(
        ProtocolError::ExpectedDollar(' ').to_string(),
        "Protocol error: expected '$', got ' '"
    );
    assert_eq!(
        err(b"*1\r\nx3\r\n", &lim()),
        "Protocol error: expected '$', got 'x'"
    );
}
