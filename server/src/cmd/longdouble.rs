//! Software x87 80-bit `long double` for INCRBYFLOAT / HINCRBYFLOAT, so
//! replies match Redis 7 on x86-64 byte for byte: `string2ld` (glibc
//! `strtold`, correctly rounded), one correctly rounded addition, and
//! `ld2string(LD_STR_HUMAN)` (`%.17Lf`, trailing zeros trimmed, `-0` → `0`).

use num_bigint::BigUint;

/// Exponent of the least significant mantissa bit of the smallest
/// (subnormal) values: 2^-16445.
const MIN_EXP: i64 = -16445;
/// Largest allowed exponent of the most significant bit (2^16383).
const MAX_TOP: i64 = 16383;
/// Redis `MAX_LONG_DOUBLE_CHARS`: longer inputs are not valid floats.
const MAX_CHARS: usize = 5 * 1024;

/// A finite `long double`: `(-1)^neg · mant · 2^exp`, `mant < 2^64`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LongDouble {
    neg: bool,
    mant: BigUint,
    exp: i64,
}

/// Result of parsing or adding: a finite value, or an infinity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ld {
    /// Finite value.
    Finite(LongDouble),
    /// ±infinity (overflow or a literal `inf`).
    Inf,
}

impl LongDouble {
    /// Zero with the given sign.
    pub fn zero(neg: bool) -> LongDouble {
        LongDouble {
            neg,
            mant: BigUint::ZERO,
            exp: 0,
        }
    }

    /// Rounds `n · 2^exp` to 64 significant bits (ties to even), honouring
    /// the subnormal range; `sticky` says non-zero bits were already lost
    /// below `n`. `None` on overflow.
    fn round(neg: bool, n: &BigUint, exp: i64, sticky: bool) -> Option<LongDouble> {
        let bits = n.bits() as i64;
        let shift = (bits - 64).max(MIN_EXP - exp);
        let (mut q, mut exp) = (n.clone(), exp);
        if shift > 0 {
            let s = shift as u64;
            q = n >> s;
            let half = n.bit(s - 1);
            let rest = sticky || any_below(n, s - 1);
            if half && (rest || q.bit(0)) {
                q += 1u32;
            }
            exp += shift;
            if q.bits() > 64 {
                q >>= 1u32;
                exp += 1;
            }
        }
        if q != BigUint::ZERO && exp + q.bits() as i64 - 1 > MAX_TOP {
            return None;
        }
        Some(LongDouble { neg, mant: q, exp })
    }

    /// The value as the nearest `f64` (rounded twice; underflows to ±0 and
    /// overflows to ±infinity outside the `f64` range). For durations, not
    /// for replies.
    pub fn to_f64(&self) -> f64 {
        let mant = u64::try_from(&self.mant).unwrap_or(u64::MAX) as f64;
        let exp = i32::try_from(self.exp).unwrap_or(i32::MAX);
        let v = mant * 2f64.powi(exp);
        if self.neg {
            -v
        } else {
            v
        }
    }

    /// Whether the value is ±0.
    pub fn is_zero(&self) -> bool {
        self.mant == BigUint::ZERO
    }

    /// The correctly rounded sum (x87 `fadd` in extended precision).
    pub fn add(&self, o: &LongDouble) -> Ld {
        if self.is_zero() && o.is_zero() {
            return Ld::Finite(LongDouble::zero(self.neg && o.neg));
        }
        let emin = self.exp.min(o.exp);
        let a = &self.mant << (self.exp - emin) as u64;
        let b = &o.mant << (o.exp - emin) as u64;
        let (neg, sum) = if self.neg == o.neg {
            (self.neg, a + b)
        } else if a >= b {
            (self.neg, a - b)
        } else {
            (o.neg, b - a)
        };
        if sum == BigUint::ZERO {
            return Ld::Finite(LongDouble::zero(false));
        }
        LongDouble::round(neg, &sum, emin, false).map_or(Ld::Inf, Ld::Finite)
    }

    /// `ld2string(value, LD_STR_HUMAN)`: `%.17Lf` with trailing zeros (and
    /// a trailing dot) removed, and `-0` written `0`.
    pub fn to_human(&self) -> String {
        let m = &self.mant * pow10(17);
        let n = if self.exp >= 0 {
            m << self.exp as u64
        } else {
            let s = self.exp.unsigned_abs();
            let mut q = &m >> s;
            if m.bit(s - 1) && (any_below(&m, s - 1) || q.bit(0)) {
                q += 1u32;
            }
            q
        };
        let mut digits = n.to_string();
        if digits.len() < 18 {
            digits.insert_str(0, &"0".repeat(18 - digits.len()));
        }
        let (int, frac) = digits.split_at(digits.len() - 17);
        let frac = frac.trim_end_matches('0');
        let mut out = String::with_capacity(digits.len() + 2);
        if self.neg {
            out.push('-');
        }
        out.push_str(int);
        if !frac.is_empty() {
            out.push('.');
            out.push_str(frac);
        }
        if out == "-0" {
            out = "0".to_string();
        }
        out
    }
}

