//! `cjson.encode(value)`.
//!
//! Walks the value with the Lua stack exactly as lua-cjson does (one slot per array level,
//! two per object level, `lua_checkstack(L, 3)` at each table), so the depth at which a
//! deeply nested or circular table fails with `Cannot serialise, excessive nesting (N)`
//! matches Redis even when `encode_max_depth` is raised past what the stack allows.

use std::ffi::c_int;

use mlua::ffi;

use super::super::raw::{c_double_to_i32, push_bytes, type_name, LuaResult, Raise};
use super::number::format_g;
use super::{single_arg_config, Config, INVALID_OFF, INVALID_ON};

/// `cjson.encode(value)`: the JSON text, or an error naming what cannot be serialised.
pub(super) unsafe fn encode(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe {
        let cfg = *single_arg_config(l)?;
        let mut out = Vec::new();
        append_value(l, &cfg, &mut out)?;
        push_bytes(l, &out);
        Ok(1)
    }
}

/// `Cannot serialise <type>: <reason>` for the value at `idx`.
unsafe fn exception(l: *mut ffi::lua_State, idx: c_int, reason: &str) -> Raise {
    let ty = unsafe { type_name(l, idx) };
    Raise::Msg(format!("Cannot serialise {ty}: {reason}"))
}

/// One table being written.
enum Frame {
    /// Elements `1..=len`; `i` is the one on the stack (0: none yet).
    Array { i: c_int, len: c_int },
    /// Keys in `next()` order; `started` once a key/value pair is on the stack.
    Object { started: bool },
}

/// Appends the value on top of the stack (left in place).
///
/// Iterative rather than recursive (the Lua stack bounds nesting at about 8000 levels,
/// which a recursive walk would turn into Rust stack use); the Lua stack holds exactly what
/// lua-cjson's recursion holds at each step.
unsafe fn append_value(l: *mut ffi::lua_State, cfg: &Config, out: &mut Vec<u8>) -> LuaResult<()> {
    unsafe {
        let mut frames: Vec<Frame> = Vec::new();
        loop {
            // Visit the value on top of the stack.
            match ffi::lua_type(l, -1) {
                ffi::LUA_TSTRING => append_string(l, -1, out),
                ffi::LUA_TNUMBER => append_number(l, cfg, -1, out)?,
                ffi::LUA_TBOOLEAN => {
                    let s: &[u8] = if ffi::lua_toboolean(l, -1) != 0 {
                        b"true"
                    } else {
                        b"false"
                    };
                    out.extend_from_slice(s);
                }
                ffi::LUA_TTABLE => {
                    let depth = c_int::try_from(frames.len() + 1).unwrap_or(c_int::MAX);
                    if depth > cfg.encode_max_depth || ffi::lua_checkstack(l, 3) == 0 {
                        return Err(Raise::Msg(format!(
                            "Cannot serialise, excessive nesting ({depth})"
                        )));
                    }
                    let len = array_length(l, cfg)?;
                    if len > 0 {
                        out.push(b'[');
                        frames.push(Frame::Array { i: 0, len });
                    } else {
                        out.push(b'{');
                        ffi::lua_pushnil(l);
                        frames.push(Frame::Object { started: false });
                    }
                }
                ffi::LUA_TNIL => out.extend_from_slice(b"null"),
                ffi::LUA_TLIGHTUSERDATA if ffi::lua_touserdata(l, -1).is_null() => {
                    out.extend_from_slice(b"null");
                }
                _ => return Err(exception(l, -1, "type not supported")),
            }
            // Move to the next value to visit, closing finished tables.
            loop {
                let Some(frame) = frames.last_mut() else {
                    return Ok(());
                };
                match frame {
                    Frame::Array { i, len } => {
                        if *i > 0 {
                            ffi::lua_settop(l, -2);
                        }
                        if *i < *len {
                            *i += 1;
                            if *i > 1 {
                                out.push(b',');
                            }
                            ffi::lua_rawgeti(l, -1, ffi::lua_Integer::from(*i));
                            break;
                        }
                        out.push(b']');
                    }
                    Frame::Object { started } => {
                        if *started {
                            ffi::lua_settop(l, -2);
                        }
                        if ffi::lua_next(l, -2) != 0 {
                            if *started {
                                out.push(b',');
                            }
                            *started = true;
                            append_key(l, cfg, out)?;
                            break;
                        }
                        out.push(b'}');
                    }
                }
                frames.pop();
            }
        }
    }
}

