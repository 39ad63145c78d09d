//! `struct`: Roberto Ierusalimschy's struct library (0.2) as bundled by Redis 7.0
//! (`deps/lua/src/lua_struct.c`, with Redis's bounds fixes).
//!
//! Formats (a C string: a NUL byte ends it): `>` big endian, `<` little endian, `!n` max
//! alignment (default 8, a power of 2), ` ` ignored, `x` one pad byte, `b`/`B` char,
//! `h`/`H` short (2), `l`/`L` long (8), `T` size_t (8), `i`/`I` int with optional size in
//! bytes (default 4, at most 32), `f` float, `d` double, `s` zero-terminated string, `cn`
//! fixed string of n bytes (`c0`: the whole string in `pack`, the previous result's length in
//! `unpack`). Lower-case integer formats are signed. Native order is little endian.

use std::ffi::c_int;

use mlua::ffi;
use mlua::{Lua, Table};

use super::raw::{
    c_double_to_i64, c_double_to_u64, check_bytes, check_number, check_stack, finish, opt_integer,
    push_bytes, set_cfunction, LuaResult, Raise,
};

macro_rules! cfn {
    ($name:ident => $body:ident) => {
        unsafe extern "C-unwind" fn $name(l: *mut ffi::lua_State) -> c_int {
            unsafe { finish(l, $body) }
        }
    };
}

/// Largest size of an `i`/`I` integer, in bytes.
const MAXINTSIZE: usize = 32;
/// Default `!` alignment: the alignment of `double` on x86-64.
const MAXALIGN: usize = 8;

/// Creates the `struct` table: `pack`, `unpack`, `size`.
///
/// # Errors
/// Only Lua memory errors.
pub fn create(lua: &Lua) -> mlua::Result<Table> {
    // SAFETY: the closure only pushes a table and C functions; exec_raw runs it protected.
    unsafe {
        lua.exec_raw((), |l| {
            // As luaL_register: sized for 3, same insertion order (same pairs() order).
            ffi::lua_createtable(l, 0, 3);
            set_cfunction(l, c"pack", l_pack);
            set_cfunction(l, c"unpack", l_unpack);
            set_cfunction(l, c"size", l_size);
        })
    }
}

/// Byte order and maximum alignment in force while reading a format.
struct Header {
    big_endian: bool,
    align: usize,
}

impl Header {
    fn new() -> Self {
        Header {
            big_endian: false,
            align: 1,
        }
    }
}

/// A format string being read (up to its first NUL, as C sees it).
struct Fmt<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Fmt<'_> {
    fn next_opt(&mut self) -> Option<u8> {
        let c = *self.bytes.get(self.pos)?;
        self.pos += 1;
        Some(c)
    }

    fn peek_digit(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied().filter(u8::is_ascii_digit)
    }

    /// `getnum`: a decimal number at the cursor, or `default`.
    fn num(&mut self, default: usize) -> LuaResult<usize> {
        if self.peek_digit().is_none() {
            return Ok(default);
        }
        let mut a: i32 = 0;
        while let Some(d) = self.peek_digit() {
            let d = i32::from(d - b'0');
            if a > i32::MAX / 10 || a * 10 > i32::MAX - d {
                return Err(Raise::Msg("integral size overflow".to_string()));
            }
            a = a * 10 + d;
            self.pos += 1;
        }
        Ok(a as usize)
    }
}

/// Reads the format argument (stack slot 1) as a C string.
unsafe fn format_arg<'a>(l: *mut ffi::lua_State) -> LuaResult<Fmt<'a>> {
    let bytes = unsafe { check_bytes(l, 1)? };
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    Ok(Fmt {
        bytes: &bytes[..end],
        pos: 0,
    })
}

/// `optsize`: the size of option `opt` (0 for control options and `s`).
fn opt_size(opt: u8, fmt: &mut Fmt<'_>) -> LuaResult<usize> {
    Ok(match opt {
        b'B' | b'b' => 1,
        b'H' | b'h' => 2,
        b'L' | b'l' | b'T' | b'd' => 8,
        b'f' => 4,
        b'x' => 1,
        b'c' => fmt.num(1)?,
        b'i' | b'I' => {
            let sz = fmt.num(4)?;
            if sz > MAXINTSIZE {
                return Err(Raise::Msg(format!(
                    "integral size {sz} is larger than limit of {MAXINTSIZE}"
                )));
            }
            sz
        }
        _ => 0,
    })
}

