//! Number text as lua-cjson 2.1.0 produces and reads it in the "C" locale: `%.<p>g`
//! formatting (`fpconv_g_fmt`) and glibc `strtod` parsing (`fpconv_strtod`).

/// C's `printf("%.<precision>g", x)` with `1 <= precision <= 17`; `inf`, `-inf`, `nan`,
/// `-nan` for the non-finite values.
pub fn format_g(x: f64, precision: usize) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    let p = precision.clamp(1, 17);
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    // Correctly rounded P significant digits and the decimal exponent of the rounded value.
    let sci = format!("{:.*e}", p - 1, x);
    let (mantissa, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (sci.as_str(), 0),
    };
    let negative = mantissa.starts_with('-');
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if exp < -4 || exp >= p as i32 {
        out.push(char::from(digits[0]));
        let frac = trim_zeros(&digits[1..]);
        if !frac.is_empty() {
            out.push('.');
            out.extend(frac.iter().map(|&d| char::from(d)));
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exp.unsigned_abs()));
    } else if exp >= 0 {
        let int_len = exp as usize + 1;
        out.extend(digits[..int_len].iter().map(|&d| char::from(d)));
        let frac = trim_zeros(&digits[int_len..]);
        if !frac.is_empty() {
            out.push('.');
            out.extend(frac.iter().map(|&d| char::from(d)));
        }
    } else {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.extend(trim_zeros(&digits).iter().map(|&d| char::from(d)));
    }
    out
}

fn trim_zeros(digits: &[u8]) -> &[u8] {
    let end = digits.iter().rposition(|&d| d != b'0').map_or(0, |i| i + 1);
    &digits[..end]
}