/// Writes the key below the top of the stack followed by `:`.
unsafe fn append_key(l: *mut ffi::lua_State, cfg: &Config, out: &mut Vec<u8>) -> LuaResult<()> {
    unsafe {
        match ffi::lua_type(l, -2) {
            ffi::LUA_TNUMBER => {
                out.push(b'"');
                append_number(l, cfg, -2, out)?;
                out.extend_from_slice(b"\":");
            }
            ffi::LUA_TSTRING => {
                append_string(l, -2, out);
                out.push(b':');
            }
            _ => return Err(exception(l, -2, "table key must be a number or string")),
        }
        Ok(())
    }
}

/// lua-cjson's `lua_array_length`: the array size when every key is an integer >= 1 (and
/// the array is not excessively sparse), else -1 for "object". As in C, the largest key is
/// kept in an `int` (x86 conversion: keys past `INT_MAX` turn it into `INT_MIN`).
unsafe fn array_length(l: *mut ffi::lua_State, cfg: &Config) -> LuaResult<c_int> {
    unsafe {
        let mut max: c_int = 0;
        let mut items: c_int = 0;
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, -2) != 0 {
            if ffi::lua_type(l, -2) == ffi::LUA_TNUMBER {
                let k = ffi::lua_tonumber(l, -2);
                if k != 0.0 && k.floor() == k && k >= 1.0 {
                    if k > f64::from(max) {
                        max = c_double_to_i32(k);
                    }
                    items = items.wrapping_add(1);
                    ffi::lua_settop(l, -2);
                    continue;
                }
            }
            ffi::lua_settop(l, -3);
            return Ok(-1);
        }
        if cfg.encode_sparse_ratio > 0
            && max > items.wrapping_mul(cfg.encode_sparse_ratio)
            && max > cfg.encode_sparse_safe
        {
            if cfg.encode_sparse_convert == 0 {
                return Err(exception(l, -1, "excessively sparse array"));
            }
            return Ok(-1);
        }
        Ok(max)
    }
}

unsafe fn append_number(
    l: *mut ffi::lua_State,
    cfg: &Config,
    idx: c_int,
    out: &mut Vec<u8>,
) -> LuaResult<()> {
    unsafe {
        let num = ffi::lua_tonumber(l, idx);
        if cfg.encode_invalid_numbers == INVALID_OFF {
            if !num.is_finite() {
                return Err(exception(l, idx, "must not be NaN or Inf"));
            }
        } else if cfg.encode_invalid_numbers == INVALID_ON {
            if num.is_nan() {
                out.extend_from_slice(b"nan");
                return Ok(());
            }
        } else if !num.is_finite() {
            out.extend_from_slice(b"null");
            return Ok(());
        }
        let precision = usize::try_from(cfg.encode_number_precision).unwrap_or(14);
        out.extend_from_slice(format_g(num, precision).as_bytes());
        Ok(())
    }
}

/// Appends the string at `idx` quoted: `"`, `\`, `/`, control characters and DEL escaped,
/// every other byte (including invalid UTF-8) as is.
unsafe fn append_string(l: *mut ffi::lua_State, idx: c_int, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = unsafe {
        let mut len = 0usize;
        let p = ffi::lua_tolstring(l, idx, &mut len);
        if p.is_null() {
            &[][..]
        } else {
            std::slice::from_raw_parts(p.cast::<u8>(), len)
        }
    };
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    for &b in bytes {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\x08' => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\x0c' => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0..=0x1f | 0x7f => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 15)]);
            }
            _ => out.push(b),
        }
    }
    out.push(b'"');
}
