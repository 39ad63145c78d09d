//! LCS (Redis 7.0 `t_string.c` `lcsCommand`): the longest common subsequence of two strings,
//! its length, or the matching ranges. The strings are read on their owner shards and the
//! command computed by the connection (`connection::commands::cross_shard`).

use bytes::Bytes;

use super::reply::{int_arg, is_opt, syntax_error};
use crate::resp::Frame;

/// `ERR The specified keys must contain string values`.
pub const NOT_STRINGS: &str = "ERR The specified keys must contain string values";

/// LCS of `a` and `b` with the command's options `opts` (`args[3..]`): the subsequence (bulk
/// string), `LEN` its length, `IDX` the map `matches` (ranges in `a` and `b`, last match
/// first, `[[a_start, a_end], [b_start, b_end] (, len)]`) and `len`.
///
/// The dynamic-programming table takes (len(a) + 1) · (len(b) + 1) · 4 bytes and may not
/// exceed `max_table_bytes` (Redis: `proto-max-bulk-len`).
///
/// Errors (Redis 7.0): `ERR syntax error`, a non-integer MINMATCHLEN, `ERR If you want both
/// the length and indexes, please just use IDX.`, `ERR Insufficient memory, transient memory
/// for LCS exceeds proto-max-bulk-len`.
pub fn compute(a: &[u8], b: &[u8], opts: &[Bytes], max_table_bytes: u64) -> Frame {
    let (mut get_len, mut get_idx, mut with_match_len) = (false, false, false);
    let mut min_match_len: u64 = 0;
    let mut j = 0;
    while j < opts.len() {
        if is_opt(&opts[j], "idx") {
            get_idx = true;
        } else if is_opt(&opts[j], "len") {
            get_len = true;
        } else if is_opt(&opts[j], "withmatchlen") {
            with_match_len = true;
        } else if is_opt(&opts[j], "minmatchlen") && j + 1 < opts.len() {
            match int_arg(&opts[j + 1]) {
                Ok(n) => min_match_len = u64::try_from(n).unwrap_or(0),
                Err(err) => return err,
            }
            j += 1;
        } else {
            return syntax_error();
        }
        j += 1;
    }
    if get_idx && get_len {
        return Frame::error("ERR If you want both the length and indexes, please just use IDX.");
    }
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen as u64 + 1).saturating_mul(blen as u64 + 1);
    if cells.saturating_mul(4) > max_table_bytes {
        return Frame::error(
            "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        );
    }
    let width = blen + 1;
    let mut table = vec![0u32; (alen + 1) * width];
    for i in 1..=alen {
        for k in 1..=blen {
            table[i * width + k] = if a[i - 1] == b[k - 1] {
                table[(i - 1) * width + k - 1] + 1
            } else {
                table[(i - 1) * width + k].max(table[i * width + k - 1])
            };
        }
    }
    let total = table[alen * width + blen];
    if get_len {
        return Frame::Integer(i64::from(total));
    }
    // Walk back from the end, collecting the subsequence and the contiguous ranges.
    let mut result = vec![0u8; total as usize];
    let mut idx = total as usize;
    let mut matches = Vec::new();
    let (mut i, mut k) = (alen, blen);
    // `a_start == alen` means "no range open".
    let (mut a_start, mut a_end, mut b_start, mut b_end) = (alen, 0, 0, 0);
    while i > 0 && k > 0 {
        let mut emit = false;
        if a[i - 1] == b[k - 1] {
            result[idx - 1] = a[i - 1];
            if a_start == alen {
                (a_start, a_end, b_start, b_end) = (i - 1, i - 1, k - 1, k - 1);
            } else if a_start == i && b_start == k {
                a_start -= 1;
                b_start -= 1;
            } else {
                emit = true;
            }
            if a_start == 0 || b_start == 0 {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            k -= 1;
        } else {
            if table[(i - 1) * width + k] > table[i * width + k - 1] {
                i -= 1;
            } else {
                k -= 1;
            }
            if a_start != alen {
                emit = true;
            }
        }
        if emit {
            let match_len = (a_end - a_start + 1) as u64;
            if get_idx && (min_match_len == 0 || match_len >= min_match_len) {
                let range = |from: usize, to: usize| {
                    Frame::Array(vec![Frame::Integer(from as i64), Frame::Integer(to as i64)])
                };
                let mut entry = vec![range(a_start, a_end), range(b_start, b_end)];
                if with_match_len {
                    entry.push(Frame::Integer(match_len as i64));
                }
                matches.push(Frame::Array(entry));
            }
            a_start = alen;
        }
    }
    if get_idx {
        return Frame::Map(vec![
            (Frame::bulk(b"matches"), Frame::Array(matches)),
            (Frame::bulk(b"len"), Frame::Integer(i64::from(total))),
        ]);
    }
    Frame::Bulk(Bytes::from(result))
}
