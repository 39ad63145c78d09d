//! One shard's Lua 5.1 VM with Redis 7.0's sandbox: the libraries scripts use (base, table,
//! string, math, coroutine, `cjson`, `cmsgpack`, `bit`, `struct`), the `redis` table
//! ([`super::api`]), global protection and the suspendable `pcall` ([`prelude.lua`]).
//!
//! A VM lives on its shard's thread and is never shared: each shard compiles the scripts it
//! runs itself, from the process-wide cache of bodies ([`super::Scripts`]).

use std::cell::RefCell;
use std::collections::HashMap;

use mlua::{Function, Lua, LuaOptions, StdLib, Table};

use super::{api, call, hook, libs};

/// The Lua source of the sandbox.
const PRELUDE: &str = include_str!("prelude.lua");

/// Prefix of the registry names under which the VM keeps Lua's stock base functions that
/// the sandbox replaces (`pcall`, `xpcall`, …).
pub const STOCK_PREFIX: &str = "shardline.stock.";

/// Chunk name of scripts run by EVAL: errors read `user_script:<line>: …`, as Redis's.
pub const EVAL_CHUNK: &str = "@user_script";

/// One sandboxed Lua VM and the scripts compiled in it.
pub struct Vm {
    /// The VM.
    pub lua: Lua,
    /// The sandbox's `run(f, ...)`: `true, result` or `false, error, source, line`.
    pub run: Function,
    /// A function returning the reply set by [`call::set_result`] as a Lua value.
    pub push_result: Function,
    /// The environment scripts see (protected globals).
    pub env: Table,
    /// The globals behind `env`, where KEYS and ARGV are set before each run.
    pub globals: Table,
    /// Compiled EVAL scripts by SHA1 (40 lowercase hex digits).
    pub compiled: RefCell<HashMap<String, Function>>,
    /// The [`super::Scripts`] flush count these compiled scripts belong to.
    pub epoch: std::cell::Cell<u64>,
}

impl Vm {
    /// A fresh sandboxed VM.
    ///
    /// # Errors
    /// A Lua error while building the sandbox (out of memory).
    pub fn new() -> mlua::Result<Vm> {
        // SAFETY: the debug library is loaded only for the sandbox's own use: prelude.lua
        // keeps `debug.getinfo` privately and removes `debug` from the globals.
        let lua = unsafe {
            Lua::unsafe_new_with(
                StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG,
                LuaOptions::default(),
            )
        };
        let globals = lua.globals();
        libs::load(&lua)?;
        globals.set("redis", api::create(&lua)?)?;
        for name in [
            "pcall",
            "xpcall",
            "setmetatable",
            "rawset",
            "rawget",
            "next",
            "pairs",
        ] {
            let stock: Function = globals.get(name)?;
            lua.set_named_registry_value(&format!("{STOCK_PREFIX}{name}"), stock)?;
        }
        let helpers = lua.create_table()?;
        let debug: Table = globals.get("debug")?;
        helpers.set("getinfo", debug.get::<Function>("getinfo")?)?;
        helpers.set("load", globals.get::<Function>("load")?)?;
        helpers.set(
            "hop_pending",
            lua.create_function(|_, ()| Ok(call::hop_pending()))?,
        )?;
        helpers.set(
            "adopt",
            lua.create_function(|_, co: mlua::Thread| {
                hook::adopt(&co);
                Ok(())
            })?,
        )?;
        helpers.set(
            "release",
            lua.create_function(|_, co: mlua::Thread| {
                hook::release(&co);
                Ok(())
            })?,
        )?;
        let sandbox: Table = lua.load(PRELUDE).set_name("=shardline").call(helpers)?;
        // SAFETY: a plain C function of the Lua API.
        let push_result = unsafe { lua.create_c_function(call::push_result)? };
        Ok(Vm {
            push_result,
            run: sandbox.get("run")?,
            env: sandbox.get("env")?,
            globals,
            compiled: RefCell::new(HashMap::new()),
            epoch: std::cell::Cell::new(0),
            lua,
        })
    }

    /// Collects the VM's garbage when it holds more than half of `memory_limit` bytes: Lua
    /// 5.1 does not collect before it reports an allocation past the limit, so the garbage of
    /// a script that ran out of memory would make the next scripts fail too.
    pub fn relieve(&self, memory_limit: usize) {
        if memory_limit > 0 && self.lua.used_memory() > memory_limit / 2 {
            let _ = self.lua.gc_collect();
        }
    }

    /// Compiles `body` as a script named `chunk` (e.g. [`EVAL_CHUNK`]) in the sandbox.
    ///
    /// # Errors
    /// The compiler's message, e.g. `user_script:1: unexpected symbol near '<eof>'`.
    pub fn compile(&self, body: &[u8], chunk: &str) -> Result<Function, String> {
        self.lua
            .load(body)
            .set_name(chunk)
            .set_environment(self.env.clone())
            .into_function()
            .map_err(|err| match err {
                mlua::Error::SyntaxError { message, .. } => message,
                other => other.to_string(),
            })
    }
}
