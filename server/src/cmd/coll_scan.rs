//! SSCAN, HSCAN and ZSCAN (Redis 7.0 `db.c` `scanGenericCommand`), and the option parsing they share
//! with SCAN.
//!
//! Scheme: every element has a fixed 48-bit *scan position*, a keyed hash of the element
//! (one key per process, so positions never change while the server runs). A call sorts the
//! elements at or after the cursor by position and returns the first `COUNT` of them, plus
//! every element sharing the last position returned; the next cursor is the position of the
//! first element not returned, 0 when none is left. So every element present for the whole
//! scan is returned, whatever is added or removed in between, and the scan ends. Collections
//! are not indexed by position: a call costs O(n log n) in the collection's size `n` (hash
//! every element, sort those at or after the cursor). As Redis does for its compact encodings,
//! such a small collection is returned whole in one call with cursor 0, whatever the cursor and
//! COUNT: an intset set (`set-max-intset-entries` integers) ascending, a small hash
//! ([`crate::keyspace::Hash`]) in insertion order, a listpack sorted set (default thresholds)
//! in score order.

use std::hash::{BuildHasher, RandomState};
use std::sync::OnceLock;

use bytes::Bytes;

use super::reply::{int_arg, is_opt, syntax_error, wrong_type};
use super::sets::intset_order;
use crate::keyspace::memory::encoding;
use crate::keyspace::{glob::string_match, Db, Value};
use crate::resp::double::double_text;
use crate::resp::num::parse_cursor;
use crate::resp::Frame;
use crate::runtime::EncodingKnobs;

/// Bits of an element's scan position (as the keyspace SCAN's).
const POSITION_BITS: u32 = 48;

/// SCAN's default COUNT (Redis 7.0).
const DEFAULT_COUNT: usize = 10;

/// The options of SCAN / SSCAN / HSCAN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ScanOptions<'a> {
    /// COUNT: elements visited per call, at least 1 (default 10).
    pub count: usize,
    /// MATCH pattern (Redis glob); `None` when absent or `*`.
    pub pattern: Option<&'a [u8]>,
    /// TYPE filter (SCAN only).
    pub type_filter: Option<&'a [u8]>,
}

/// Parses `[MATCH pattern] [COUNT count] [TYPE type]` from `args` (TYPE only when
/// `allow_type`). A non-integer COUNT is `ERR value is not an integer or out of range`; COUNT
/// below 1, an unknown or incomplete option is `ERR syntax error` (Redis 7.0).
pub(super) fn scan_options(args: &[Bytes], allow_type: bool) -> Result<ScanOptions<'_>, Frame> {
    let mut options = ScanOptions {
        count: DEFAULT_COUNT,
        pattern: None,
        type_filter: None,
    };
    let mut pairs = args.chunks(2);
    for pair in &mut pairs {
        let [name, value] = pair else {
            return Err(syntax_error());
        };
        if is_opt(name, "count") {
            match int_arg(value)? {
                n if n >= 1 => options.count = usize::try_from(n).unwrap_or(usize::MAX),
                _ => return Err(syntax_error()),
            }
        } else if is_opt(name, "match") {
            options.pattern = Some(&value[..]).filter(|p| *p != b"*");
        } else if is_opt(name, "type") && allow_type {
            options.type_filter = Some(&value[..]);
        } else {
            return Err(syntax_error());
        }
    }
    Ok(options)
}

/// The process-wide key of the element scan positions.
fn hasher() -> &'static RandomState {
    static HASHER: OnceLock<RandomState> = OnceLock::new();
    HASHER.get_or_init(RandomState::new)
}

/// The fixed scan position of `element`.
fn position(element: &[u8]) -> u64 {
    hasher().hash_one(element) >> (64 - POSITION_BITS)
}

