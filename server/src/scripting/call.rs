//! `redis.call` and `redis.pcall` as plain C functions of the Lua API, as Redis has them: a
//! C function is never tail-called away (Lua 5.1 keeps the caller's frame), so an error
//! names the script line that made the call, and it can suspend the script with
//! `lua_yield` while a command runs on another shard.
//!
//! A command whose keys live on the script's shard runs at once ([`exec::call_now`]); one that
//! must hop records a [`PendingHop`] and yields. The runner ([`super::run`]) performs the hop
//! and resumes the script with the reply as the call's result; a redis.call whose hopped
//! command failed raises its error at the script's next instruction, from the count hook
//! ([`super::hook`]), since a C function cannot raise after it yielded.

use std::cell::RefCell;
use std::os::raw::c_int;

use bytes::Bytes;
use mlua::ffi;

use super::context;
use super::exec::{self, Plan};
use crate::cmd::table::CommandSpec;
use crate::resp::Frame;

/// A command the script waits for, run on other shards by the runner.
pub struct PendingHop {
    /// The command.
    pub spec: &'static CommandSpec,
    /// Its arguments.
    pub args: Vec<Bytes>,
    /// Whether an error reply is raised (redis.call) or returned (redis.pcall).
    pub raise: bool,
    /// The coroutine that made the call.
    pub state: *mut ffi::lua_State,
}

thread_local! {
    static PENDING: RefCell<Option<PendingHop>> = const { RefCell::new(None) };
    static RESULT: RefCell<Option<(Frame, u8)>> = const { RefCell::new(None) };
}

/// Sets the reply [`push_result`] pushes next, seen under protocol `resp`.
pub fn set_result(frame: Frame, resp: u8) {
    RESULT.with(|r| *r.borrow_mut() = Some((frame, resp)));
}

/// A C function returning the reply [`set_result`] set, as the script sees it: how the
/// runner turns a hop's reply into the value it resumes the script with.
///
/// # Safety
/// Called by Lua as a C function.
pub unsafe extern "C-unwind" fn push_result(state: *mut ffi::lua_State) -> c_int {
    match RESULT.with(|r| r.borrow_mut().take()) {
        Some((frame, resp)) => push_reply(state, frame, resp, 0),
        None => ffi::lua_pushnil(state),
    }
    1
}

/// The hop the script yielded for, if it did.
pub fn take_pending() -> Option<PendingHop> {
    PENDING.with(|p| p.borrow_mut().take())
}

/// Whether the script yielded for a hop not yet performed.
pub fn hop_pending() -> bool {
    PENDING.with(|p| p.borrow().is_some())
}

const BAD_ARGUMENT: &str = "ERR Lua redis lib command arguments must be strings or integers";
const NO_ARGUMENT: &str = "ERR Please specify at least one argument for this redis lib call";

enum Step {
    Return(c_int),
    Raise,
    Yield,
}

/// `redis.call`.
///
/// # Safety
/// Called by Lua as a C function.
pub unsafe extern "C-unwind" fn redis_call(state: *mut ffi::lua_State) -> c_int {
    finish(state, step(state, true))
}

/// `redis.pcall`.
///
/// # Safety
/// Called by Lua as a C function.
pub unsafe extern "C-unwind" fn redis_pcall(state: *mut ffi::lua_State) -> c_int {
    finish(state, step(state, false))
}

/// Returns, raises or yields; no Rust value with a destructor is alive here.
unsafe fn finish(state: *mut ffi::lua_State, step: Step) -> c_int {
    match step {
        Step::Return(n) => n,
        Step::Raise => ffi::lua_error(state),
        Step::Yield => ffi::lua_yield(state, 0),
    }
}

unsafe fn step(state: *mut ffi::lua_State, raise: bool) -> Step {
    let argc = ffi::lua_gettop(state);
    if argc == 0 {
        return error(state, raise, NO_ARGUMENT);
    }
    let mut args = Vec::with_capacity(argc as usize);
    for index in 1..=argc {
        match ffi::lua_type(state, index) {
            ffi::LUA_TNUMBER => {
                // Redis 7.0 `luaRedisGenericCommand`: `%.17g`, not Lua's `%.14g`.
                let text = crate::resp::double::double_text(ffi::lua_tonumber(state, index));
                args.push(Bytes::from(text));
            }
            ffi::LUA_TSTRING => {
                let mut len = 0usize;
                let ptr = ffi::lua_tolstring(state, index, &mut len);
                args.push(Bytes::copy_from_slice(std::slice::from_raw_parts(
                    ptr.cast::<u8>(),
                    len,
                )));
            }
            _ => return error(state, raise, BAD_ARGUMENT),
        }
    }
    let Some(ctx) = context::current() else {
        return error(
            state,
            raise,
            "ERR redis.call is only available while a script runs",
        );
    };
    match exec::call_now(&ctx, &args) {
        Plan::Done(Frame::Error(text)) => error(state, raise, &text),
        Plan::Done(frame) => {
            ffi::lua_settop(state, 0);
            push_reply(state, frame, ctx.resp.get(), 0);
            Step::Return(1)
        }
        Plan::Hop(_) if !super::hook::can_yield(state) => error(
            state,
            raise,
            "ERR this command needs another shard, and a script cannot wait for one inside a \
             metamethod or a callback of a C function",
        ),
        Plan::Hop(spec) => {
            PENDING.with(|p| {
                *p.borrow_mut() = Some(PendingHop {
                    spec,
                    args,
                    raise,
                    state,
                })
            });
            ffi::lua_settop(state, 0);
            Step::Yield
        }
    }
}

