//! BITFIELD and BITFIELD_RO (Redis 7.0 `bitops.c` `bitfieldGeneric`): signed and unsigned
//! integers of 1 to 64 (signed) or 63 (unsigned) bits at any bit offset of a string, read,
//! set and incremented with WRAP, SAT or FAIL overflow handling.

use bytes::{Bytes, BytesMut};

use super::reply::{int_arg, is_opt, syntax_error, wrong_type};
use crate::keyspace::{Db, Value};
use crate::notify::flags;
use crate::resp::Frame;

/// Redis `getBitfieldTypeFromArgument` failure text.
pub const BAD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";
/// Redis's reply to an OVERFLOW other than WRAP, SAT or FAIL.
pub const BAD_OVERFLOW: &str = "ERR Invalid OVERFLOW type specified";
/// BITFIELD_RO's reply to SET, INCRBY (or OVERFLOW followed by one).
pub const RO_ONLY_GET: &str = "ERR BITFIELD_RO only supports the GET subcommand";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Get,
    Set,
    Incrby,
}

/// One parsed operation (Redis `struct bitfieldOp`).
struct FieldOp {
    op: Op,
    offset: u64,
    bits: u32,
    signed: bool,
    value: i64,
    overflow: Overflow,
}

/// `i<1..=64>` or `u<1..=63>` (prefix case-sensitive, as Redis) → (signed, bits).
fn field_type(arg: &[u8]) -> Result<(bool, u32), Frame> {
    let bad = || Frame::error(BAD_TYPE);
    let (signed, max) = match arg.first() {
        Some(b'i') => (true, 64),
        Some(b'u') => (false, 63),
        _ => return Err(bad()),
    };
    match crate::resp::num::parse_i64(&arg[1..]) {
        Some(bits) if (1..=max).contains(&bits) => Ok((signed, bits as u32)),
        _ => Err(bad()),
    }
}

/// A bit offset, or with `#N` the offset `N × bits` (Redis `getBitOffsetFromArgument` with
/// `hash`); its byte must lie below `max_len`.
fn field_offset(arg: &[u8], bits: u32, max_len: u64) -> Result<u64, Frame> {
    let bad = || Frame::error(super::bits::BAD_OFFSET);
    let (hash, digits) = match arg.split_first() {
        Some((b'#', rest)) => (true, rest),
        _ => (false, arg),
    };
    let mut offset = crate::resp::num::parse_i64(digits).ok_or_else(bad)?;
    if hash {
        offset = offset.wrapping_mul(i64::from(bits));
    }
    if offset < 0 || (offset as u64 >> 3) >= max_len {
        return Err(bad());
    }
    Ok(offset as u64)
}

/// Parses the operations after the key (Redis's order of checks).
fn parse_ops(args: &[Bytes], max_len: u64) -> Result<Vec<FieldOp>, Frame> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < args.len() {
        let remaining = args.len() - j - 1;
        let sub = &args[j];
        let op = if is_opt(sub, "get") && remaining >= 2 {
            Op::Get
        } else if is_opt(sub, "set") && remaining >= 3 {
            Op::Set
        } else if is_opt(sub, "incrby") && remaining >= 3 {
            Op::Incrby
        } else if is_opt(sub, "overflow") && remaining >= 1 {
            let kind = &args[j + 1];
            overflow = if is_opt(kind, "wrap") {
                Overflow::Wrap
            } else if is_opt(kind, "sat") {
                Overflow::Sat
            } else if is_opt(kind, "fail") {
                Overflow::Fail
            } else {
                return Err(Frame::error(BAD_OVERFLOW));
            };
            j += 2;
            continue;
        } else {
            return Err(syntax_error());
        };
        let (signed, bits) = field_type(&args[j + 1])?;
        let offset = field_offset(&args[j + 2], bits, max_len)?;
        let value = if op == Op::Get {
            0
        } else {
            int_arg(&args[j + 3])?
        };
        ops.push(FieldOp {
            op,
            offset,
            bits,
            signed,
            value,
            overflow,
        });
        j += if op == Op::Get { 3 } else { 4 };
    }
    Ok(ops)
}

/// The `bits`-wide unsigned integer at bit `offset` of `bytes` (zeros past the end).
fn get_unsigned(bytes: &[u8], offset: u64, bits: u32) -> u64 {
    let mut value = 0u64;
    for i in 0..u64::from(bits) {
        let pos = offset + i;
        let bit = usize::try_from(pos >> 3)
            .ok()
            .and_then(|b| bytes.get(b))
            .is_some_and(|b| b & (0x80 >> (pos & 7)) != 0);
        value = (value << 1) | u64::from(bit);
    }
    value
}

/// The `bits`-wide two's complement integer at bit `offset` of `bytes`.
fn get_signed(bytes: &[u8], offset: u64, bits: u32) -> i64 {
    let raw = get_unsigned(bytes, offset, bits);
    if bits == 64 {
        raw as i64
    } else {
        // Sign-extend from `bits`.
        let shift = 64 - bits;
        ((raw << shift) as i64) >> shift
    }
}

/// Writes the low `bits` of `value` at bit `offset` of `buf` (long enough).
fn set_bits(buf: &mut [u8], offset: u64, bits: u32, value: u64) {
    for i in 0..u64::from(bits) {
        let on = value & (1u64 << (u64::from(bits) - 1 - i)) != 0;
        let pos = offset + i;
        let (byte, mask) = ((pos >> 3) as usize, 0x80u8 >> (pos & 7));
        if on {
            buf[byte] |= mask;
        } else {
            buf[byte] &= !mask;
        }
    }
}