/// `gettoalign`: padding needed before an item of `size` at offset `len`.
fn to_align(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    size.wrapping_sub(len & size.wrapping_sub(1)) & size.wrapping_sub(1)
}

/// `controloptions`: byte order, alignment and spaces; anything else is an invalid option.
fn control_option(opt: u8, fmt: &mut Fmt<'_>, h: &mut Header) -> LuaResult<()> {
    match opt {
        b' ' => {}
        b'>' => h.big_endian = true,
        b'<' => h.big_endian = false,
        b'!' => {
            let a = fmt.num(MAXALIGN)?;
            if !(a > 0 && a & (a - 1) == 0) {
                return Err(Raise::Msg(format!("alignment {a} is not a power of 2")));
            }
            h.align = a;
        }
        _ => {
            let mut msg = b"invalid format option '".to_vec();
            msg.push(opt);
            msg.push(b'\'');
            return Err(Raise::arg(1, msg));
        }
    }
    Ok(())
}

/// Writes `size` bytes of an integer in the given order; bytes past the 8th are zero.
fn put_integer(out: &mut Vec<u8>, n: f64, big_endian: bool, size: usize) {
    let mut value = if n < 0.0 {
        c_double_to_i64(n) as u64
    } else {
        c_double_to_u64(n)
    };
    let start = out.len();
    for _ in 0..size {
        out.push((value & 0xff) as u8);
        value = value.checked_shr(8).unwrap_or(0);
    }
    if big_endian {
        out[start..].reverse();
    }
}

/// `struct.pack(fmt, ...)`: the packed string.
unsafe fn pack(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe {
        let mut fmt = format_arg(l)?;
        let mut h = Header::new();
        let mut arg: c_int = 2;
        // The C library pushes a nil mark after the arguments (so a missing argument reads
        // as nil, not "no value").
        ffi::lua_pushnil(l);
        let mut out: Vec<u8> = Vec::new();
        while let Some(opt) = fmt.next_opt() {
            let mut size = opt_size(opt, &mut fmt)?;
            let pad = to_align(out.len(), &h, opt, size);
            out.resize(out.len() + pad, 0);
            match opt {
                b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                    let n = check_number(l, arg)?;
                    arg += 1;
                    put_integer(&mut out, n, h.big_endian, size);
                }
                b'x' => out.push(0),
                b'f' => {
                    let f = check_number(l, arg)? as f32;
                    arg += 1;
                    if h.big_endian {
                        out.extend_from_slice(&f.to_be_bytes());
                    } else {
                        out.extend_from_slice(&f.to_le_bytes());
                    }
                }
                b'd' => {
                    let d = check_number(l, arg)?;
                    arg += 1;
                    if h.big_endian {
                        out.extend_from_slice(&d.to_be_bytes());
                    } else {
                        out.extend_from_slice(&d.to_le_bytes());
                    }
                }
                b'c' | b's' => {
                    let s = check_bytes(l, arg)?;
                    arg += 1;
                    if size == 0 {
                        size = s.len();
                    }
                    if s.len() < size {
                        // The C library reports the argument after the string.
                        return Err(Raise::arg(arg, "string too short".to_string()));
                    }
                    out.extend_from_slice(&s[..size]);
                    if opt == b's' {
                        out.push(0);
                    }
                }
                _ => control_option(opt, &mut fmt, &mut h)?,
            }
        }
        push_bytes(l, &out);
        Ok(1)
    }
}

/// Reads `size` bytes as an integer (only the last 8 significant bytes survive, as in C).
fn get_integer(bytes: &[u8], big_endian: bool, signed: bool, size: usize) -> f64 {
    let mut v: u64 = 0;
    let mut take = |b: u8| v = (v << 8) | u64::from(b);
    if big_endian {
        bytes.iter().for_each(|&b| take(b));
    } else {
        bytes.iter().rev().for_each(|&b| take(b));
    }
    if !signed {
        return v as f64;
    }
    // x86-64 masks a 64-bit shift count to 6 bits.
    let mask = u64::MAX << ((size * 8).wrapping_sub(1) & 63);
    if v & mask != 0 {
        v |= mask;
    }
    v as i64 as f64
}