/// glibc `strtod` on `s` (no leading whitespace is ever passed here): the value and the
/// number of bytes used, or `None` when no number starts at `s[0]`. Accepts decimal and
/// hexadecimal (`0x1.8p3`) forms, `inf`/`infinity` and `nan`/`nan(chars)` in any case.
pub fn strtod(s: &[u8]) -> Option<(f64, usize)> {
    let mut i = 0;
    let negative = match s.first() {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let rest = &s[i..];
    let (magnitude, used) = if starts_with_ci(rest, b"inf") {
        let used = if starts_with_ci(rest, b"infinity") {
            8
        } else {
            3
        };
        (f64::INFINITY, used)
    } else if starts_with_ci(rest, b"nan") {
        let mut used = 3;
        if rest.get(3) == Some(&b'(') {
            let body = rest[4..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                .count();
            if rest.get(4 + body) == Some(&b')') {
                used = 4 + body + 1;
            }
        }
        (f64::NAN, used)
    } else {
        let hex = if rest.len() >= 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' {
            parse_hex(&rest[2..]).map(|(v, used)| (v, used + 2))
        } else {
            None
        };
        match hex {
            Some(found) => found,
            None => parse_decimal(rest)?,
        }
    };
    let value = if negative { -magnitude } else { magnitude };
    Some((value, i + used))
}

fn starts_with_ci(s: &[u8], word: &[u8]) -> bool {
    s.len() >= word.len() && s[..word.len()].eq_ignore_ascii_case(word)
}

fn count_digits(s: &[u8], pred: fn(&u8) -> bool) -> usize {
    s.iter().take_while(|c| pred(c)).count()
}

/// Decimal mantissa with optional exponent; `None` without any digit.
fn parse_decimal(s: &[u8]) -> Option<(f64, usize)> {
    let int_digits = count_digits(s, u8::is_ascii_digit);
    let mut end = int_digits;
    let mut frac_digits = 0;
    if s.get(end) == Some(&b'.') {
        frac_digits = count_digits(&s[end + 1..], u8::is_ascii_digit);
        if int_digits > 0 || frac_digits > 0 {
            end += 1 + frac_digits;
        }
    }
    if int_digits == 0 && frac_digits == 0 {
        return None;
    }
    if matches!(s.get(end), Some(b'e' | b'E')) {
        let mut j = end + 1;
        if matches!(s.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let exp_digits = count_digits(&s[j..], u8::is_ascii_digit);
        if exp_digits > 0 {
            end = j + exp_digits;
        }
    }
    let text = std::str::from_utf8(&s[..end]).ok()?;
    let value = text.parse::<f64>().ok()?;
    Some((value, end))
}

/// Hexadecimal mantissa after `0x`, optional binary exponent `p`; `None` without any hex
/// digit (then `strtod` reads just the `0`).
fn parse_hex(s: &[u8]) -> Option<(f64, usize)> {
    let mut mantissa: u64 = 0;
    let mut sticky = false;
    let mut exp2: i64 = 0;
    let mut any = false;
    let mut i = 0;
    let mut seen_point = false;
    loop {
        match s.get(i) {
            Some(&c) if c.is_ascii_hexdigit() => {
                any = true;
                let d = u64::from((c as char).to_digit(16).unwrap_or(0));
                if mantissa >> 56 == 0 {
                    mantissa = (mantissa << 4) | d;
                    if seen_point {
                        exp2 -= 4;
                    }
                } else {
                    sticky |= d != 0;
                    if !seen_point {
                        exp2 += 4;
                    }
                }
            }
            Some(b'.') if !seen_point => seen_point = true,
            _ => break,
        }
        i += 1;
    }
    if !any {
        return None;
    }
    let mut end = i;
    if matches!(s.get(end), Some(b'p' | b'P')) {
        let mut j = end + 1;
        let neg = match s.get(j) {
            Some(b'-') => {
                j += 1;
                true
            }
            Some(b'+') => {
                j += 1;
                false
            }
            _ => false,
        };
        let digits = count_digits(&s[j..], u8::is_ascii_digit);
        if digits > 0 {
            let mut e: i64 = 0;
            for &c in &s[j..j + digits] {
                e = (e * 10 + i64::from(c - b'0')).min(1 << 40);
            }
            exp2 += if neg { -e } else { e };
            end = j + digits;
        }
    }
    // Up to 60 significant bits plus a sticky bit: one correctly rounded conversion.
    let wide = (mantissa << 1) | u64::from(sticky);
    let value = scale2(wide as f64, exp2 - 1);
    Some((value, end))
}

/// `x * 2^e` without intermediate overflow or underflow of the factor.
fn scale2(mut x: f64, mut e: i64) -> f64 {
    while e > 1000 {
        x *= 2f64.powi(1000);
        e -= 1000;
        if x.is_infinite() {
            return x;
        }
    }
    while e < -1000 {
        x *= 2f64.powi(-1000);
        e += 1000;
        if x == 0.0 {
            return x;
        }
    }
    x * 2f64.powi(e as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_g_matches_c() {
        // Expected texts are glibc printf("%.14g") results.
        let cases: &[(f64, &str)] = &[
            (0.1, "0.1"),
            (1.0 / 3.0, "0.33333333333333"),
            (100.0, "100"),
            (1e14, "1e+14"),
            (1e13, "10000000000000"),
            (123456789012345678.0, "1.2345678901235e+17"),
            (-1.5e-7, "-1.5e-07"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e100, "1e+100"),
            (5e-324, "4.9406564584125e-324"),
            (-0.0, "-0"),
            (99999999999999.5, "1e+14"),
            (0.3e-3, "0.0003"),
        ];
        for (x, want) in cases {
            assert_eq!(format_g(*x, 14), *want, "{x}");
        }
        assert_eq!(format_g(1.0 / 3.0, 3), "0.333");
        assert_eq!(format_g(123456.0, 3), "1.23e+05");
        assert_eq!(format_g(f64::INFINITY, 14), "inf");
        assert_eq!(format_g(f64::NEG_INFINITY, 14), "-inf");
    }

    #[test]
    fn strtod_forms() {
        assert_eq!(strtod(b"1.5x"), Some((1.5, 3)));
        assert_eq!(strtod(b"-5e3,"), Some((-5000.0, 4)));
        assert_eq!(strtod(b"1e"), Some((1.0, 1)));
        assert_eq!(strtod(b"1.]"), Some((1.0, 2)));
        assert_eq!(strtod(b"-.5"), Some((-0.5, 3)));
        assert_eq!(strtod(b"0x10"), Some((16.0, 4)));
        assert_eq!(strtod(b"0x"), Some((0.0, 1)));
        assert_eq!(strtod(b"0x1.8p1"), Some((3.0, 7)));
        assert_eq!(strtod(b"0x.8"), Some((0.5, 4)));
        assert_eq!(strtod(b"0x1p-1074"), Some((5e-324, 9)));
        assert_eq!(strtod(b"0x1P+4x"), Some((16.0, 6)));
        assert_eq!(strtod(b"infinity"), Some((f64::INFINITY, 8)));
        assert_eq!(strtod(b"-Infx"), Some((f64::NEG_INFINITY, 4)));
        assert_eq!(strtod(b"-"), None);
        assert_eq!(strtod(b"."), None);
        assert_eq!(strtod(b"x"), None);
        let (nan, used) = strtod(b"nan(123)x").unwrap_or((0.0, 0));
        assert!(nan.is_nan());
        assert_eq!(used, 8);
        let (nan, used) = strtod(b"-nan(").unwrap_or((0.0, 0));
        assert!(nan.is_nan() && nan.is_sign_negative());
        assert_eq!(used, 4);
        assert_eq!(strtod(b"1e400").map(|v| v.0), Some(f64::INFINITY));
        // Round half to even past 53 bits, and a sticky bit beyond 60 bits.
        assert_eq!(strtod(b"0x1.fffffffffffff8p0"), Some((2.0, 20)));
        assert_eq!(
            strtod(b"0x1.fffffffffffff7p0"),
            Some((1.9999999999999998, 20))
        );
        assert_eq!(strtod(b"0x1.00000000000008p0"), Some((1.0, 20)));
        assert_eq!(
            strtod(b"0x1.0000000000000801p0"),
            Some((1.0000000000000002, 22))
        );
    }
}
