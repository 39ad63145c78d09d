//! `cmsgpack`: lua-cmsgpack 0.4.0 as bundled by Redis 7.0 (`deps/lua/src/lua_cmsgpack.c`).
//!
//! Hand-written encoder and decoder rather than the `rmp` crate: Redis's byte choices
//! (floats that fit an f32 packed as `0xca`, str8 `0xd9` for 32..=255 bytes, no bin/ext
//! types, integer-valued doubles packed as the smallest integer) and its decoding quirks
//! (uint64 read as a signed `lua_Integer`, int64 as a double) are easier to state directly.
//!
//! Tables: a table whose keys are exactly the integers 1..n (each within C `int`) packs as an
//! array (the empty table as an empty array), anything else as a map in `next()` order.
//! Nesting is cut at 16 levels (deeper tables pack as nil), so circular tables pack.
//! Functions, threads, userdata and nil pack as nil.

use std::ffi::c_int;

use mlua::ffi;
use mlua::{Lua, Table};

mod unpack;

use super::raw::{
    c_double_to_i32, c_double_to_i64, check_stack, finish, push_bytes, set_cfunction, set_string,
    LuaResult, Raise,
};
use unpack::{unpack, unpack_limit, unpack_one};

macro_rules! cfn {
    ($name:ident => $body:ident) => {
        unsafe extern "C-unwind" fn $name(l: *mut ffi::lua_State) -> c_int {
            unsafe { finish(l, $body) }
        }
    };
}

/// Tables nested this deep pack as nil.
const MAX_NESTING: u32 = 16;

/// Creates the `cmsgpack` table: `pack`, `unpack`, `unpack_one`, `unpack_limit`, `_NAME`,
/// `_VERSION`, `_COPYRIGHT`, `_DESCRIPTION`.
///
/// # Errors
/// Only Lua memory errors.
pub fn create(lua: &Lua) -> mlua::Result<Table> {
    // SAFETY: the closure only pushes a table, strings and C functions; exec_raw runs it
    // protected.
    unsafe {
        lua.exec_raw((), |l| {
            // lua_newtable and this insertion order, as in C (same pairs() order as Redis).
            ffi::lua_createtable(l, 0, 0);
            set_cfunction(l, c"pack", l_pack);
            set_cfunction(l, c"unpack", l_unpack);
            set_cfunction(l, c"unpack_one", l_unpack_one);
            set_cfunction(l, c"unpack_limit", l_unpack_limit);
            set_string(l, c"_NAME", "cmsgpack");
            set_string(l, c"_VERSION", "lua-cmsgpack 0.4.0");
            set_string(l, c"_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo");
            set_string(l, c"_DESCRIPTION", "MessagePack C implementation for Lua");
        })
    }
}

// ---------------------------------------------------------------- encoding

