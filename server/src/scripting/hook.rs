//! The count hook of a running script: every [`HOOK_EVERY`] Lua instructions it checks, without
//! a system call, whether the script must stop (SCRIPT KILL, FUNCTION KILL, shutdown), whether
//! it has run past `busy-reply-threshold` (other clients then get `-BUSY`), and whether the
//! shard's task quota is used up — then the script yields to the reactor, as `--hash-mode
//! yield` does, and resumes on the shard's next turn.
//!
//! Lua 5.1 can yield from a count hook (`lvm.c`: "did hook yield?") but not across a C call
//! or a metamethod; there the hook lets the script run on (a stall, counted as such). The
//! sandbox's `pcall` runs its function in a coroutine of its own, so a pcall is no such
//! boundary ([`super::vm`]).

use std::cell::RefCell;
use std::os::raw::c_int;

use mlua::{ffi, Thread};

/// Lua instructions between two checks: ~10 µs of a busy loop, so a yield comes at most that
/// late after the task quota (0.5 ms) ends, and a check (a clock read and a few loads) costs
/// well under 1 %.
pub const HOOK_EVERY: c_int = 2000;

/// What the hook asks of the running script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Run on.
    Continue,
    /// Yield to the reactor (only when the script can).
    Yield,
    /// Stop with this error reply (raised as `{err = ...}`).
    Stop(&'static str),
}

thread_local! {
    /// The coroutines of the running script that the runtime resumes (the script's main one
    /// and those of its pcalls): the hook yields only these, never a coroutine of the
    /// script's own.
    static ADOPTED: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    /// An error to raise at the script's next instruction: a redis.call whose hop failed.
    static RAISE: RefCell<Option<String>> = const { RefCell::new(None) };
    /// Decides what the hook does; set while a script runs on this thread.
    static CHECK: RefCell<Option<Box<dyn FnMut() -> Verdict>>> = const { RefCell::new(None) };
}

/// The part of Lua 5.1.5's `lua_State` (lstate.h) that tells whether a yield is possible
/// now: `nCcalls > baseCcalls` means a C call (pcall, a metamethod, a library function)
/// lies between the running code and the coroutine's resume. Layout of the vendored Lua
/// 5.1.5 on 64-bit targets; `tests::yieldability_is_read_right` checks it.
#[repr(C)]
struct LuaStateHead {
    next: *mut u8,
    tt: u8,
    marked: u8,
    status: u8,
    top: *mut u8,
    base: *mut u8,
    l_g: *mut u8,
    ci: *mut u8,
    savedpc: *const u32,
    stack_last: *mut u8,
    stack: *mut u8,
    end_ci: *mut u8,
    base_ci: *mut u8,
    stacksize: c_int,
    size_ci: c_int,
    n_ccalls: u16,
    base_ccalls: u16,
}

/// Whether the coroutine `state` may yield now.
///
/// # Safety
/// `state` is a live Lua 5.1 state, running.
pub unsafe fn can_yield(state: *mut ffi::lua_State) -> bool {
    let head = &*(state as *const LuaStateHead);
    head.n_ccalls <= head.base_ccalls
}

fn thread_key(thread: &Thread) -> usize {
    thread.to_pointer() as usize
}

/// Marks `thread` as one of the running script's coroutines (the hook may yield it) and hooks
/// it; does nothing while no script runs ([`install`]).
pub fn adopt(thread: &Thread) {
    // Outside a script's run (a library body loading) the VM's own hook stays.
    if CHECK.with(|c| c.borrow().is_none()) {
        return;
    }
    let key = thread_key(thread);
    ADOPTED.with(|a| a.borrow_mut().push(key));
    // SAFETY: the pointer of a thread value is its lua_State; the thread is alive (the
    // caller holds it).
    unsafe {
        ffi::lua_sethook(
            key as *mut ffi::lua_State,
            Some(count_hook),
            ffi::LUA_MASKCOUNT,
            HOOK_EVERY,
        );
    }
}

/// Forgets `thread` (finished).
pub fn release(thread: &Thread) {
    let key = thread_key(thread);
    ADOPTED.with(|a| {
        let mut adopted = a.borrow_mut();
        if let Some(at) = adopted.iter().rposition(|&k| k == key) {
            adopted.swap_remove(at);
        }
    });
}

