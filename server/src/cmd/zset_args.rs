//! Argument parsing and reply shapes shared by the sorted set commands (Redis 7.0 `t_zset.c`
//! `zslParseRange`, `zslParseLexRange`, `object.c` `getDoubleFromObject`).

use bytes::Bytes;

use crate::resp::Frame;

/// `getDoubleFromObjectOrReply`'s error.
pub const NOT_FLOAT: &str = "ERR value is not a valid float";
/// `zslParseRange` failure.
pub const RANGE_NOT_FLOAT: &str = "ERR min or max is not a float";
/// `zslParseLexRange` failure.
pub const LEX_RANGE: &str = "ERR min or max not valid string range item";
/// A ZINCRBY / ZADD INCR result that is NaN (`inf + -inf`).
pub const NAN_SCORE: &str = "ERR resulting score is not a number (NaN)";

/// C `strtod` over the whole of `text` (no trailing bytes): decimal and `inf`/`infinity`/`nan`
/// spellings with an optional sign. Returns the value and whether it over- or underflowed
/// (`ERANGE`).
fn strtod(text: &[u8]) -> Option<(f64, bool)> {
    let s = std::str::from_utf8(text).ok()?;
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    if unsigned.is_empty() || unsigned.starts_with(['+', '-']) {
        return None;
    }
    let value = match unsigned
        .strip_prefix("0x")
        .or_else(|| unsigned.strip_prefix("0X"))
    {
        Some(hex) => {
            let v = hex_float(hex)?;
            if s.starts_with('-') {
                -v
            } else {
                v
            }
        }
        None => s.parse().ok()?,
    };
    let word = unsigned.as_bytes()[0].is_ascii_alphabetic();
    let erange = !word
        && (value.is_infinite()
            || (value == 0.0
                && unsigned
                    .bytes()
                    .take_while(|b| *b != b'e' && *b != b'E')
                    .any(|b| (b'1'..=b'9').contains(&b))));
    Some((value, erange))
}

/// The value of a C99 hex float after `0x`: hex digits, an optional `.` and hex fraction, an
/// optional `p` binary exponent (strtod's hex form).
fn hex_float(text: &str) -> Option<f64> {
    let (mantissa, exp) = match text.split_once(['p', 'P']) {
        Some((m, e)) => (m, e.parse::<i32>().ok()?),
        None => (text, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut value = 0f64;
    for c in int.chars() {
        value = value * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        value += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    Some(value * 2f64.powi(exp))
}

/// A score argument (`getDoubleFromObject`): the whole text is a number, no leading space,
/// no overflow, not NaN; `inf`, `+inf`, `-inf` are accepted.
pub fn parse_score(arg: &[u8]) -> Option<f64> {
    if arg.first().is_some_and(u8::is_ascii_whitespace) {
        return None;
    }
    match strtod(arg)? {
        (v, false) if !v.is_nan() => Some(v),
        _ => None,
    }
}

/// [`parse_score`] or the `ERR value is not a valid float` frame.
pub fn score_arg(arg: &[u8]) -> Result<f64, Frame> {
    parse_score(arg).ok_or_else(|| Frame::error(NOT_FLOAT))
}

/// A score interval (`zrangespec`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreRange {
    /// Lower bound.
    pub min: f64,
    /// Upper bound.
    pub max: f64,
    /// Whether `min` is excluded.
    pub minex: bool,
    /// Whether `max` is excluded.
    pub maxex: bool,
}

impl ScoreRange {
    /// Whether `score` is at or above the lower bound (`zslValueGteMin`).
    pub fn above_min(&self, score: f64) -> bool {
        if self.minex {
            score > self.min
        } else {
            score >= self.min
        }
    }

    /// Whether `score` is at or below the upper bound (`zslValueLteMax`).
    pub fn below_max(&self, score: f64) -> bool {
        if self.maxex {
            score < self.max
        } else {
            score <= self.max
        }
    }

    /// Whether the range can hold no score at all (`zslIsInRange`'s first check).
    pub fn is_empty(&self) -> bool {
        self.min > self.max || (self.min == self.max && (self.minex || self.maxex))
    }
}

/// One bound of `zslParseRange`: `(` excludes; leading space and an empty text are accepted
/// (strtod's), NaN is not.
fn score_bound(arg: &[u8]) -> Option<(f64, bool)> {
    let (text, ex) = match arg.strip_prefix(b"(") {
        Some(rest) => (rest, true),
        None => (arg, false),
    };
    let trimmed = text.trim_ascii_start();
    let value = if trimmed.is_empty() {
        0.0
    } else {
        strtod(trimmed)?.0
    };
    (!value.is_nan()).then_some((value, ex))
}

/// `zslParseRange(min, max)`, or the `ERR min or max is not a float` frame.
pub fn score_range(min: &[u8], max: &[u8]) -> Result<ScoreRange, Frame> {
    match (score_bound(min), score_bound(max)) {
        (Some((min, minex)), Some((max, maxex))) => Ok(ScoreRange {
            min,
            max,
            minex,
            maxex,
        }),
        _ => Err(Frame::error(RANGE_NOT_FLOAT)),
    }
}

/// One bound of a lexicographic range (`zslParseLexRangeItem`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LexBound {
    /// `-`: below every member.
    Min,
    /// `+`: above every member.
    Max,
    /// `[member` (inclusive, `false`) or `(member` (exclusive, `true`).
    Member(Bytes, bool),
}

/// A lexicographic interval (`zlexrangespec`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexRange {
    /// Lower bound.
    pub min: LexBound,
    /// Upper bound.
    pub max: LexBound,
}