/// Redis 7.0 `string2ld`: all `s.len()` bytes must form one `strtold`
/// number, so a NUL byte anywhere (where `strtold` would stop) makes the
/// string invalid, as do empty, too long (≥ 5120 bytes), leading whitespace,
/// trailing bytes, NaN and out-of-range values (overflow, or underflow to
/// zero): `None`. `inf`/`infinity` give [`Ld::Inf`].
pub fn parse(s: &[u8]) -> Option<Ld> {
    if s.is_empty() || s.len() >= MAX_CHARS {
        return None;
    }
    if s.first().is_some_and(|c| b" \t\n\x0b\x0c\r".contains(c)) {
        return None;
    }
    let (neg, body) = match s {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, s),
    };
    if body.eq_ignore_ascii_case(b"inf") || body.eq_ignore_ascii_case(b"infinity") {
        return Some(Ld::Inf);
    }
    let (radix, body) = match body {
        [b'0', b'x' | b'X', rest @ ..] if rest.first().is_some_and(|c| hex_digit(*c).is_some()) => {
            (16, rest)
        }
        [b'0', b'x' | b'X', b'.', d, ..] if hex_digit(*d).is_some() => (16, &body[2..]),
        _ => (10, body),
    };
    let (mant, frac_digits, rest) = digits(body, radix)?;
    let exp_mark: &[u8] = if radix == 16 { b"pP" } else { b"eE" };
    let exp = match rest {
        [] => 0,
        [m, e @ ..] if exp_mark.contains(m) => exponent(e)?,
        _ => return None,
    };
    if mant == BigUint::ZERO {
        return Some(Ld::Finite(LongDouble::zero(neg)));
    }
    let value = if radix == 16 {
        LongDouble::round(neg, &mant, exp - 4 * frac_digits, false)
    } else {
        decimal(neg, &mant, exp - frac_digits)?
    };
    match value {
        None => None,
        Some(v) if v.is_zero() => None,
        Some(v) => Some(Ld::Finite(v)),
    }
}

fn hex_digit(c: u8) -> Option<u32> {
    char::from(c).to_digit(16)
}

/// `10^n`.
fn pow10(n: u32) -> BigUint {
    BigUint::from(10u32).pow(n)
}

/// Whether any bit of `n` below bit `i` is set.
fn any_below(n: &BigUint, i: u64) -> bool {
    n.trailing_zeros().is_some_and(|t| t < i)
}

/// Mantissa digits with an optional point: `(value, digits after the
/// point, rest)`; `None` if there is no digit at all.
fn digits(s: &[u8], radix: u32) -> Option<(BigUint, i64, &[u8])> {
    let mut mant = BigUint::ZERO;
    let (mut seen, mut point, mut frac) = (false, false, 0i64);
    let mut i = 0;
    while let Some(&c) = s.get(i) {
        if c == b'.' && !point {
            point = true;
        } else if let Some(d) = char::from(c).to_digit(radix) {
            seen = true;
            mant = mant * radix + d;
            if point {
                frac += 1;
            }
        } else {
            break;
        }
        i += 1;
    }
    seen.then_some((mant, frac, &s[i..]))
}

/// A decimal exponent after `e`/`p`: optional sign and at least one digit,
/// saturated far outside the representable range.
fn exponent(s: &[u8]) -> Option<i64> {
    let (neg, ds) = match s {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, s),
    };
    if ds.is_empty() || !ds.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = ds.iter().fold(0i64, |acc, d| {
        (acc * 10 + i64::from(d - b'0')).min(1_000_000)
    });
    Some(if neg { -v } else { v })
}

