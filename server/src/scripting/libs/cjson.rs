//! `cjson`: lua-cjson 2.1.0 as bundled by Redis 7.0 (`deps/lua/src/lua_cjson.c`).
//!
//! Each module table (the global one and every `cjson.new()`) has its own configuration,
//! kept in a plain userdata shared as upvalue by its functions, so settings made by a script
//! persist for the life of the Lua state, as in Redis. Encoding and decoding are hand-written
//! (not serde_json): lua-cjson's output (`%.14g` numbers, `\/` escapes, invalid UTF-8
//! passed through, `next()` key order) and its error texts with character positions have to
//! match byte for byte.

mod decode;
mod encode;
mod number;

use std::ffi::{c_int, CStr};

use mlua::ffi;
use mlua::{Lua, Table};

use super::raw::{check_bytes, check_integer, finish, set_field, set_string, LuaResult, Raise};

macro_rules! cfn {
    ($name:ident => $body:path) => {
        unsafe extern "C-unwind" fn $name(l: *mut ffi::lua_State) -> c_int {
            unsafe { finish(l, $body) }
        }
    };
}

/// `encode_invalid_numbers` setting: refuse NaN/Inf.
const INVALID_OFF: c_int = 0;
/// `encode_invalid_numbers` setting: write `nan`, `inf`, `-inf`.
const INVALID_ON: c_int = 1;

/// Per-module-table settings (lua-cjson's `json_config_t` without its buffers).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct Config {
    /// `encode_sparse_array` convert flag: excessively sparse arrays become objects.
    encode_sparse_convert: c_int,
    /// Arrays with `max > items * ratio` (and `max > safe`) are excessively sparse.
    encode_sparse_ratio: c_int,
    /// Arrays up to this index are never excessively sparse.
    encode_sparse_safe: c_int,
    /// Deepest table nesting `encode` accepts.
    encode_max_depth: c_int,
    /// 0: error on NaN/Inf, 1: write them, 2: write `null`.
    encode_invalid_numbers: c_int,
    /// Significant digits for numbers (`%.<n>g`), 1..=14.
    encode_number_precision: c_int,
    /// Reuse one encode buffer (affects memory only).
    encode_keep_buffer: c_int,
    /// Accept `inf`, `nan`, hex, `+1`, leading zeros when decoding.
    decode_invalid_numbers: c_int,
    /// Deepest nesting `decode` accepts.
    decode_max_depth: c_int,
}

impl Config {
    const DEFAULT: Config = Config {
        encode_sparse_convert: 0,
        encode_sparse_ratio: 2,
        encode_sparse_safe: 10,
        encode_max_depth: 1000,
        encode_invalid_numbers: INVALID_OFF,
        encode_number_precision: 14,
        encode_keep_buffer: 1,
        decode_invalid_numbers: 1,
        decode_max_depth: 1000,
    };
}

/// Creates a `cjson` table with default settings: `encode`, `decode`, the setting functions
/// (`encode_sparse_array`, `encode_max_depth`, `decode_max_depth`, `encode_number_precision`,
/// `encode_keep_buffer`, `encode_invalid_numbers`, `decode_invalid_numbers`), `new`, `null`
/// (a NULL light userdata), `_NAME` (`cjson`) and `_VERSION` (`2.1.0`).
///
/// # Errors
/// Only Lua memory errors.
pub fn create(lua: &Lua) -> mlua::Result<Table> {
    // SAFETY: `build` only pushes values onto the stack; exec_raw runs it protected.
    unsafe { lua.exec_raw((), |l| build(l)) }
}