impl LexRange {
    /// Whether `member` is at or above the lower bound (`zslLexValueGteMin`).
    pub fn above_min(&self, member: &[u8]) -> bool {
        match &self.min {
            LexBound::Min => true,
            LexBound::Max => false,
            LexBound::Member(m, true) => member > &m[..],
            LexBound::Member(m, false) => member >= &m[..],
        }
    }

    /// Whether `member` is at or below the upper bound (`zslLexValueLteMax`).
    pub fn below_max(&self, member: &[u8]) -> bool {
        match &self.max {
            LexBound::Min => false,
            LexBound::Max => true,
            LexBound::Member(m, true) => member < &m[..],
            LexBound::Member(m, false) => member <= &m[..],
        }
    }

    /// Whether the range can hold no member (`zslIsInLexRange`'s first check).
    pub fn is_empty(&self) -> bool {
        match (&self.min, &self.max) {
            (LexBound::Max, _) | (_, LexBound::Min) => true,
            (LexBound::Member(a, aex), LexBound::Member(b, bex)) => {
                a > b || (a == b && (*aex || *bex))
            }
            _ => false,
        }
    }
}

fn lex_bound(arg: &Bytes) -> Option<LexBound> {
    match arg.first()? {
        b'+' if arg.len() == 1 => Some(LexBound::Max),
        b'-' if arg.len() == 1 => Some(LexBound::Min),
        b'(' => Some(LexBound::Member(arg.slice(1..), true)),
        b'[' => Some(LexBound::Member(arg.slice(1..), false)),
        _ => None,
    }
}

/// `zslParseLexRange(min, max)`, or `ERR min or max not valid string range item`.
pub fn lex_range(min: &Bytes, max: &Bytes) -> Result<LexRange, Frame> {
    match (lex_bound(min), lex_bound(max)) {
        (Some(min), Some(max)) => Ok(LexRange { min, max }),
        _ => Err(Frame::error(LEX_RANGE)),
    }
}

/// The reply of a list of elements: members only, or with WITHSCORES `[member, score]` pairs
/// (RESP2: flat member, score, ...; RESP3: an array of 2-element arrays with Double scores),
/// as Redis 7.0 replies to ZRANGE.
pub fn elements_reply<'a>(
    items: impl Iterator<Item = (&'a Bytes, f64)>,
    withscores: bool,
) -> Frame {
    if withscores {
        Frame::Pairs(
            items
                .map(|(m, s)| (Frame::Bulk(m.clone()), Frame::Double(s)))
                .collect(),
        )
    } else {
        Frame::Array(items.map(|(m, _)| Frame::Bulk(m.clone())).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores() {
        assert_eq!(parse_score(b"1.5"), Some(1.5));
        assert_eq!(parse_score(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_score(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_score(b"1e3"), Some(1000.0));
        assert_eq!(parse_score(b"nan"), None);
        assert_eq!(parse_score(b" 1"), None);
        assert_eq!(parse_score(b"1 "), None);
        assert_eq!(parse_score(b""), None);
        assert_eq!(parse_score(b"1e400"), None);
        assert_eq!(parse_score(b"1e-400"), None);
        assert_eq!(parse_score(b"0e-400"), Some(0.0));
        assert_eq!(parse_score(b"abc"), None);
        assert_eq!(parse_score(b"0x10"), Some(16.0));
        assert_eq!(parse_score(b"-0x1.8p1"), Some(-3.0));
    }

    #[test]
    fn ranges() {
        let r = score_range(b"(1", b"+inf").expect("valid");
        assert!(!r.above_min(1.0) && r.above_min(1.5) && r.below_max(f64::INFINITY));
        assert!(score_range(b"x", b"1").is_err());
        assert!(score_range(b"(nan", b"1").is_err());
        assert_eq!(
            score_range(b"", b" 2").map(|r| (r.min, r.max)),
            Ok((0.0, 2.0))
        );
        let lex = lex_range(&Bytes::from("[a"), &Bytes::from("(c")).expect("valid");
        assert!(lex.above_min(b"a") && lex.below_max(b"bz") && !lex.below_max(b"c"));
        assert!(lex_range(&Bytes::from("a"), &Bytes::from("+")).is_err());
        assert!(lex_range(&Bytes::from("+"), &Bytes::from("-"))
            .map(|r| r.is_empty())
            .unwrap_or(false));
    }
}