/// `struct.unpack(fmt, s [, pos])`: the values, then the position after the last one.
unsafe fn unpack(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe {
        let mut fmt = format_arg(l)?;
        let data = check_bytes(l, 2)?;
        let ld = data.len();
        let start = opt_integer(l, 3, 1)? as u64;
        if start == 0 {
            return Err(Raise::arg(3, "offset must be 1 or greater".to_string()));
        }
        let mut pos = (start - 1) as usize;
        let mut n: c_int = 0;
        let mut h = Header::new();
        let too_short = || Raise::arg(2, "data string too short".to_string());
        while let Some(opt) = fmt.next_opt() {
            let mut size = opt_size(opt, &mut fmt)?;
            pos = pos.wrapping_add(to_align(pos, &h, opt, size));
            if size > ld || pos > ld - size {
                return Err(too_short());
            }
            check_stack(l, 2, "too many results")?;
            match opt {
                b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                    let signed = opt.is_ascii_lowercase();
                    let v = get_integer(&data[pos..pos + size], h.big_endian, signed, size);
                    ffi::lua_pushnumber(l, v);
                    n += 1;
                }
                b'x' => {}
                b'f' => {
                    let mut b = [0u8; 4];
                    b.copy_from_slice(&data[pos..pos + 4]);
                    let f = if h.big_endian {
                        f32::from_be_bytes(b)
                    } else {
                        f32::from_le_bytes(b)
                    };
                    ffi::lua_pushnumber(l, f64::from(f));
                    n += 1;
                }
                b'd' => {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&data[pos..pos + 8]);
                    let d = if h.big_endian {
                        f64::from_be_bytes(b)
                    } else {
                        f64::from_le_bytes(b)
                    };
                    ffi::lua_pushnumber(l, d);
                    n += 1;
                }
                b'c' => {
                    if size == 0 {
                        if n == 0 || ffi::lua_isnumber(l, -1) == 0 {
                            return Err(Raise::Msg(
                                "format 'c0' needs a previous size".to_string(),
                            ));
                        }
                        size = c_double_to_u64(ffi::lua_tonumber(l, -1)) as usize;
                        ffi::lua_settop(l, -2);
                        n -= 1;
                        if size > ld || pos > ld - size {
                            return Err(too_short());
                        }
                    }
                    push_bytes(l, &data[pos..pos + size]);
                    n += 1;
                }
                b's' => {
                    let Some(len) = data[pos..].iter().position(|&b| b == 0) else {
                        return Err(Raise::Msg("unfinished string in data".to_string()));
                    };
                    size = len + 1;
                    push_bytes(l, &data[pos..pos + len]);
                    n += 1;
                }
                _ => control_option(opt, &mut fmt, &mut h)?,
            }
            pos = pos.wrapping_add(size);
        }
        ffi::lua_pushinteger(l, (pos as u64).wrapping_add(1) as i64 as ffi::lua_Integer);
        Ok(n + 1)
    }
}

/// `struct.size(fmt)`: the packed size of a fixed-size format. Unknown letters and digits
/// count as size 0; other unknown characters are invalid options.
unsafe fn size(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe {
        let mut fmt = format_arg(l)?;
        let mut h = Header::new();
        let mut pos: usize = 0;
        while let Some(opt) = fmt.next_opt() {
            let size = opt_size(opt, &mut fmt)?;
            pos = pos.wrapping_add(to_align(pos, &h, opt, size));
            if opt == b's' {
                return Err(Raise::arg(1, "option 's' has no fixed size".to_string()));
            } else if opt == b'c' && size == 0 {
                return Err(Raise::arg(1, "option 'c0' has no fixed size".to_string()));
            }
            if !opt.is_ascii_alphanumeric() {
                control_option(opt, &mut fmt, &mut h)?;
            }
            pos = pos.wrapping_add(size);
        }
        ffi::lua_pushinteger(l, pos as ffi::lua_Integer);
        Ok(1)
    }
}

cfn!(l_pack => pack);
cfn!(l_unpack => unpack);
cfn!(l_size => size);