/// Pushes a new module table with its own configuration.
unsafe fn build(l: *mut ffi::lua_State) {
    const FUNCS: &[(&CStr, ffi::lua_CFunction)] = &[
        (c"encode", l_encode),
        (c"decode", l_decode),
        (c"encode_sparse_array", l_encode_sparse_array),
        (c"encode_max_depth", l_encode_max_depth),
        (c"decode_max_depth", l_decode_max_depth),
        (c"encode_number_precision", l_encode_number_precision),
        (c"encode_keep_buffer", l_encode_keep_buffer),
        (c"encode_invalid_numbers", l_encode_invalid_numbers),
        (c"decode_invalid_numbers", l_decode_invalid_numbers),
        (c"new", l_new),
    ];
    unsafe {
        // lua_newtable and this insertion order, as in C: pairs() then visits keys in the
        // same order as in Redis.
        ffi::lua_createtable(l, 0, 0);
        let cfg = ffi::lua_newuserdata(l, std::mem::size_of::<Config>()).cast::<Config>();
        cfg.write(Config::DEFAULT);
        for (name, f) in FUNCS {
            ffi::lua_pushvalue(l, -1);
            ffi::lua_pushcclosure(l, *f, 1);
            ffi::lua_setfield(l, -3, name.as_ptr());
        }
        ffi::lua_settop(l, -2);
        ffi::lua_pushlightuserdata(l, std::ptr::null_mut());
        set_field(l, c"null");
        set_string(l, c"_NAME", "cjson");
        set_string(l, c"_VERSION", "2.1.0");
    }
}

/// The configuration of the running function's module table.
unsafe fn config<'a>(l: *mut ffi::lua_State) -> LuaResult<&'a mut Config> {
    unsafe {
        let p = ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)).cast::<Config>();
        p.as_mut()
            .ok_or_else(|| Raise::Msg("BUG: Unable to fetch CJSON configuration".to_string()))
    }
}

/// `json_arg_init`: at most `args` arguments (missing ones become nil), then the config.
unsafe fn arg_init<'a>(l: *mut ffi::lua_State, args: c_int) -> LuaResult<&'a mut Config> {
    unsafe {
        let cfg = config(l)?;
        if ffi::lua_gettop(l) > args {
            return Err(Raise::arg(args + 1, "found too many arguments".to_string()));
        }
        while ffi::lua_gettop(l) < args {
            ffi::lua_pushnil(l);
        }
        Ok(cfg)
    }
}

/// `encode`/`decode` arguments: exactly one (`expected 1 argument`), then the config.
unsafe fn single_arg_config<'a>(l: *mut ffi::lua_State) -> LuaResult<&'a mut Config> {
    unsafe {
        if ffi::lua_gettop(l) != 1 {
            return Err(Raise::arg(1, "expected 1 argument".to_string()));
        }
        config(l)
    }
}

/// `json_enum_option`: sets `setting` from a boolean or one of `options` at `idx` (nil keeps
/// it) and pushes the current value: a boolean for off/on, else the option name.
unsafe fn enum_option(
    l: *mut ffi::lua_State,
    idx: c_int,
    setting: &mut c_int,
    options: &[&str],
) -> LuaResult<()> {
    unsafe {
        if ffi::lua_type(l, idx) > ffi::LUA_TNIL {
            if ffi::lua_type(l, idx) == ffi::LUA_TBOOLEAN {
                *setting = ffi::lua_toboolean(l, idx);
            } else {
                let name = check_bytes(l, idx)?;
                // luaL_checkoption compares C strings: the name ends at a NUL byte.
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
                match options.iter().position(|o| o.as_bytes() == name) {
                    Some(i) => *setting = i as c_int,
                    None => {
                        let mut msg = b"invalid option '".to_vec();
                        msg.extend_from_slice(name);
                        msg.push(b'\'');
                        return Err(Raise::arg(idx, msg));
                    }
                }
            }
        }
        if *setting == 0 || *setting == 1 {
            ffi::lua_pushboolean(l, *setting);
        } else {
            super::raw::push_bytes(l, options[*setting as usize].as_bytes());
        }
        Ok(())
    }
}

const BOOL_OPTIONS: &[&str] = &["off", "on"];