/// Installs `check` as what the hook asks while a script runs on this thread; the returned
/// guard removes it.
pub fn install(check: Box<dyn FnMut() -> Verdict>) -> Installed {
    CHECK.with(|c| *c.borrow_mut() = Some(check));
    Installed
}

/// Removes the hook's check when dropped.
pub struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        CHECK.with(|c| *c.borrow_mut() = None);
        RAISE.with(|r| *r.borrow_mut() = None);
        ADOPTED.with(|a| a.borrow_mut().clear());
    }
}

/// Raises `{err = text}` in the coroutine `state` at its next instruction.
///
/// # Safety
/// `state` is a live, suspended Lua 5.1 coroutine of the running script.
pub unsafe fn raise_next(state: *mut ffi::lua_State, text: String) {
    RAISE.with(|r| *r.borrow_mut() = Some(text));
    ffi::lua_sethook(state, Some(count_hook), ffi::LUA_MASKCOUNT, 1);
}

fn verdict() -> Verdict {
    CHECK.with(|c| match c.try_borrow_mut() {
        Ok(mut check) => check.as_mut().map_or(Verdict::Continue, |f| f()),
        Err(_) => Verdict::Continue,
    })
}

unsafe extern "C-unwind" fn count_hook(state: *mut ffi::lua_State, _ar: *mut ffi::lua_Debug) {
    if RAISE.with(|r| r.borrow().is_some()) {
        ffi::lua_sethook(state, Some(count_hook), ffi::LUA_MASKCOUNT, HOOK_EVERY);
        if let Some(text) = RAISE.with(|r| r.borrow_mut().take()) {
            super::call::push_error_table(state, &text);
        }
        // `text` is dropped: nothing with a destructor is alive for the longjmp.
        ffi::lua_error(state);
    }
    match verdict() {
        Verdict::Continue => {}
        Verdict::Yield => {
            let ours = ADOPTED.with(|a| a.borrow().contains(&(state as usize)));
            if ours && can_yield(state) {
                ffi::lua_yield(state, 0);
            }
        }
        Verdict::Stop(message) => {
            // Every instruction from now on raises again, so a pcall cannot swallow it.
            ffi::lua_sethook(state, Some(count_hook), ffi::LUA_MASKCOUNT, 1);
            ffi::lua_createtable(state, 0, 1);
            ffi::lua_pushlstring(state, message.as_ptr().cast(), message.len());
            ffi::lua_setfield(state, -2, c"err".as_ptr());
            // No Rust value with a destructor is alive in this frame: the longjmp skips none.
            ffi::lua_error(state);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlua::{Function, Lua, ThreadStatus};

    fn resumes(lua: &Lua, source: &str) -> (i64, usize) {
        let f: Function = lua.load(source).into_function().unwrap();
        let thread = lua.create_thread(f).unwrap();
        let _guard = install(Box::new(|| Verdict::Yield));
        adopt(&thread);
        let mut count = 0;
        let mut result = 0;
        while thread.status() == ThreadStatus::Resumable {
            result = thread.resume::<Option<i64>>(()).unwrap().unwrap_or(-1);
            count += 1;
        }
        (result, count)
    }

    #[test]
    fn yieldability_is_read_right() {
        let lua = Lua::new();
        let sum = 5_000_050_000;
        // A loop at the coroutine's top level yields at every check.
        let (result, count) = resumes(&lua, "local x=0 for i=1,100000 do x=x+i end return x");
        assert_eq!(result, sum);
        assert!(count > 10, "{count} resumes");
        // Inside the stock pcall (a C function) and inside a metamethod it cannot.
        let (result, count) = resumes(
            &lua,
            "local ok, v = pcall(function() local x=0 for i=1,100000 do x=x+i end return x end) return v",
        );
        assert_eq!((result, count), (sum, 1));
        let (result, count) = resumes(
            &lua,
            "local t = setmetatable({}, {__index=function() local x=0 for i=1,100000 do x=x+i end return x end}) return t.a",
        );
        assert_eq!((result, count), (sum, 1));
    }
}