/// One call's walk over `elements` (each with what is replied next to it): the next cursor
/// and the elements visited, in position order; everything with cursor 0 when `whole`.
fn walk<'a, T>(
    elements: impl Iterator<Item = (&'a Bytes, T)>,
    cursor: u64,
    count: usize,
    whole: bool,
) -> (u64, Vec<(&'a Bytes, T)>) {
    if whole {
        return (0, elements.collect());
    }
    let mut ahead: Vec<(u64, &'a Bytes, T)> = elements
        .map(|(e, extra)| (position(e), e, extra))
        .filter(|(pos, _, _)| *pos >= cursor)
        .collect();
    ahead.sort_unstable_by_key(|(pos, _, _)| *pos);
    let mut end = ahead.len().min(count.max(1));
    while end < ahead.len() && ahead[end].0 == ahead[end - 1].0 {
        end += 1;
    }
    let next = ahead.get(end).map_or(0, |(pos, _, _)| *pos);
    ahead.truncate(end);
    (next, ahead.into_iter().map(|(_, e, x)| (e, x)).collect())
}

/// The reply `[next cursor as bulk, items]` (an array in RESP3 too).
fn scan_reply(next: u64, items: Vec<Frame>) -> Frame {
    Frame::Array(vec![
        Frame::Bulk(Bytes::from(next.to_string())),
        Frame::Array(items),
    ])
}

/// Shared SSCAN / HSCAN prologue in Redis's order: the cursor (`ERR invalid cursor`), the key
/// (missing → `Ok(None)`, the empty scan reply), its type (WRONGTYPE), then the options.
fn start<'a>(
    db: &'a mut Db,
    args: &'a [Bytes],
    now: u64,
    type_name: &str,
) -> Result<Option<(u64, &'a Value, ScanOptions<'a>)>, Frame> {
    let cursor = parse_cursor(&args[2]).ok_or_else(|| Frame::error("ERR invalid cursor"))?;
    let Some(value) = db.get(&args[1], now) else {
        return Ok(None);
    };
    if value.type_name() != type_name {
        return Err(wrong_type());
    }
    let options = scan_options(&args[3..], false)?;
    Ok(Some((cursor, value, options)))
}

/// Whether `element` passes the MATCH pattern.
fn matches(options: &ScanOptions<'_>, element: &[u8]) -> bool {
    options
        .pattern
        .is_none_or(|p| string_match(p, element, false))
}

/// Whether a sorted set is small enough to be answered whole (Redis's listpack encoding at
/// its default thresholds).
fn answered_whole(value: &Value) -> bool {
    encoding(value, &EncodingKnobs::default()) == "listpack"
}

/// `SSCAN key cursor [MATCH pattern] [COUNT count]` → `[next cursor, [members]]`; a missing
/// key is `["0", []]`. Errors: `ERR invalid cursor`, WRONGTYPE, then the option errors of
/// [`scan_options`] (TYPE is `ERR syntax error`).
pub fn sscan(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let intset_entries = db.intset_entries();
    let (cursor, value, options) = match start(db, args, now, "set") {
        Ok(Some(found)) => found,
        Ok(None) => return scan_reply(0, Vec::new()),
        Err(e) => return e,
    };
    let Value::Set(set) = value else {
        return wrong_type();
    };
    // An intset is answered whole, ascending, as Redis does.
    let (next, visited) = match intset_order(set.iter(), intset_entries) {
        Some(sorted) => walk(sorted.into_iter().map(|m| (m, ())), cursor, 0, true),
        None => walk(set.iter().map(|m| (m, ())), cursor, options.count, false),
    };
    let items = visited
        .into_iter()
        .filter(|(m, _)| matches(&options, m))
        .map(|(m, _)| Frame::Bulk(m.clone()))
        .collect();
    scan_reply(next, items)
}

/// `HSCAN key cursor [MATCH pattern] [COUNT count]` → `[next cursor, [field, value, ...]]`
/// (MATCH applies to the field); a missing key is `["0", []]`. Errors as [`sscan`].
pub fn hscan(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let (cursor, value, options) = match start(db, args, now, "hash") {
        Ok(Some(found)) => found,
        Ok(None) => return scan_reply(0, Vec::new()),
        Err(e) => return e,
    };
    let Value::Hash(map) = value else {
        return wrong_type();
    };
    // A small hash (Redis's listpack) is answered whole, in insertion order.
    let whole = map.is_small();
    let (next, visited) = walk(map.iter(), cursor, options.count, whole);
    let items = visited
        .into_iter()
        .filter(|(f, _)| matches(&options, f))
        .flat_map(|(f, v)| [Frame::Bulk(f.clone()), Frame::Bulk(v.clone())])
        .collect();
    scan_reply(next, items)
}

/// `ZSCAN key cursor [MATCH pattern] [COUNT count]` → `[next cursor, [member, score, ...]]`
/// (MATCH applies to the member; scores as bulk strings in `%.17g` form, RESP3 too); a
/// missing key is `["0", []]`. Errors as [`sscan`].
pub fn zscan(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let (cursor, value, options) = match start(db, args, now, "zset") {
        Ok(Some(found)) => found,
        Ok(None) => return scan_reply(0, Vec::new()),
        Err(e) => return e,
    };
    let Value::ZSet(zset) = value else {
        return wrong_type();
    };
    let whole = answered_whole(value);
    // A listpack is walked in score order, as Redis does.
    let elements: Vec<(&Bytes, f64)> = if whole {
        zset.iter().collect()
    } else {
        zset.entries().collect()
    };
    let (next, visited) = walk(elements.into_iter(), cursor, options.count, whole);
    let items = visited
        .into_iter()
        .filter(|(m, _)| matches(&options, m))
        .flat_map(|(m, s)| {
            [
                Frame::Bulk(m.clone()),
                Frame::Bulk(Bytes::from(double_text(s))),
            ]
        })
        .collect();
    scan_reply(next, items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(items: &[&str]) -> Vec<Bytes> {
        items.iter().map(|s| Bytes::from(s.to_string())).collect()
    }

    #[test]
    fn options() {
        let args = b(&["MATCH", "a*", "count", "5"]);
        assert_eq!(
            scan_options(&args, false),
            Ok(ScanOptions {
                count: 5,
                pattern: Some(&b"a*"[..]),
                type_filter: None
            })
        );
        let star = b(&["match", "*"]);
        assert_eq!(scan_options(&star, false).map(|o| o.pattern), Ok(None));
        for bad in [
            &["count", "0"][..],
            &["count"],
            &["type", "set"],
            &["foo", "1"],
        ] {
            assert_eq!(scan_options(&b(bad), false), Err(syntax_error()), "{bad:?}");
        }
        assert_eq!(
            scan_options(&b(&["count", "x"]), false),
            Err(Frame::error("ERR value is not an integer or out of range"))
        );
        assert_eq!(
            scan_options(&b(&["type", "set"]), true).map(|o| o.type_filter),
            Ok(Some(&b"set"[..]))
        );
    }

    #[test]
    fn walk_visits_everything_once_in_position_order() {
        let elements: Vec<Bytes> = (0..500).map(|i| Bytes::from(format!("e{i}"))).collect();
        let mut cursor = 0;
        let mut seen = Vec::new();
        let mut calls = 0;
        loop {
            let (next, visited) = walk(elements.iter().map(|e| (e, ())), cursor, 7, false);
            assert!(visited.len() >= 7 || next == 0);
            seen.extend(visited.into_iter().map(|(e, _)| e.clone()));
            calls += 1;
            if next == 0 {
                break;
            }
            assert!(next > cursor);
            cursor = next;
        }
        assert!(calls >= 500 / 7);
        seen.sort();
        let mut all = elements.clone();
        all.sort();
        assert_eq!(seen, all);
    }

    #[test]
    fn walk_whole_ignores_cursor_and_count() {
        let elements = b(&["a", "b", "c"]);
        let (next, visited) = walk(elements.iter().map(|e| (e, ())), 12345, 1, true);
        assert_eq!((next, visited.len()), (0, 3));
    }
}