/// Correctly rounded `mant · 10^k`; `None` (outer) when far out of range,
/// `Some(None)` on overflow found while rounding.
fn decimal(neg: bool, mant: &BigUint, k: i64) -> Option<Option<LongDouble>> {
    let magnitude = mant.to_string().len() as i64 + k;
    if !(-4952..=4934).contains(&magnitude) {
        return None;
    }
    let p = pow10(u32::try_from(k.unsigned_abs()).ok()?);
    if k >= 0 {
        return Some(LongDouble::round(neg, &(mant * p), 0, false));
    }
    // Enough quotient bits (≥ 67) for rounding; the remainder is sticky.
    let s = (p.bits() as i64 - mant.bits() as i64 + 67).max(0);
    let n = mant << s as u64;
    let q = &n / &p;
    let sticky = &q * &p != n;
    Some(LongDouble::round(neg, &q, -s, sticky))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn human(s: &str) -> Option<String> {
        match parse(s.as_bytes())? {
            Ld::Finite(v) => Some(v.to_human()),
            Ld::Inf => Some("inf".into()),
        }
    }

    fn sum(a: &str, b: &str) -> String {
        let (Some(Ld::Finite(a)), Some(Ld::Finite(b))) = (parse(a.as_bytes()), parse(b.as_bytes()))
        else {
            return "parse".into();
        };
        match a.add(&b) {
            Ld::Finite(v) => v.to_human(),
            Ld::Inf => "inf".into(),
        }
    }

    // Expected values checked against redis-server 7.0.15 INCRBYFLOAT.
    #[test]
    fn parse_and_print() {
        assert_eq!(human("0.1").as_deref(), Some("0.1"));
        assert_eq!(human("0x10").as_deref(), Some("16"));
        assert_eq!(human("0x1p-3").as_deref(), Some("0.125"));
        assert_eq!(human("-0").as_deref(), Some("0"));
        assert_eq!(human("+5").as_deref(), Some("5"));
        assert_eq!(human(".5").as_deref(), Some("0.5"));
        assert_eq!(human("5.").as_deref(), Some("5"));
        assert_eq!(human("3.0e3").as_deref(), Some("3000"));
        assert_eq!(human("0.000000000000000005").as_deref(), Some("0"));
        assert_eq!(
            human("0.000000000000000015").as_deref(),
            Some("0.00000000000000002")
        );
        assert_eq!(
            human("0.000003814697265625").as_deref(),
            Some("0.00000381469726562")
        );
        assert_eq!(human("-0.000000000000000001").as_deref(), Some("0"));
        assert_eq!(
            human("123456789012345678901234567890").as_deref(),
            Some("123456789012345678899921813504")
        );
        assert_eq!(human("1e-4940").as_deref(), Some("0"));
        assert_eq!(human("INF").as_deref(), Some("inf"));
        assert_eq!(human("infinity").as_deref(), Some("inf"));
        for bad in [
            "", "x", "nan", "1e", "1e+", " 1", ".", "0x", "1e5000", "1e-5000", "infinit",
        ] {
            assert_eq!(human(bad), None, "{bad:?}");
        }
        // strtold stops at a NUL; string2ld then sees bytes left over.
        for nul in ["7\0junk", "\0", "1\0", "\x001", "1\x002", "-\0"] {
            assert_eq!(human(nul), None, "{nul:?}");
        }
        assert_eq!(human(&"1".repeat(5120)), None);
    }

    #[test]
    fn addition() {
        assert_eq!(sum("0.1", "0.2"), "0.3");
        assert_eq!(sum("0.3", "1e3"), "1000.29999999999999999");
        assert_eq!(sum("1000.29999999999999999", "-1000.3"), "0");
        assert_eq!(sum("16", "1.5e-20"), "16");
        assert_eq!(sum("1e4932", "1e4932"), "inf");
        let big = sum("1.1e308", "1.1e308");
        assert!(big.starts_with("220000000000000000006352374858820419165726955007339511"));
        assert_eq!(big.len(), 309);
        let huge = sum("0", "1e4000");
        assert!(huge.starts_with("99999999999999999999654638730996237849324925835069576"));
        assert_eq!(huge.len(), 4000);
    }

    #[test]
    fn to_f64() {
        let f = |s: &str| match parse(s.as_bytes()) {
            Some(Ld::Finite(v)) => v.to_f64(),
            other => panic!("{s}: {other:?}"),
        };
        assert_eq!(f("0.5"), 0.5);
        assert_eq!(f("-0.001"), -0.001);
        assert_eq!(f("0x1p-3"), 0.125);
        assert_eq!(f("60"), 60.0);
        assert_eq!(f("1e4000"), f64::INFINITY);
        assert_eq!(f("1e-4000"), 0.0);
    }

    #[test]
    fn helpers() {
        assert_eq!(pow10(30).to_string(), format!("1{}", "0".repeat(30)));
        assert_eq!(pow10(0), BigUint::from(1u32));
        let eight = BigUint::from(0b1000u32);
        assert!(any_below(&eight, 4));
        assert!(!any_below(&eight, 3));
        assert!(!any_below(&BigUint::ZERO, 64));
    }
}
