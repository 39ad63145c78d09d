//! Text form of IEEE-754 doubles as Redis 7 writes them in replies.

use std::fmt::Write;

/// Formats `v` for a double reply: `inf`, `-inf`, `nan` for non-finite
/// values, otherwise the shortest digit string that parses back to `v`
/// (Redis 7.2's `fpconv_dtoa` choice; 7.0 printed `%.17g`), positional when
/// the decimal exponent is in `-5..=20` (`1.5`, `10`, `0.001`) and
/// `d.ddde±XX` outside it (`1e+21`, `1.25e-07`). Exponent layout for extreme
/// magnitudes may differ from Redis; no keyspace command replies with a
/// double today.
pub fn format_double(v: f64, out: &mut String) {
    if v.is_nan() {
        out.push_str("nan");
        return;
    }
    if v.is_infinite() {
        out.push_str(if v > 0.0 { "inf" } else { "-inf" });
        return;
    }
    if v == 0.0 {
        out.push_str(if v.is_sign_negative() { "-0" } else { "0" });
        return;
    }
    // `{:e}` yields the shortest round-trip digits as "d.ddde<exp>".
    let sci = format!("{v:e}");
    let (mantissa, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (sci.as_str(), 0),
    };
    if (-5..=20).contains(&exp) {
        let _ = write!(out, "{v}");
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        let _ = write!(out, "{mantissa}e{sign}{:02}", exp.unsigned_abs());
    }
}

#[cfg(test)]
mod tests {
    use super::format_double;

    fn f(v: f64) -> String {
        let mut s = String::new();
        format_double(v, &mut s);
        s
    }

    #[test]
    fn formats_like_redis() {
        assert_eq!(f(1.5), "1.5");
        assert_eq!(f(10.0), "10");
        assert_eq!(f(-3.25), "-3.25");
        assert_eq!(f(0.1), "0.1");
        assert_eq!(f(1e21), "1e+21");
        assert_eq!(f(1.25e-7), "1.25e-07");
        assert_eq!(f(f64::INFINITY), "inf");
        assert_eq!(f(f64::NEG_INFINITY), "-inf");
        assert_eq!(f(f64::NAN), "nan");
        assert_eq!(f(0.0), "0");
    }
}