/// Pushes `{err = text}`: the value to raise (redis.call) or return (redis.pcall).
unsafe fn error(state: *mut ffi::lua_State, raise: bool, text: &str) -> Step {
    ffi::lua_settop(state, 0);
    push_error_table(state, text);
    if raise {
        Step::Raise
    } else {
        Step::Return(1)
    }
}

/// Pushes `{err = text}`.
///
/// # Safety
/// `state` is a running Lua state with room for two more values.
pub unsafe fn push_error_table(state: *mut ffi::lua_State, text: &str) {
    ffi::lua_createtable(state, 0, 1);
    ffi::lua_pushlstring(state, text.as_ptr().cast(), text.len());
    ffi::lua_setfield(state, -2, c"err".as_ptr());
}

unsafe fn push_bytes(state: *mut ffi::lua_State, bytes: &[u8]) {
    ffi::lua_pushlstring(state, bytes.as_ptr().cast(), bytes.len());
}

unsafe fn push_single(state: *mut ffi::lua_State, key: &std::ffi::CStr) {
    // The value is on top: wrap it as {key = value}.
    ffi::lua_createtable(state, 0, 1);
    ffi::lua_insert(state, -2);
    ffi::lua_setfield(state, -2, key.as_ptr());
}

/// Deepest reply nesting pushed; deeper parts become `false`.
const MAX_DEPTH: usize = 1000;

/// Pushes `frame` as the script sees it ([`super::convert::reply_to_lua`]'s table).
unsafe fn push_reply(state: *mut ffi::lua_State, frame: Frame, resp: u8, depth: usize) {
    if ffi::lua_checkstack(state, 4) == 0 || depth > MAX_DEPTH {
        ffi::lua_pushboolean(state, 0);
        return;
    }
    let resp3 = resp == 3;
    match frame {
        Frame::Simple(text) => {
            push_bytes(state, text.as_bytes());
            push_single(state, c"ok");
        }
        Frame::Error(text) => push_error_table(state, &text),
        Frame::Integer(n) => ffi::lua_pushnumber(state, n as f64),
        Frame::Bulk(bytes) => push_bytes(state, &bytes),
        Frame::Null | Frame::NullArray if resp3 => ffi::lua_pushnil(state),
        Frame::Null | Frame::NullArray => ffi::lua_pushboolean(state, 0),
        Frame::Array(items) | Frame::Push(items) => push_sequence(state, items, resp, depth),
        Frame::Set(items) if resp3 => {
            ffi::lua_createtable(state, 0, items.len().min(1 << 20) as c_int);
            for item in items {
                push_reply(state, item, resp, depth + 1);
                ffi::lua_pushboolean(state, 1);
                ffi::lua_rawset(state, -3);
            }
            push_single(state, c"set");
        }
        Frame::Set(items) => push_sequence(state, items, resp, depth),
        Frame::Map(pairs) if resp3 => {
            ffi::lua_createtable(state, 0, pairs.len().min(1 << 20) as c_int);
            for (key, value) in pairs {
                push_reply(state, key, resp, depth + 1);
                push_reply(state, value, resp, depth + 1);
                ffi::lua_rawset(state, -3);
            }
            push_single(state, c"map");
        }
        Frame::Pairs(pairs) if resp3 => {
            let items = pairs
                .into_iter()
                .map(|(key, value)| Frame::Array(vec![key, value]))
                .collect();
            push_sequence(state, items, resp, depth);
        }
        Frame::Map(pairs) | Frame::Pairs(pairs) => {
            let flat = pairs
                .into_iter()
                .flat_map(|(key, value)| [key, value])
                .collect();
            push_sequence(state, flat, resp, depth);
        }
        Frame::Double(d) if resp3 => {
            ffi::lua_pushnumber(state, d);
            push_single(state, c"double");
        }
        Frame::Double(d) => push_bytes(state, crate::resp::double::double_text(d).as_bytes()),
        Frame::Boolean(b) if resp3 => ffi::lua_pushboolean(state, c_int::from(b)),
        Frame::Boolean(b) => ffi::lua_pushnumber(state, f64::from(u8::from(b))),
        Frame::BigNumber(digits) if resp3 => {
            push_bytes(state, digits.as_bytes());
            push_single(state, c"big_number");
        }
        Frame::BigNumber(digits) => push_bytes(state, digits.as_bytes()),
        Frame::Verbatim { format, text } if resp3 => {
            ffi::lua_createtable(state, 0, 2);
            push_bytes(state, &format);
            ffi::lua_setfield(state, -2, c"format".as_ptr());
            push_bytes(state, &text);
            ffi::lua_setfield(state, -2, c"string".as_ptr());
            push_single(state, c"verbatim_string");
        }
        Frame::Verbatim { text, .. } => push_bytes(state, &text),
        Frame::Attribute { reply, .. } => push_reply(state, *reply, resp, depth),
    }
}

unsafe fn push_sequence(state: *mut ffi::lua_State, items: Vec<Frame>, resp: u8, depth: usize) {
    ffi::lua_createtable(state, items.len().min(1 << 20) as c_int, 0);
    for (i, item) in items.into_iter().enumerate() {
        push_reply(state, item, resp, depth + 1);
        ffi::lua_rawseti(state, -2, (i + 1) as ffi::lua_Integer);
    }
}
