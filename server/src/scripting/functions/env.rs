//! The Lua environment a library body runs in while it loads (Redis 7.0 `function_lua.c`
//! `luaEngineCreate`, `luaEngineInitEngine`, and the error/readonly protections of
//! `script_lua.c`).
//!
//! Redis runs the body with globals that resolve to a table holding only `redis`, itself a
//! table with only `register_function`, `log`, the `LOG_*` levels, `REDIS_VERSION` and
//! `REDIS_VERSION_NUM`. Every other name fails with
//! `Script attempted to access nonexistent global variable '<name>'` (e.g. `math`, `pcall`,
//! `redis.call`), and assignments fail with `Attempt to modify a readonly table`. Once the load
//! is over the same globals resolve to the normal script globals, so the registered callbacks
//! see the full sandbox when `FCALL` runs them, while the `redis` table captured at load time
//! (`local lib = redis`) stays the restricted, read-only one.
//!
//! Here the body's function environment (Lua 5.1 `setfenv`) is a fresh empty table `E` whose
//! metatable `__newindex` always fails and whose `__index` is first the load-time lookup and
//! then, after [`LoadEnv::finish`], the runtime globals table.

use mlua::{Function, Lua, Table, Value};

/// Lua source of the protection helpers. Errors are raised at level 2 so that they carry the
/// position of the code that did the access (`user_function:2: ...`), as Redis's do.
const HELPERS: &str = r#"
local error, type, rawget, setmetatable = ...
local function lookup(contents)
  return function(_, k)
    local v = rawget(contents, k)
    if v ~= nil then return v end
    local kt = type(k)
    if kt ~= 'string' and kt ~= 'number' then
      error('Second argument to luaProtectedTableError must be a string or number', 2)
    end
    error("Script attempted to access nonexistent global variable '" .. k .. "'", 2)
  end
end
local function readonly()
  error('Attempt to modify a readonly table', 2)
end
local function protect(contents)
  return setmetatable({}, { __index = lookup(contents), __newindex = readonly })
end
local function environment(contents)
  local meta = { __index = lookup(contents), __newindex = readonly }
  return setmetatable({}, meta), meta
end
return protect, environment
"#;

/// Gets a standard function from the globals (raw first, so a sandbox whose globals error on
/// unknown names is not triggered).
pub(super) fn base_function(lua: &Lua, name: &str) -> Result<Function, String> {
    // The sandbox keeps Lua's own functions it replaced (its pcall runs in a coroutine of
    // its own, outside the load's time-limit hook).
    if let Ok(Value::Function(f)) =
        lua.named_registry_value::<Value>(&format!("{}{name}", super::super::vm::STOCK_PREFIX))
    {
        return Ok(f);
    }
    let g = lua.globals();
    if let Ok(Value::Function(f)) = g.raw_get::<Value>(name) {
        return Ok(f);
    }
    match g.get::<Value>(name) {
        Ok(Value::Function(f)) => Ok(f),
        _ => Err(format!(
            "ERR Error registering functions: Lua base function '{name}' is not available"
        )),
    }
}

/// Reads `t[key]` without letting a protective `__index` raise: raw first, then a normal read
/// whose error counts as absent.
pub(super) fn soft_get(t: &Table, key: &str) -> Value {
    match t.raw_get::<Value>(key) {
        Ok(Value::Nil) | Err(_) => t.get::<Value>(key).unwrap_or(Value::Nil),
        Ok(v) => v,
    }
}

/// The environment of one library load.
pub struct LoadEnv {
    /// The table to install as the body's environment (`E`).
    pub env: Table,
    /// `E`'s metatable, whose `__index` [`LoadEnv::finish`] switches.
    meta: Table,
}

/// Names copied from the caller's `redis` table into the load-time `redis` table
/// (Redis 7.0 `luaRegisterLogFunction`, `luaRegisterVersion`).
const COPIED: [&str; 7] = [
    "log",
    "LOG_DEBUG",
    "LOG_VERBOSE",
    "LOG_NOTICE",
    "LOG_WARNING",
    "REDIS_VERSION",
    "REDIS_VERSION_NUM",
];

impl LoadEnv {
    /// Builds the load-time globals. `register_function` becomes `redis.register_function`;
    /// the other [`COPIED`] fields are taken from `runtime_env.redis` when present.
    pub fn new(
        lua: &Lua,
        runtime_env: &Table,
        register_function: Function,
    ) -> Result<Self, String> {
        let build = || -> mlua::Result<(Table, Table)> {
            let helpers: (Function, Function) =
                lua.load(HELPERS).set_name("=functions_env").call((
                    base_function(lua, "error").map_err(mlua::Error::runtime)?,
                    base_function(lua, "type").map_err(mlua::Error::runtime)?,
                    base_function(lua, "rawget").map_err(mlua::Error::runtime)?,
                    base_function(lua, "setmetatable").map_err(mlua::Error::runtime)?,
                ))?;
            let (protect, environment) = helpers;
            let api = lua.create_table()?;
            api.raw_set("register_function", register_function)?;
            if let Value::Table(redis) = soft_get(runtime_env, "redis") {
                for name in COPIED {
                    let v = soft_get(&redis, name);
                    if !v.is_nil() {
                        api.raw_set(name, v)?;
                    }
                }
            }
            let redis: Table = protect.call(api)?;
            let globals = lua.create_table()?;
            globals.raw_set("redis", redis)?;
            environment.call(globals)
        };
        let (env, meta) = build().map_err(|e| format!("ERR Error registering functions: {e}"))?;
        Ok(LoadEnv { env, meta })
    }

    /// Ends the load: names now resolve through `runtime_env` (assignments still fail).
    pub fn finish(&self, runtime_env: &Table) -> Result<(), String> {
        self.meta
            .raw_set("__index", runtime_env.clone())
            .map_err(|e| format!("ERR Error registering functions: {e}"))
    }
}
