//! Bitmap commands on strings: SETBIT GETBIT (Redis 7.0 `bitops.c`). Bit 0 is the most
//! significant bit of byte 0.

use bytes::{Bytes, BytesMut};

use super::reply::{int_arg, wrong_type};
use super::strings::take_mut;
use crate::keyspace::{Db, Value};
use crate::notify::flags;
use crate::resp::Frame;

/// Redis `getBitOffsetFromArgument` failure text.
pub const BAD_OFFSET: &str = "ERR bit offset is not an integer or out of range";
/// Redis `setbitCommand` failure text for a value other than 0 or 1.
pub const BAD_BIT: &str = "ERR bit is not an integer or out of range";

/// The bit offset in `arg`: a non-negative integer whose byte (`offset / 8`) lies below
/// `max_len` bytes (`proto-max-bulk-len`; 2^32 - 1 with the 512 MiB default); else
/// [`BAD_OFFSET`].
fn bit_offset(arg: &[u8], max_len: u64) -> Result<u64, Frame> {
    match int_arg(arg) {
        Ok(offset) if offset >= 0 && (offset as u64 >> 3) < max_len => Ok(offset as u64),
        _ => Err(Frame::error(BAD_OFFSET)),
    }
}

/// The bit at `offset` of `bytes` (0 past the end).
fn bit_at(bytes: &[u8], offset: u64) -> bool {
    let mask = 0x80u8 >> (offset & 7);
    usize::try_from(offset >> 3)
        .ok()
        .and_then(|byte| bytes.get(byte))
        .is_some_and(|b| b & mask != 0)
}

/// `SETBIT key offset value` → the bit's previous value (0 or 1). Grows the string with
/// zero bytes to hold the bit, creates the key when missing, keeps the TTL. Errors:
/// [`BAD_OFFSET`] (negative, not an integer, or its byte at or past
/// `--proto-max-bulk-len`), [`BAD_BIT`] (value not 0 or 1), WRONGTYPE; checked in that
/// order, as Redis.
pub fn setbit(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let offset = match bit_offset(&args[2], db.max_string_len()) {
        Ok(offset) => offset,
        Err(e) => return e,
    };
    let on = match int_arg(&args[3]) {
        Ok(0) => false,
        Ok(1) => true,
        _ => return Frame::error(BAD_BIT),
    };
    // `offset >> 3` is below `max_string_len`, itself a `usize` (the option's type).
    let byte = (offset >> 3) as usize;
    let mask = 0x80u8 >> (offset & 7);
    let set = |buf: &mut BytesMut| {
        if buf.len() <= byte {
            buf.resize(byte + 1, 0);
        }
        let old = buf[byte] & mask != 0;
        if on {
            buf[byte] |= mask;
        } else {
            buf[byte] &= !mask;
        }
        old
    };
    // An unchanged bit of an existing string changes nothing (Redis 7.0.15 counts no
    // change, so nothing is logged either).
    if let Some(Value::Str(v)) = db.get(&args[1], now) {
        if v.get(byte).is_some_and(|b| (b & mask != 0) == on) {
            return Frame::Integer(i64::from(on));
        }
    }
    match db.get_mut(&args[1], now) {
        Some(Value::Str(v)) => {
            let grew = v.len() <= byte;
            let mut buf = take_mut(v);
            let old = set(&mut buf);
            *v = buf.freeze();
            // Redis 7.0 `setbitCommand`: an event only when the string grew or the bit changed.
            if grew || old != on {
                db.notify(flags::STRING, "setbit", &args[1]);
            }
            Frame::Integer(i64::from(old))
        }
        Some(_) => wrong_type(),
        None => {
            let mut buf = BytesMut::new();
            set(&mut buf);
            db.set(&args[1], Value::Str(buf.freeze()), false, now);
            db.notify(flags::STRING, "setbit", &args[1]);
            Frame::Integer(0)
        }
    }
}

/// `GETBIT key offset` → the bit at `offset` (0 or 1; 0 past the end or for a missing key).
/// Errors: [`BAD_OFFSET`] as SETBIT, then WRONGTYPE.
pub fn getbit(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let offset = match bit_offset(&args[2], db.max_string_len()) {
        Ok(offset) => offset,
        Err(e) => return e,
    };
    match db.get(&args[1], now) {
        Some(Value::Str(v)) => Frame::Integer(i64::from(bit_at(v, offset))),
        Some(_) => wrong_type(),
        None => Frame::Integer(0),
    }
}
