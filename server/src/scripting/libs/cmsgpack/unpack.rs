//! `cmsgpack.unpack`, `unpack_one` and `unpack_limit`: lua-cmsgpack 0.4.0's decoder.
//!
//! Decodes positive/negative fixints, uint/int 8..64 (uint64 above 2^63 comes back negative,
//! int64 as a double, as in Redis), float32/64, nil, booleans, fixstr/str8/16/32, arrays and
//! maps; anything else (bin, ext, 0xc1) is `Bad data format in input.`, and truncated input
//! is `Missing bytes in input.`.

use std::ffi::c_int;

use mlua::ffi;

use super::super::raw::{
    check_bytes, check_integer, check_stack, opt_integer, push_bytes, LuaResult, Raise,
};

/// Why decoding stopped.
enum DecodeError {
    /// `Missing bytes in input.`
    Eof,
    /// `Bad data format in input.`
    BadFormat,
    /// A Lua failure (stack overflow, bad table key).
    Lua(Raise),
}

impl From<Raise> for DecodeError {
    fn from(r: Raise) -> Self {
        DecodeError::Lua(r)
    }
}

/// Read position in the input.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn left(&self) -> usize {
        self.data.len() - self.pos
    }

    /// The next `n` bytes, without consuming them.
    fn need(&self, n: usize) -> Result<&[u8], DecodeError> {
        if self.left() < n {
            return Err(DecodeError::Eof);
        }
        Ok(&self.data[self.pos..self.pos + n])
    }

    fn be_uint(&self, offset: usize, width: usize) -> Result<u64, DecodeError> {
        let b = self.need(offset + width)?;
        Ok(b[offset..]
            .iter()
            .fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    }
}

const TOO_MANY: &str = "too many return values at once; use unpack_one or unpack_limit instead.";

/// What the head of an item asked for.
enum Item {
    /// A scalar was pushed.
    Scalar,
    /// An array of this many elements starts.
    Array(u64),
    /// A map of this many pairs starts.
    Map(u64),
}

/// Reads the head of one item at the cursor; scalars are pushed and consumed whole.
unsafe fn decode_head(l: *mut ffi::lua_State, c: &mut Cursor<'_>) -> Result<Item, DecodeError> {
    unsafe {
        let first = c.need(1)?[0];
        check_stack(l, 1, TOO_MANY)?;
        match first {
            0xcc..=0xcf => {
                let width = 1usize << (first - 0xcc);
                let v = c.be_uint(1, width)?;
                // Redis pushes unsigned values as lua_Integer: uint64 above 2^63 turns negative.
                ffi::lua_pushinteger(l, v as i64 as ffi::lua_Integer);
                c.pos += 1 + width;
            }
            0xd0..=0xd2 => {
                let width = 1usize << (first - 0xd0);
                let v = c.be_uint(1, width)?;
                let shift = 64 - 8 * width as u32;
                let v = ((v << shift) as i64) >> shift;
                ffi::lua_pushinteger(l, v as ffi::lua_Integer);
                c.pos += 1 + width;
            }
            0xd3 => {
                let v = c.be_uint(1, 8)? as i64;
                ffi::lua_pushnumber(l, v as f64);
                c.pos += 9;
            }
            0xc0 => {
                ffi::lua_pushnil(l);
                c.pos += 1;
            }
            0xc2 | 0xc3 => {
                ffi::lua_pushboolean(l, c_int::from(first == 0xc3));
                c.pos += 1;
            }
            0xca => {
                let v = c.be_uint(1, 4)? as u32;
                ffi::lua_pushnumber(l, f64::from(f32::from_bits(v)));
                c.pos += 5;
            }
            0xcb => {
                let v = c.be_uint(1, 8)?;
                ffi::lua_pushnumber(l, f64::from_bits(v));
                c.pos += 9;
            }
            0xd9..=0xdb => {
                let width = 1usize << (first - 0xd9);
                let len = c.be_uint(1, width)?;
                let head = 1 + width;
                if ((c.left() - head) as u64) < len {
                    return Err(DecodeError::Eof);
                }
                let start = c.pos + head;
                let end = start + len as usize;
                push_bytes(l, &c.data[start..end]);
                c.pos = end;
            }
            0xdc | 0xdd => {
                let width = if first == 0xdc { 2 } else { 4 };
                let n = c.be_uint(1, width)?;
                c.pos += 1 + width;
                return Ok(Item::Array(n));
            }
            0xde | 0xdf => {
                let width = if first == 0xde { 2 } else { 4 };
                let n = c.be_uint(1, width)?;
                c.pos += 1 + width;
                return Ok(Item::Map(n));
            }
            _ if first & 0x80 == 0 => {
                ffi::lua_pushinteger(l, ffi::lua_Integer::from(first));
                c.pos += 1;
            }
            _ if first & 0xe0 == 0xe0 => {
                ffi::lua_pushinteger(l, ffi::lua_Integer::from(first as i8));
                c.pos += 1;
            }
            _ if first & 0xe0 == 0xa0 => {
                let len = usize::from(first & 0x1f);
                let b = c.need(1 + len)?;
                push_bytes(l, &b[1..]);
                c.pos += 1 + len;
            }
            _ if first & 0xf0 == 0x90 => {
                c.pos += 1;
                return Ok(Item::Array(u64::from(first & 0xf)));
            }
            _ if first & 0xf0 == 0x80 => {
                c.pos += 1;
                return Ok(Item::Map(u64::from(first & 0xf)));
            }
            _ => return Err(DecodeError::BadFormat),
        }
        Ok(Item::Scalar)
    }
}

