//! BITCOUNT and BITPOS (Redis 7.0 `bitops.c` `bitcountCommand`, `bitposCommand`): counting
//! and finding bits of a string in a byte or bit range. Bit 0 is the most significant bit of
//! byte 0.

use bytes::Bytes;

use super::reply::{int_arg, is_opt, syntax_error, wrong_type};
use crate::keyspace::{Db, Value};
use crate::resp::Frame;

/// Redis `bitposCommand` failure text for a bit other than 0 or 1.
pub const BAD_BITPOS_BIT: &str = "ERR The bit argument must be 1 or 0.";

/// A range of bits `first..=last` inside a string of `len` bytes; `None` when empty.
///
/// `start`/`end` are byte indexes, or bit indexes when `in_bits`; negative ones count from
/// the end; both are clamped as Redis does (`start < 0` → 0, `end` past the end → the last).
fn bit_range(len: usize, start: i64, end: i64, in_bits: bool) -> Option<(u64, u64)> {
    let mut total = len as i64;
    if in_bits {
        total = total.saturating_mul(8);
    }
    let start = if start < 0 { total + start } else { start }.max(0);
    let end = if end < 0 { total + end } else { end }.max(0);
    let end = end.min(total - 1);
    if start > end {
        return None;
    }
    let (start, end) = (start as u64, end as u64);
    if in_bits {
        Some((start, end))
    } else {
        Some((start * 8, end * 8 + 7))
    }
}

/// Number of set bits in the bit range `first..=last` of `bytes` (all inside it).
fn count_bits(bytes: &[u8], first: u64, last: u64) -> u64 {
    let (first_byte, last_byte) = ((first >> 3) as usize, (last >> 3) as usize);
    let count: u64 = bytes[first_byte..=last_byte]
        .iter()
        .map(|b| u64::from(b.count_ones()))
        .sum();
    // Bits of the edge bytes outside the range.
    let head = bytes[first_byte] & !(0xFFu8 >> (first & 7));
    let tail = bytes[last_byte] & (0xFFu16 >> ((last & 7) + 1)) as u8;
    count - u64::from(head.count_ones()) - u64::from(tail.count_ones())
}

/// `BITCOUNT key [start end [BYTE|BIT]]` → number of set bits in the range (the whole string
/// by default); 0 for a missing key (checked first, before the range, as Redis 7.0), WRONGTYPE,
/// `ERR value is not an integer or out of range`, `ERR syntax error` (3 or more than 5
/// arguments, or a unit other than BYTE/BIT).
pub fn bitcount(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let bytes = match db.get(&args[1], now) {
        Some(Value::Str(v)) => v.clone(),
        Some(_) => return wrong_type(),
        None => return Frame::Integer(0),
    };
    let range = match args.len() {
        2 => bit_range(bytes.len(), 0, -1, false),
        4 | 5 => {
            let start = match int_arg(&args[2]) {
                Ok(n) => n,
                Err(e) => return e,
            };
            let end = match int_arg(&args[3]) {
                Ok(n) => n,
                Err(e) => return e,
            };
            if start < 0 && end < 0 && start > end {
                return Frame::Integer(0);
            }
            let in_bits = match args.get(4) {
                None => false,
                Some(unit) if is_opt(unit, "bit") => true,
                Some(unit) if is_opt(unit, "byte") => false,
                Some(_) => return syntax_error(),
            };
            bit_range(bytes.len(), start, end, in_bits)
        }
        _ => return syntax_error(),
    };
    match range {
        Some((first, last)) => Frame::Integer(count_bits(&bytes, first, last) as i64),
        None => Frame::Integer(0),
    }
}

/// The position of the first bit equal to `bit` in `first..=last` of `bytes`.
fn find_bit(bytes: &[u8], bit: bool, first: u64, last: u64) -> Option<u64> {
    let skip = if bit { 0x00 } else { 0xFF };
    let mut pos = first;
    while pos <= last {
        let byte = bytes[(pos >> 3) as usize];
        if pos & 7 == 0 && last - pos >= 7 && byte == skip {
            pos += 8;
            continue;
        }
        if (byte & (0x80 >> (pos & 7)) != 0) == bit {
            return Some(pos);
        }
        pos += 1;
    }
    None
}

/// `BITPOS key bit [start [end [BYTE|BIT]]]` → the position of the first `bit` (0 or 1) in
/// the range, counted from the start of the string, or -1. A missing key is all zeros (0 for
/// bit 0, -1 for bit 1). Looking for 0 without an explicit end, a string of all ones gives
/// the first position past it (Redis: the string is right-padded with zeros). Errors in
/// Redis 7.0's order: not an integer, [`BAD_BITPOS_BIT`], WRONGTYPE, start, unit
/// (`ERR syntax error`), end; more than 6 arguments: `ERR syntax error`.
pub fn bitpos(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let bit = match int_arg(&args[2]) {
        Ok(0) => false,
        Ok(1) => true,
        Ok(_) => return Frame::error(BAD_BITPOS_BIT),
        Err(e) => return e,
    };
    let bytes = match db.get(&args[1], now) {
        Some(Value::Str(v)) => v.clone(),
        Some(_) => return wrong_type(),
        None => return Frame::Integer(if bit { -1 } else { 0 }),
    };
    let mut end_given = false;
    let range = match args.len() {
        3 => bit_range(bytes.len(), 0, -1, false),
        4..=6 => {
            let start = match int_arg(&args[3]) {
                Ok(n) => n,
                Err(e) => return e,
            };
            let in_bits = match args.get(5) {
                None => false,
                Some(unit) if is_opt(unit, "bit") => true,
                Some(unit) if is_opt(unit, "byte") => false,
                Some(_) => return syntax_error(),
            };
            let end = match args.get(4) {
                Some(arg) => match int_arg(arg) {
                    Ok(n) => {
                        end_given = true;
                        n
                    }
                    Err(e) => return e,
                },
                None => -1,
            };
            bit_range(bytes.len(), start, end, in_bits)
        }
        _ => return syntax_error(),
    };
    let Some((first, last)) = range else {
        return Frame::Integer(-1);
    };
    match find_bit(&bytes, bit, first, last) {
        Some(pos) => Frame::Integer(pos as i64),
        // Looking for a clear bit with no explicit end: the string continues with zeros
        // past its last byte in the range.
        None if !bit && !end_given => Frame::Integer((((last >> 3) + 1) * 8) as i64),
        None => Frame::Integer(-1),
    }
}
