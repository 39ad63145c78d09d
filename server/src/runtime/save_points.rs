//! The `save` parameter (Redis 7.0 `setConfigSaveOption`/`getConfigSaveOption`): pairs of
//! `seconds changes` separated by single spaces. shardline takes no RDB snapshots (its
//! persistence is the append-only log, and SAVE/BGSAVE rewrite that log), so the points are
//! only kept and shown: CONFIG SET accepts what Redis accepts, refuses what Redis refuses, and
//! CONFIG GET answers what Redis would.

/// One save point: a snapshot after `seconds` if at least `changes` writes happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SavePoint {
    /// Seconds since the last snapshot (Redis's `time_t`), at least 1.
    pub seconds: i64,
    /// Writes since the last snapshot (Redis's `int`: the parsed number truncated to 32 bits).
    pub changes: i32,
}

/// Redis's error for a malformed `save` value.
pub const INVALID: &str = "Invalid save parameters";

/// Parses a `save` value: the words between single spaces (so two spaces in a row make an
/// empty word, which C's `strtoll` reads as 0) in pairs; the seconds at least 1, the changes
/// at least 0. The empty string clears the points. Error: [`INVALID`].
pub fn parse(value: &str) -> Result<Vec<SavePoint>, String> {
    if value.is_empty() {
        return Ok(Vec::new());
    }
    let words: Vec<&str> = value.split(' ').collect();
    if !words.len().is_multiple_of(2) {
        return Err(INVALID.into());
    }
    let mut points = Vec::with_capacity(words.len() / 2);
    for pair in words.chunks(2) {
        let seconds = strtoll(pair[0]).filter(|s| *s >= 1);
        let changes = strtoll(pair[1]).filter(|c| *c >= 0);
        let (Some(seconds), Some(changes)) = (seconds, changes) else {
            return Err(INVALID.into());
        };
        points.push(SavePoint {
            seconds,
            // Redis stores it in an `int`: the low 32 bits.
            changes: changes as i32,
        });
    }
    Ok(points)
}

/// The value CONFIG GET shows: `seconds changes` pairs joined by single spaces.
pub fn render(points: &[SavePoint]) -> String {
    points
        .iter()
        .map(|p| format!("{} {}", p.seconds, p.changes))
        .collect::<Vec<_>>()
        .join(" ")
}

/// C's `strtoll(word, &end, 10)` with `*end == '\0'` required: leading white space, an
/// optional sign, decimal digits, nothing after them; saturated at the `i64` bounds; the
/// empty word is 0. `None` when something else is left over.
fn strtoll(word: &str) -> Option<i64> {
    let trimmed = word.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    if word.is_empty() {
        return Some(0);
    }
    let (negative, digits) = match trimmed.as_bytes().first() {
        Some(b'-') => (true, &trimmed[1..]),
        Some(b'+') => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut n: i64 = 0;
    for b in digits.bytes() {
        let d = i64::from(b - b'0');
        n = if negative {
            n.saturating_mul(10).saturating_sub(d)
        } else {
            n.saturating_mul(10).saturating_add(d)
        };
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(value: &str) -> Result<String, String> {
        parse(value).map(|p| render(&p))
    }

    #[test]
    fn accepts_and_renders_as_redis() {
        assert_eq!(shown(""), Ok(String::new()));
        assert_eq!(shown("3000 5"), Ok("3000 5".into()));
        assert_eq!(shown("3000 5 0010 3"), Ok("3000 5 10 3".into()));
        assert_eq!(shown("+3000 5"), Ok("3000 5".into()));
        assert_eq!(shown("3000 5 3000 5"), Ok("3000 5 3000 5".into()));
        // An empty last word is 0 changes.
        assert_eq!(shown("3000 "), Ok("3000 0".into()));
        // Changes are an int: truncated to 32 bits, after strtoll saturates.
        assert_eq!(
            shown("9999999999 99999999999"),
            Ok("9999999999 1215752191".into())
        );
        assert_eq!(
            shown("3000 5 9999999999 99999999999999999999"),
            Ok("3000 5 9999999999 -1".into())
        );
    }

    #[test]
    fn refuses_as_redis() {
        for bad in [
            "3000",
            "a b",
            "3000  5",
            " 3000 5",
            "3000 5 ",
            "0x10 5",
            "0 5",
            "3000 -1",
            "3000 5 10 -3",
            "- 5",
        ] {
            assert_eq!(parse(bad), Err(INVALID.to_string()), "{bad:?}");
        }
    }
}