/// A container being filled.
enum Frame {
    /// Next index to push and the element count.
    Array { next: u64, len: u64 },
    /// Pairs still to read, and whether the current pair's key is on the stack.
    Map { left: u64, have_key: bool },
}

/// Decodes one value and pushes it.
///
/// Iterative (nesting is bounded only by the Lua stack, about 4000 levels), with the Lua
/// stack use of lua-cmsgpack's recursion: table and index per array level, table and key
/// per map level, and its `luaL_checkstack` calls and messages.
unsafe fn decode_value(l: *mut ffi::lua_State, c: &mut Cursor<'_>) -> Result<(), DecodeError> {
    unsafe {
        let mut frames: Vec<Frame> = Vec::new();
        loop {
            match decode_head(l, c)? {
                Item::Scalar => {}
                Item::Array(len) => {
                    ffi::lua_createtable(l, 0, 0);
                    check_stack(l, 1, "in function mp_decode_to_lua_array")?;
                    if len > 0 {
                        ffi::lua_pushnumber(l, 1.0);
                        frames.push(Frame::Array { next: 2, len });
                        continue;
                    }
                }
                Item::Map(left) => {
                    ffi::lua_createtable(l, 0, 0);
                    if left > 0 {
                        frames.push(Frame::Map {
                            left,
                            have_key: false,
                        });
                        continue;
                    }
                }
            }
            // A value is complete on top of the stack: store it, closing finished tables.
            loop {
                match frames.last_mut() {
                    None => return Ok(()),
                    Some(Frame::Array { next, len }) => {
                        ffi::lua_rawset(l, -3);
                        if *next <= *len {
                            ffi::lua_pushnumber(l, *next as f64);
                            *next += 1;
                            break;
                        }
                    }
                    Some(Frame::Map { left, have_key }) => {
                        if !*have_key {
                            *have_key = true;
                            break;
                        }
                        // What lua_settable raises for a fresh table (no position: C frame).
                        match ffi::lua_type(l, -2) {
                            ffi::LUA_TNIL => return Err(Raise::Bare("table index is nil").into()),
                            ffi::LUA_TNUMBER if ffi::lua_tonumber(l, -2).is_nan() => {
                                return Err(Raise::Bare("table index is NaN").into());
                            }
                            _ => {}
                        }
                        ffi::lua_rawset(l, -3);
                        *left -= 1;
                        *have_key = false;
                        if *left > 0 {
                            break;
                        }
                    }
                }
                frames.pop();
            }
        }
    }
}

/// Decodes up to `limit` values of string argument 1 starting at byte `offset`; `limit` and
/// `offset` both 0 mean "everything, without the offset result". Otherwise the first
/// result is the offset of the next value, or -1 at the end of the input.
unsafe fn unpack_full(l: *mut ffi::lua_State, limit: i64, offset: i64) -> LuaResult<c_int> {
    unsafe {
        let data = check_bytes(l, 1)?;
        let len = data.len();
        let decode_all = limit == 0 && offset == 0;
        if offset < 0 || limit < 0 {
            return Err(Raise::Msg(format!(
                "Invalid request to unpack with offset of {} and limit of {}.",
                offset as i32, len as i32
            )));
        } else if offset as u64 > len as u64 {
            return Err(Raise::Msg(format!(
                "Start offset {} greater than input length {}.",
                offset as i32, len as i32
            )));
        }
        let limit = if decode_all {
            i64::from(i32::MAX)
        } else {
            limit
        };
        let mut c = Cursor {
            data,
            pos: offset as usize,
        };
        let mut count: i64 = 0;
        while c.left() > 0 && count < limit {
            match decode_value(l, &mut c) {
                Ok(()) => {}
                Err(DecodeError::Eof) => return Err(Raise::Msg("Missing bytes in input.".into())),
                Err(DecodeError::BadFormat) => {
                    return Err(Raise::Msg("Bad data format in input.".into()));
                }
                Err(DecodeError::Lua(r)) => return Err(r),
            }
            count += 1;
        }
        if !decode_all {
            check_stack(l, 1, "in function mp_unpack_full")?;
            let next = if c.left() == 0 { -1 } else { c.pos as i64 };
            ffi::lua_pushinteger(l, next as ffi::lua_Integer);
            ffi::lua_insert(l, 2);
            count += 1;
        }
        Ok(count as c_int)
    }
}

/// Drops every argument but the first (none stays none).
unsafe fn keep_first_arg(l: *mut ffi::lua_State) {
    unsafe { ffi::lua_settop(l, ffi::lua_gettop(l).min(1)) }
}

/// `cmsgpack.unpack(s)`: every value encoded in `s`.
pub(super) unsafe fn unpack(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe { unpack_full(l, 0, 0) }
}

/// `cmsgpack.unpack_one(s [, offset])`: next offset (or -1) and one value.
pub(super) unsafe fn unpack_one(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe {
        let offset = opt_integer(l, 2, 0)?;
        keep_first_arg(l);
        unpack_full(l, 1, offset)
    }
}

/// `cmsgpack.unpack_limit(s, limit [, offset])`: next offset (or -1) and up to `limit`
/// values.
pub(super) unsafe fn unpack_limit(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe {
        let limit = check_integer(l, 2)?;
        let offset = opt_integer(l, 3, 0)?;
        keep_first_arg(l);
        unpack_full(l, limit, offset)
    }
}
