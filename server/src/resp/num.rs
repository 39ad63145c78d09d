//! Strict integer parsing as Redis 7 `util.c` does it.

/// Parses `s` as a signed 64-bit integer with Redis's `string2ll` rules: an
/// optional `-`, then digits without leading zeros (`"0"` alone is fine), no
/// `+`, no spaces, no overflow, at most 20 digits. Returns `None` when any
/// rule is broken.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, s),
    };
    match digits {
        [] => return None,
        [b'0'] if !neg => return Some(0),
        [b'1'..=b'9', ..] => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if neg {
        if v > i64::MAX as u64 + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else {
        i64::try_from(v).ok()
    }
}

/// Parses a SCAN cursor like Redis 7 `parseScanCursorOrReply` (`strtoul`
/// base 10 on the argument as a C string): optional sign (a `-` wraps modulo
/// 2^64), leading zeros allowed, the empty string is cursor 0; leading
/// whitespace, trailing garbage and overflow are rejected (`None` → `"ERR
/// invalid cursor"`). Unlike every other number, Redis 7.0 reads a cursor
/// only up to its first NUL byte (`"1\0x"` is cursor 1): so do we, a cursor
/// being an opaque token the client got from us.
pub fn parse_cursor(s: &[u8]) -> Option<u64> {
    let s = s.split(|&c| c == 0).next().unwrap_or_default();
    if s.is_empty() {
        return Some(0);
    }
    let (neg, digits) = match s {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, s),
    };
    if digits.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string2ll_rules() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"123"), Some(123));
        assert_eq!(parse_i64(b"-123"), Some(-123));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"-0",
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"1a",
            b"9223372036854775808",
            b"99999999999999999999999",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn cursor_rules() {
        assert_eq!(parse_cursor(b""), Some(0));
        assert_eq!(parse_cursor(b"007"), Some(7));
        assert_eq!(parse_cursor(b"+7"), Some(7));
        assert_eq!(parse_cursor(b"-1"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551615"), Some(u64::MAX));
        // Checked against redis-server 7.0.15: the cursor ends at a NUL.
        assert_eq!(parse_cursor(b"\0"), Some(0));
        assert_eq!(parse_cursor(b"1\x002"), Some(1));
        assert_eq!(parse_cursor(b"12\0 x"), Some(12));
        for bad in [&b" 1"[..], b"1x", b"+", b"18446744073709551616", b"x\x001"] {
            assert_eq!(parse_cursor(bad), None);
        }
    }
}
