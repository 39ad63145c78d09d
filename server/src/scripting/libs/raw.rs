//! Shared plumbing for the libraries: Lua C-API functions written in Rust.
//!
//! Every library function is an `extern "C-unwind"` Lua C function (registered through
//! `mlua::ffi`), so it behaves like the C original: argument errors come from the real
//! `luaL_argerror` (with the function name Lua finds for the call, e.g. `'encode'` or `'?'`),
//! other errors from `luaL_where(L, 1)` + message, exactly as `luaL_error` does in Redis 7.0's
//! bundled C libraries, and the error value is a plain Lua string (not an mlua userdata).
//!
//! The discipline: a function body ([`LuaFn`]) never raises a Lua error itself. It returns
//! `Err(Raise)`; [`finish`] raises it after every Rust value of the body has been dropped, so
//! no Lua `longjmp` crosses Rust frames that own resources. Panics are caught and turned into
//! a Lua error as well.

use std::ffi::{c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use mlua::ffi;

/// How a library function fails.
#[derive(Debug)]
pub enum Raise {
    /// `luaL_error(L, "%s", msg)`: the message gets the caller's position prefix
    /// (`luaL_where(L, 1)`, e.g. `user_script:1: `), empty when called from C (e.g. `pcall`).
    Msg(String),
    /// An error raised by the Lua core from inside a C function (`luaG_runerror` with a C
    /// frame on top), which carries no position: e.g. `table index is nil`.
    Bare(&'static str),
    /// `luaL_argerror(L, narg, extramsg)`: `bad argument #narg to 'name' (extramsg)`
    /// (bytes: the text may quote user input).
    Arg(c_int, Vec<u8>),
}

impl Raise {
    /// A [`Raise::Arg`] for argument `narg`.
    pub fn arg(narg: c_int, extramsg: impl Into<Vec<u8>>) -> Raise {
        Raise::Arg(narg, extramsg.into())
    }
}

/// Result of a library function body: the number of values it left on the Lua stack.
pub type LuaResult<T> = Result<T, Raise>;

/// A library function body; see the module docs.
pub type LuaFn = unsafe fn(*mut ffi::lua_State) -> LuaResult<c_int>;

/// Runs `body` for a Lua C function and turns its failure into a Lua error.
///
/// # Safety
/// `l` must be the state the C function was called with.
pub unsafe fn finish(l: *mut ffi::lua_State, body: LuaFn) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| unsafe { body(l) }));
    let raise = match outcome {
        Ok(Ok(n)) => return n,
        Ok(Err(raise)) => raise,
        Err(payload) => {
            drop(payload);
            Raise::Msg("internal error in Lua library function".to_string())
        }
    };
    unsafe { raise_error(l, raise) }
}

/// Pushes the error for `raise` and raises it. Owned data is released before the `longjmp`.
unsafe fn raise_error(l: *mut ffi::lua_State, raise: Raise) -> c_int {
    unsafe {
        // The stack may be full (errors such as "stack overflow (...)" arise there); its
        // contents are discarded by the error anyway, and none of the messages need them.
        ffi::lua_settop(l, 0);
        match raise {
            Raise::Msg(msg) => {
                ffi::luaL_where(l, 1);
                push_bytes(l, msg.as_bytes());
                drop(msg);
                ffi::lua_concat(l, 2);
                ffi::lua_error(l)
            }
            Raise::Bare(msg) => {
                push_bytes(l, msg.as_bytes());
                ffi::lua_error(l)
            }
            Raise::Arg(narg, msg) => {
                push_bytes(l, &msg);
                drop(msg);
                // The pushed copy stays on the stack while luaL_argerror formats it.
                let extramsg = ffi::lua_tolstring(l, -1, std::ptr::null_mut());
                ffi::luaL_argerror(l, narg, extramsg)
            }
        }
    }
}

/// Pushes a byte string.
///
/// # Safety
/// `l` must be a valid state with a free stack slot.
pub unsafe fn push_bytes(l: *mut ffi::lua_State, bytes: &[u8]) {
    unsafe {
        ffi::lua_pushlstring(l, bytes.as_ptr().cast(), bytes.len());
    }
}

/// Sets `t[name] = v` on the table at stack index -2 for the value on top (pops it).
///
/// # Safety
/// The value below the top must be a table without metatable.
pub unsafe fn set_field(l: *mut ffi::lua_State, name: &CStr) {
    unsafe { ffi::lua_setfield(l, -2, name.as_ptr()) }
}

/// Sets `t[name] = f` on the table on top of the stack, as a C function without upvalues.
///
/// # Safety
/// The stack top must be a table without metatable.
pub unsafe fn set_cfunction(l: *mut ffi::lua_State, name: &CStr, f: ffi::lua_CFunction) {
    unsafe {
        ffi::lua_pushcfunction(l, f);
        set_field(l, name);
    }
}

/// Sets `t[name] = value` (a string) on the table on top of the stack.
///
/// # Safety
/// The stack top must be a table without metatable.
pub unsafe fn set_string(l: *mut ffi::lua_State, name: &CStr, value: &str) {
    unsafe {
        push_bytes(l, value.as_bytes());
        set_field(l, name);
    }
}

/// The `luaL_typename` of the value at `idx` (`no value` for a missing argument).
///
/// # Safety
/// `l` must be a valid state.
pub unsafe fn type_name(l: *mut ffi::lua_State, idx: c_int) -> String {
    unsafe {
        let name = ffi::lua_typename(l, ffi::lua_type(l, idx));
        if name.is_null() {
            return "?".to_string();
        }
        CStr::from_ptr(name).to_string_lossy().into_owned()
    }
}