/// `json_integer_option`: sets `setting` from the integer at `idx` (nil keeps it), which
/// must lie in `min..=max` (checked after C's truncation to `int`; the error always names
/// argument 1, as lua-cjson does), and pushes the current value.
unsafe fn integer_option(
    l: *mut ffi::lua_State,
    idx: c_int,
    setting: &mut c_int,
    min: c_int,
    max: c_int,
) -> LuaResult<()> {
    unsafe {
        if ffi::lua_type(l, idx) != ffi::LUA_TNIL {
            let value = check_integer(l, idx)? as c_int;
            if !(min <= value && value <= max) {
                return Err(Raise::arg(
                    1,
                    format!("expected integer between {min} and {max}"),
                ));
            }
            *setting = value;
        }
        ffi::lua_pushinteger(l, *setting as ffi::lua_Integer);
        Ok(())
    }
}

/// `encode_sparse_array([convert [, ratio [, safe]]])`: returns the three settings.
unsafe fn encode_sparse_array(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe {
        let cfg = arg_init(l, 3)?;
        enum_option(l, 1, &mut cfg.encode_sparse_convert, BOOL_OPTIONS)?;
        integer_option(l, 2, &mut cfg.encode_sparse_ratio, 0, c_int::MAX)?;
        integer_option(l, 3, &mut cfg.encode_sparse_safe, 0, c_int::MAX)?;
        Ok(3)
    }
}

/// `encode_max_depth([depth])`, 1..=INT_MAX.
unsafe fn encode_max_depth(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe {
        let cfg = arg_init(l, 1)?;
        integer_option(l, 1, &mut cfg.encode_max_depth, 1, c_int::MAX)?;
        Ok(1)
    }
}

/// `decode_max_depth([depth])`, 1..=INT_MAX.
unsafe fn decode_max_depth(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe {
        let cfg = arg_init(l, 1)?;
        integer_option(l, 1, &mut cfg.decode_max_depth, 1, c_int::MAX)?;
        Ok(1)
    }
}

/// `encode_number_precision([digits])`, 1..=14.
unsafe fn encode_number_precision(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe {
        let cfg = arg_init(l, 1)?;
        integer_option(l, 1, &mut cfg.encode_number_precision, 1, 14)?;
        Ok(1)
    }
}

/// `encode_keep_buffer([bool | "on" | "off"])`.
unsafe fn encode_keep_buffer(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe {
        let cfg = arg_init(l, 1)?;
        enum_option(l, 1, &mut cfg.encode_keep_buffer, BOOL_OPTIONS)?;
        Ok(1)
    }
}

/// `encode_invalid_numbers([bool | "on" | "off" | "null"])`.
unsafe fn encode_invalid_numbers(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe {
        let cfg = arg_init(l, 1)?;
        enum_option(
            l,
            1,
            &mut cfg.encode_invalid_numbers,
            &["off", "on", "null"],
        )?;
        Ok(1)
    }
}

/// `decode_invalid_numbers([bool | "on" | "off"])`.
unsafe fn decode_invalid_numbers(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe {
        let cfg = arg_init(l, 1)?;
        enum_option(l, 1, &mut cfg.decode_invalid_numbers, BOOL_OPTIONS)?;
        Ok(1)
    }
}

/// `cjson.new()`: a fresh module table with default settings.
unsafe fn new(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe {
        build(l);
        Ok(1)
    }
}

cfn!(l_encode => encode::encode);
cfn!(l_decode => decode::decode);
cfn!(l_encode_sparse_array => encode_sparse_array);
cfn!(l_encode_max_depth => encode_max_depth);
cfn!(l_decode_max_depth => decode_max_depth);
cfn!(l_encode_number_precision => encode_number_precision);
cfn!(l_encode_keep_buffer => encode_keep_buffer);
cfn!(l_encode_invalid_numbers => encode_invalid_numbers);
cfn!(l_decode_invalid_numbers => decode_invalid_numbers);
cfn!(l_new => new);