/// `value + incr` for a field of `bits` bits: `(result, overflowed)`, the result wrapped or
/// saturated per `overflow` (Redis `checkSignedBitfieldOverflow` /
/// `checkUnsignedBitfieldOverflow`; a SET is `value` with `incr` 0). Unsigned values pass as
/// their 64-bit pattern, as Redis casts them.
fn add_checked(
    value: i128,
    incr: i128,
    bits: u32,
    signed: bool,
    overflow: Overflow,
) -> (i128, bool) {
    let (min, max) = if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    let sum = value + incr;
    if (min..=max).contains(&sum) {
        return (sum, false);
    }
    let result = match overflow {
        Overflow::Sat if sum > max => max,
        Overflow::Sat => min,
        _ => {
            let modulus = 1i128 << bits;
            let wrapped = sum.rem_euclid(modulus);
            if signed && wrapped > max {
                wrapped - modulus
            } else {
                wrapped
            }
        }
    };
    (result, true)
}

/// `BITFIELD key [GET type offset | SET type offset value | INCRBY type offset increment |
/// OVERFLOW WRAP|SAT|FAIL]...` → one reply per GET/SET/INCRBY: the value read, the previous
/// value (SET), the new value (INCRBY), or nil when FAIL refused an overflowing write. Any
/// SET/INCRBY creates or grows the string to hold its farthest bit before the operations run.
/// Errors (before anything changes): `ERR syntax error`, [`BAD_OVERFLOW`], [`BAD_TYPE`],
/// `ERR bit offset is not an integer or out of range`, not an integer, WRONGTYPE.
pub fn bitfield(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    generic(db, args, now, false)
}

/// `BITFIELD_RO key [GET type offset]...`: BITFIELD restricted to GET; a SET or INCRBY gets
/// [`RO_ONLY_GET`] (after the arguments parse).
pub fn bitfield_ro(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    generic(db, args, now, true)
}

fn generic(db: &mut Db, args: &[Bytes], now: u64, read_only: bool) -> Frame {
    let ops = match parse_ops(args, db.max_string_len()) {
        Ok(ops) => ops,
        Err(e) => return e,
    };
    let writes = ops.iter().filter(|o| o.op != Op::Get);
    let Some(highest) = writes.map(|o| o.offset + u64::from(o.bits) - 1).max() else {
        return match db.get(&args[1], now) {
            Some(Value::Str(v)) => {
                let v = v.clone();
                Frame::Array(ops.iter().map(|o| read(&v, o)).collect())
            }
            Some(_) => wrong_type(),
            None => Frame::Array(ops.iter().map(|o| read(&[], o)).collect()),
        };
    };
    if read_only {
        return Frame::error(RO_ONLY_GET);
    }
    // `highest >> 3` is below `max_string_len` (checked per offset) plus 8 bytes.
    let needed = (highest >> 3) as usize + 1;
    let old = match db.get(&args[1], now) {
        Some(Value::Str(v)) => Some(v.clone()),
        Some(_) => return wrong_type(),
        None => None,
    };
    let mut buf = BytesMut::from(old.as_deref().unwrap_or_default());
    // Created or grown: every SET/INCRBY done counts as a change (Redis's `dirty`).
    let grown = old.as_ref().is_none_or(|o| o.len() < needed);
    if buf.len() < needed {
        buf.resize(needed, 0);
    }
    let mut changes = false;
    let mut replies = Vec::with_capacity(ops.len());
    for op in &ops {
        let before = read(&buf, op);
        let reply = apply(&mut buf, op);
        // A SET or INCRBY done (not failed by OVERFLOW FAIL) that changed the field.
        changes |= op.op != Op::Get && reply != Frame::Null && (grown || read(&buf, op) != before);
        replies.push(reply);
    }
    // Only a created, grown or changed string is written (and counted, and logged), as
    // Redis 7.0.15 counts changes.
    if old.as_deref() != Some(&buf[..]) {
        db.set(&args[1], Value::Str(buf.freeze()), true, now);
    }
    // Redis 7.0.15's `setbit` event of a BITFIELD that changed something.
    if changes {
        db.notify(flags::STRING, "setbit", &args[1]);
    }
    Frame::Array(replies)
}

/// A GET's reply.
fn read(bytes: &[u8], op: &FieldOp) -> Frame {
    if op.signed {
        Frame::Integer(get_signed(bytes, op.offset, op.bits))
    } else {
        Frame::Integer(get_unsigned(bytes, op.offset, op.bits) as i64)
    }
}

/// Runs one operation on `buf` (long enough for the writes) and returns its reply.
fn apply(buf: &mut [u8], op: &FieldOp) -> Frame {
    if op.op == Op::Get {
        return read(buf, op);
    }
    let old = if op.signed {
        i128::from(get_signed(buf, op.offset, op.bits))
    } else {
        i128::from(get_unsigned(buf, op.offset, op.bits))
    };
    let (value, incr) = match op.op {
        Op::Incrby => (old, i128::from(op.value)),
        _ if op.signed => (i128::from(op.value), 0),
        _ => (i128::from(op.value as u64), 0),
    };
    let (new, overflowed) = add_checked(value, incr, op.bits, op.signed, op.overflow);
    if overflowed && op.overflow == Overflow::Fail {
        return Frame::Null;
    }
    set_bits(buf, op.offset, op.bits, new as u64);
    let reply = if op.op == Op::Incrby { new } else { old };
    Frame::Integer(reply as i64)
}
