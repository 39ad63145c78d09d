//! The timeout argument of the blocking commands: seconds as a double, 0 = forever (Redis
//! 7.0 `timeout.c` `getTimeoutFromObjectOrReply` with `UNIT_SECONDS`).

use std::time::Duration;

use crate::resp::Frame;

/// Reply to a timeout that is not a number.
pub const NOT_A_FLOAT: &str = "ERR timeout is not a float or out of range";
/// Reply to a negative (or overflowing) timeout.
pub const NEGATIVE: &str = "ERR timeout is negative";

/// Parses `arg` (seconds, a long double as `strtold` reads it: decimal, exponent, hex,
/// `inf`) → `None` for 0 (block forever) or the wait. Errors: [`NOT_A_FLOAT`] for text that
/// is no number (spaces included, `nan`), [`NEGATIVE`] for a negative value and for one
/// whose milliseconds overflow a 64-bit integer (Redis's cast makes those negative).
pub fn parse(arg: &[u8]) -> Result<Option<Duration>, Frame> {
    let not_float = || Frame::error(NOT_A_FLOAT);
    let text = std::str::from_utf8(arg).map_err(|_| not_float())?;
    let seconds = parse_long_double(text).ok_or_else(not_float)?;
    if seconds.is_nan() {
        return Err(not_float());
    }
    let ms = seconds * 1000.0;
    // `(long long)` of an out-of-range value is LLONG_MIN on the platforms Redis runs on.
    if !ms.is_finite() || ms >= 9.223_372_036_854_776e18 || ms <= -1.0 {
        return Err(Frame::error(NEGATIVE));
    }
    let whole = ms.trunc();
    if whole == 0.0 {
        // A positive fraction of a millisecond still times out (as redis-server 7.0.15
        // behaves); zero blocks forever.
        return Ok((ms != 0.0).then(|| Duration::from_millis(1)));
    }
    Ok(Some(Duration::from_millis(whole as u64)))
}

/// `strtold` over the whole text: Rust's float syntax, plus `0x` hexadecimal integers.
fn parse_long_double(text: &str) -> Option<f64> {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let value = hex.bytes().fold(0f64, |acc, b| {
            acc * 16.0 + f64::from((b as char).to_digit(16).unwrap_or(0))
        });
        return Some(if negative { -value } else { value });
    }
    if text.is_empty() || text.starts_with(char::is_whitespace) {
        return None;
    }
    text.parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(arg: &str) -> String {
        match parse(arg.as_bytes()) {
            Err(Frame::Error(e)) => e,
            other => panic!("{arg}: {other:?}"),
        }
    }

    #[test]
    fn seconds_as_doubles() {
        assert_eq!(parse(b"0").ok(), Some(None));
        assert_eq!(parse(b"-0").ok(), Some(None));
        assert_eq!(parse(b"1").ok(), Some(Some(Duration::from_secs(1))));
        assert_eq!(parse(b"0.1").ok(), Some(Some(Duration::from_millis(100))));
        assert_eq!(parse(b"1e1").ok(), Some(Some(Duration::from_secs(10))));
        assert_eq!(parse(b"0.0001").ok(), Some(Some(Duration::from_millis(1))));
    }

    #[test]
    fn redis_errors() {
        assert_eq!(err("-1"), NEGATIVE);
        assert_eq!(err("-0.5"), NEGATIVE);
        assert_eq!(err("inf"), NEGATIVE);
        assert_eq!(err("1e400"), NEGATIVE);
        assert_eq!(err("0x7FFFFFFFFFFFFF"), NEGATIVE);
        assert_eq!(err("abc"), NOT_A_FLOAT);
        assert_eq!(err("nan"), NOT_A_FLOAT);
        assert_eq!(err(" 1"), NOT_A_FLOAT);
        assert_eq!(err("1 "), NOT_A_FLOAT);
        assert_eq!(err(""), NOT_A_FLOAT);
    }
}