fn encode_int(buf: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        if n <= 127 {
            buf.push(n as u8);
        } else if n <= 0xff {
            buf.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            buf.push(0xcd);
            buf.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            buf.push(0xce);
            buf.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            buf.push(0xcf);
            buf.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        buf.push(n as i8 as u8);
    } else if n >= -128 {
        buf.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        buf.push(0xd1);
        buf.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2147483648 {
        buf.push(0xd2);
        buf.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        buf.push(0xd3);
        buf.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_double(buf: &mut Vec<u8>, d: f64) {
    let f = d as f32;
    if d == f64::from(f) {
        buf.push(0xca);
        buf.extend_from_slice(&f.to_be_bytes());
    } else {
        buf.push(0xcb);
        buf.extend_from_slice(&d.to_be_bytes());
    }
}

fn encode_bytes(buf: &mut Vec<u8>, s: &[u8]) {
    let len = s.len();
    if len < 32 {
        buf.push(0xa0 | len as u8);
    } else if len <= 0xff {
        buf.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        buf.push(0xda);
        buf.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        buf.push(0xdb);
        buf.extend_from_slice(&(len as u32).to_be_bytes());
    }
    buf.extend_from_slice(s);
}

fn encode_header(buf: &mut Vec<u8>, n: usize, fix: u8, b16: u8, b32: u8) {
    if n <= 15 {
        buf.push(fix | n as u8);
    } else if n <= 65535 {
        buf.push(b16);
        buf.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        buf.push(b32);
        buf.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// Whether the table on top has exactly the keys 1..n, each within C `int`.
unsafe fn table_is_array(l: *mut ffi::lua_State) -> LuaResult<bool> {
    unsafe {
        let top = ffi::lua_gettop(l);
        check_stack(l, 2, "in function table_is_an_array")?;
        let mut count: i64 = 0;
        let mut max: i64 = 0;
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, -2) != 0 {
            ffi::lua_settop(l, -2);
            let n = ffi::lua_tonumber(l, -1);
            let is_index = ffi::lua_type(l, -1) == ffi::LUA_TNUMBER
                && n > 0.0
                && !n.is_infinite()
                && f64::from(c_double_to_i32(n)) == n;
            if !is_index {
                ffi::lua_settop(l, top);
                return Ok(false);
            }
            max = max.max(n as i64);
            count += 1;
        }
        ffi::lua_settop(l, top);
        Ok(count == max)
    }
}

/// Encodes the value on top of the stack and pops it.
unsafe fn encode_value(l: *mut ffi::lua_State, buf: &mut Vec<u8>, level: u32) -> LuaResult<()> {
    unsafe {
        let mut t = ffi::lua_type(l, -1);
        if t == ffi::LUA_TTABLE && level == MAX_NESTING {
            t = ffi::LUA_TNIL;
        }
        match t {
            ffi::LUA_TSTRING => {
                let mut len = 0usize;
                let p = ffi::lua_tolstring(l, -1, &mut len);
                encode_bytes(buf, std::slice::from_raw_parts(p.cast::<u8>(), len));
            }
            ffi::LUA_TBOOLEAN => buf.push(if ffi::lua_toboolean(l, -1) != 0 {
                0xc3
            } else {
                0xc2
            }),
            ffi::LUA_TNUMBER => {
                let n = ffi::lua_tonumber(l, -1);
                if !n.is_infinite() && c_double_to_i64(n) as f64 == n {
                    encode_int(buf, c_double_to_i64(n));
                } else {
                    encode_double(buf, n);
                }
            }
            ffi::LUA_TTABLE => {
                if table_is_array(l)? {
                    encode_array(l, buf, level)?;
                } else {
                    encode_map(l, buf, level)?;
                }
            }
            _ => buf.push(0xc0),
        }
        ffi::lua_settop(l, -2);
        Ok(())
    }
}

unsafe fn encode_array(l: *mut ffi::lua_State, buf: &mut Vec<u8>, level: u32) -> LuaResult<()> {
    unsafe {
        let len = ffi::lua_objlen(l, -1);
        encode_header(buf, len, 0x90, 0xdc, 0xdd);
        check_stack(l, 1, "in function mp_encode_lua_table_as_array")?;
        for j in 1..=len {
            // The keys 1..len all exist (checked above), so no __index can be involved.
            ffi::lua_rawgeti(l, -1, j as ffi::lua_Integer);
            encode_value(l, buf, level + 1)?;
        }
        Ok(())
    }
}

unsafe fn encode_map(l: *mut ffi::lua_State, buf: &mut Vec<u8>, level: u32) -> LuaResult<()> {
    unsafe {
        check_stack(l, 3, "in function mp_encode_lua_table_as_map")?;
        let mut len = 0usize;
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, -2) != 0 {
            ffi::lua_settop(l, -2);
            len += 1;
        }
        encode_header(buf, len, 0x80, 0xde, 0xdf);
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, -2) != 0 {
            ffi::lua_pushvalue(l, -2);
            encode_value(l, buf, level + 1)?; // key
            encode_value(l, buf, level + 1)?; // value
        }
        Ok(())
    }
}

/// `cmsgpack.pack(v1, ...)`: the concatenated encodings of all arguments.
unsafe fn pack(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe {
        let nargs = ffi::lua_gettop(l);
        if nargs == 0 {
            return Err(Raise::arg(0, "MessagePack pack needs input.".to_string()));
        }
        if ffi::lua_checkstack(l, nargs) == 0 {
            return Err(Raise::arg(
                0,
                "Too many arguments for MessagePack pack.".to_string(),
            ));
        }
        let mut buf = Vec::new();
        for i in 1..=nargs {
            check_stack(l, 1, "in function mp_check")?;
            ffi::lua_pushvalue(l, i);
            encode_value(l, &mut buf, 0)?;
            push_bytes(l, &buf);
            buf.clear();
        }
        ffi::lua_concat(l, nargs);
        Ok(1)
    }
}

cfn!(l_pack => pack);
cfn!(l_unpack => unpack);
cfn!(l_unpack_one => unpack_one);
cfn!(l_unpack_limit => unpack_limit);