/// The `luaL_typerror` failure: `bad argument #narg to 'f' (<tname> expected, got <type>)`.
///
/// # Safety
/// `l` must be a valid state.
pub unsafe fn type_error(l: *mut ffi::lua_State, narg: c_int, tname: &str) -> Raise {
    let got = unsafe { type_name(l, narg) };
    Raise::arg(narg, format!("{tname} expected, got {got}"))
}

/// `luaL_checknumber`: the argument as a number (numeric strings convert).
///
/// # Safety
/// `l` must be a valid state.
pub unsafe fn check_number(l: *mut ffi::lua_State, narg: c_int) -> LuaResult<f64> {
    unsafe {
        let d = ffi::lua_tonumber(l, narg);
        if d == 0.0 && ffi::lua_isnumber(l, narg) == 0 {
            return Err(type_error(l, narg, "number"));
        }
        Ok(d)
    }
}

/// `luaL_checkinteger`: the argument as `lua_Integer` (C truncation of the number).
///
/// # Safety
/// `l` must be a valid state.
pub unsafe fn check_integer(l: *mut ffi::lua_State, narg: c_int) -> LuaResult<i64> {
    unsafe {
        let d = ffi::lua_tointeger_(l, narg) as i64;
        if d == 0 && ffi::lua_isnumber(l, narg) == 0 {
            return Err(type_error(l, narg, "number"));
        }
        Ok(d)
    }
}

/// `luaL_optinteger`: `def` when the argument is missing or nil.
///
/// # Safety
/// `l` must be a valid state.
pub unsafe fn opt_integer(l: *mut ffi::lua_State, narg: c_int, def: i64) -> LuaResult<i64> {
    unsafe {
        if ffi::lua_type(l, narg) <= ffi::LUA_TNIL {
            Ok(def)
        } else {
            check_integer(l, narg)
        }
    }
}

/// `luaL_checklstring`: the argument's bytes (a number argument is converted in place).
///
/// The slice borrows the Lua string in stack slot `narg`; it stays valid while that slot is
/// not replaced, which the libraries never do.
///
/// # Safety
/// `l` must be a valid state; the caller must keep slot `narg` untouched while using the slice.
pub unsafe fn check_bytes<'a>(l: *mut ffi::lua_State, narg: c_int) -> LuaResult<&'a [u8]> {
    unsafe {
        let mut len = 0usize;
        let p = ffi::lua_tolstring(l, narg, &mut len);
        if p.is_null() {
            return Err(type_error(l, narg, "string"));
        }
        Ok(std::slice::from_raw_parts(p.cast::<u8>(), len))
    }
}

/// `luaL_checkstack(L, n, msg)`: fails with `stack overflow (msg)`.
///
/// # Safety
/// `l` must be a valid state.
pub unsafe fn check_stack(l: *mut ffi::lua_State, n: c_int, msg: &str) -> LuaResult<()> {
    if unsafe { ffi::lua_checkstack(l, n) } == 0 {
        return Err(Raise::Msg(format!("stack overflow ({msg})")));
    }
    Ok(())
}

/// C's `(int)d` for a double on x86-64 (`cvttsd2si`): truncation, and `INT_MIN` for NaN and
/// out-of-range values.
pub fn c_double_to_i32(d: f64) -> i32 {
    // NaN fails both comparisons.
    if d > -2147483649.0 && d < 2147483648.0 {
        d as i32
    } else {
        i32::MIN
    }
}

/// C's `(int64_t)d` for a double on x86-64: truncation, and `INT64_MIN` for NaN and
/// out-of-range values.
pub fn c_double_to_i64(d: f64) -> i64 {
    // NaN is outside every range.
    if (-9223372036854775808.0..9223372036854775808.0).contains(&d) {
        d as i64
    } else {
        i64::MIN
    }
}

/// C's `(uint64_t)d` as gcc emits it on x86-64: below 2^63 (and for NaN) a signed
/// conversion, otherwise a signed conversion of `d - 2^63` with the top bit flipped.
pub fn c_double_to_u64(d: f64) -> u64 {
    const TWO_63: f64 = 9223372036854775808.0;
    if d >= TWO_63 {
        (c_double_to_i64(d - TWO_63) as u64) ^ (1 << 63)
    } else {
        c_double_to_i64(d) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_conversions_follow_x86_64() {
        assert_eq!(c_double_to_i32(2147483647.9), 2147483647);
        assert_eq!(c_double_to_i32(-2147483648.9), -2147483648);
        assert_eq!(c_double_to_i32(2147483648.0), i32::MIN);
        assert_eq!(c_double_to_i32(-2147483649.0), i32::MIN);
        assert_eq!(c_double_to_i32(f64::NAN), i32::MIN);
        assert_eq!(c_double_to_i64(-1.5), -1);
        assert_eq!(c_double_to_i64(9223372036854775808.0), i64::MIN);
        assert_eq!(c_double_to_i64(f64::INFINITY), i64::MIN);
        // As redis-server's struct.pack('>L', x) shows: 2^64 -> 0, 2^63 -> 2^63, NaN -> 2^63.
        assert_eq!(c_double_to_u64(18446744073709551616.0), 0);
        assert_eq!(c_double_to_u64(9223372036854775808.0), 1 << 63);
        assert_eq!(c_double_to_u64(f64::NAN), 1 << 63);
        assert_eq!(c_double_to_u64(f64::INFINITY), 0);
        assert_eq!(c_double_to_u64(-1.0), u64::MAX);
    }
}
