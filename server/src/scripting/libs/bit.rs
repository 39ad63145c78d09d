//! `bit`: LuaBitOp 1.0.2 as bundled by Redis 7.0 (`deps/lua/src/lua_bit.c`).
//!
//! All operations work on 32-bit integers. An argument is converted by adding 2^52 + 2^51 to
//! the number and keeping the low 32 bits of the double, so any number wraps modulo 2^32
//! (fractions round half to even; NaN and infinities give 0). Results are signed 32-bit
//! values returned as Lua numbers. A non-number argument fails with
//! `bad argument #N to 'f' (number expected, got T)`; numeric strings are accepted.

use std::ffi::c_int;

use mlua::ffi;
use mlua::{Lua, Table};

use super::raw::{finish, set_cfunction, type_error, LuaResult};

macro_rules! cfn {
    ($name:ident => $body:ident) => {
        unsafe extern "C-unwind" fn $name(l: *mut ffi::lua_State) -> c_int {
            unsafe { finish(l, $body) }
        }
    };
}

/// Creates the `bit` table: `tobit`, `bnot`, `band`, `bor`, `bxor`, `lshift`, `rshift`,
/// `arshift`, `rol`, `ror`, `bswap`, `tohex`.
///
/// # Errors
/// Only Lua memory errors.
pub fn create(lua: &Lua) -> mlua::Result<Table> {
    // SAFETY: the closure only pushes a table and C functions; exec_raw runs it protected.
    unsafe { lua.exec_raw((), |l| build(l)) }
}

unsafe fn build(l: *mut ffi::lua_State) {
    unsafe {
        // luaL_register sizes the table for its 12 functions; same insertion order as C.
        ffi::lua_createtable(l, 0, 12);
        set_cfunction(l, c"tobit", l_tobit);
        set_cfunction(l, c"bnot", l_bnot);
        set_cfunction(l, c"band", l_band);
        set_cfunction(l, c"bor", l_bor);
        set_cfunction(l, c"bxor", l_bxor);
        set_cfunction(l, c"lshift", l_lshift);
        set_cfunction(l, c"rshift", l_rshift);
        set_cfunction(l, c"arshift", l_arshift);
        set_cfunction(l, c"rol", l_rol);
        set_cfunction(l, c"ror", l_ror);
        set_cfunction(l, c"bswap", l_bswap);
        set_cfunction(l, c"tohex", l_tohex);
    }
}

/// The 32-bit value of a number: low word of `n + 2^52 + 2^51` (LuaBitOp's `barg`).
pub fn tobit32(n: f64) -> u32 {
    let biased = n + 6755399441055744.0;
    biased.to_bits() as u32
}

/// LuaBitOp's `barg`: argument `idx` as 32 bits, or a `number expected` argument error.
unsafe fn barg(l: *mut ffi::lua_State, idx: c_int) -> LuaResult<u32> {
    unsafe {
        let b = tobit32(ffi::lua_tonumber(l, idx));
        if b == 0 && ffi::lua_isnumber(l, idx) == 0 {
            return Err(type_error(l, idx, "number"));
        }
        Ok(b)
    }
}

/// Pushes a 32-bit result as a signed number.
unsafe fn bret(l: *mut ffi::lua_State, b: u32) -> LuaResult<c_int> {
    unsafe { ffi::lua_pushnumber(l, b as i32 as f64) };
    Ok(1)
}

unsafe fn tobit(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe { bret(l, barg(l, 1)?) }
}

unsafe fn bnot(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe { bret(l, !barg(l, 1)?) }
}

/// `band`/`bor`/`bxor`: folds the arguments from the last down to the second into the first
/// (so the highest bad argument is reported first, as LuaBitOp does).
unsafe fn fold(l: *mut ffi::lua_State, op: fn(u32, u32) -> u32) -> LuaResult<c_int> {
    unsafe {
        let mut b = barg(l, 1)?;
        let mut i = ffi::lua_gettop(l);
        while i > 1 {
            b = op(b, barg(l, i)?);
            i -= 1;
        }
        bret(l, b)
    }
}

unsafe fn band(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe { fold(l, |a, b| a & b) }
}

unsafe fn bor(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe { fold(l, |a, b| a | b) }
}

unsafe fn bxor(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe { fold(l, |a, b| a ^ b) }
}

/// Shifts and rotates: the count is the second argument's low 5 bits.
unsafe fn shift(l: *mut ffi::lua_State, op: fn(u32, u32) -> u32) -> LuaResult<c_int> {
    unsafe {
        let b = barg(l, 1)?;
        let n = barg(l, 2)? & 31;
        bret(l, op(b, n))
    }
}

unsafe fn lshift(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe { shift(l, |b, n| b << n) }
}

unsafe fn rshift(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe { shift(l, |b, n| b >> n) }
}

unsafe fn arshift(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe { shift(l, |b, n| ((b as i32) >> n) as u32) }
}

unsafe fn rol(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe { shift(l, |b, n| b.rotate_left(n)) }
}

unsafe fn ror(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe { shift(l, |b, n| b.rotate_right(n)) }
}

unsafe fn bswap(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe { bret(l, barg(l, 1)?.swap_bytes()) }
}

/// `tohex(x [, n])`: `|n|` (at most 8) hex digits of `x`, upper case when `n < 0`.
unsafe fn tohex(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe {
        let mut b = barg(l, 1)?;
        let n = if ffi::lua_type(l, 2) == ffi::LUA_TNONE {
            8
        } else {
            barg(l, 2)? as i32
        };
        let digits: &[u8; 16] = if n < 0 {
            b"0123456789ABCDEF"
        } else {
            b"0123456789abcdef"
        };
        // -INT_MIN overflows in C; the compiled LuaBitOp then clamps it to 8 like any n > 8.
        let width = n.unsigned_abs().min(8) as usize;
        let mut buf = [0u8; 8];
        for slot in buf[..width].iter_mut().rev() {
            *slot = digits[(b & 15) as usize];
            b >>= 4;
        }
        super::raw::push_bytes(l, &buf[..width]);
        Ok(1)
    }
}

cfn!(l_tobit => tobit);
cfn!(l_bnot => bnot);
cfn!(l_band => band);
cfn!(l_bor => bor);
cfn!(l_bxor => bxor);
cfn!(l_lshift => lshift);
cfn!(l_rshift => rshift);
cfn!(l_arshift => arshift);
cfn!(l_rol => rol);
cfn!(l_ror => ror);
cfn!(l_bswap => bswap);
cfn!(l_tohex => tohex);
