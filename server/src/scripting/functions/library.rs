//! Running a library body and collecting its `redis.register_function` calls (Redis 7.0
//! `function_lua.c`: `luaEngineCreate`, `luaRegisterFunction`,
//! `luaRegisterFunctionReadNamedArgs`, `luaRegisterFunctionReadPositionalArgs`,
//! `luaEngineLoadHook`).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use mlua::{Function, HookTriggers, Lua, MultiValue, Table, Value, VmState};

use super::env::{base_function, LoadEnv};
use super::flags::FunctionFlags;
use super::metadata::{is_valid_name, Metadata, INVALID_NAME};
use super::registry::FunctionInfo;

/// How long a library body may run at load before it is stopped with
/// `ERR Error registering functions: ERR FUNCTION LOAD timeout` (Redis `LOAD_TIMEOUT_MS`;
/// redis-server 7.0.15 answers `while true do end` after 0.50 s).
pub const LOAD_TIMEOUT: Duration = Duration::from_millis(500);

/// Instructions between two checks of the load time limit (Redis uses the same count).
const HOOK_EVERY: u32 = 100_000;

/// A function registered by a library body, with its Lua callback.
#[derive(Clone, Debug)]
pub struct RegisteredFunction {
    /// Name as registered (`[A-Za-z0-9_]+`).
    pub name: String,
    /// The callback; `FCALL` calls it with `(KEYS, ARGV)`.
    pub callback: Function,
    /// Flags from `flags={...}`.
    pub flags: FunctionFlags,
    /// `description=...`, if given.
    pub description: Option<Bytes>,
}

impl RegisteredFunction {
    /// The Lua-free part, for [`Registration`](super::registry::Registration).
    pub fn info(&self) -> FunctionInfo {
        FunctionInfo {
            name: self.name.clone(),
            flags: self.flags,
            description: self.description.clone(),
        }
    }
}

/// Registration state shared with the `register_function` closure.
struct LoadState {
    /// True only while the body runs.
    active: bool,
    functions: Vec<RegisteredFunction>,
}

/// Runs a library body in `lua`, with the callbacks' globals resolving to `lua.globals()`
/// after the load. See [`register_with_env`].
pub fn register(
    lua: &Lua,
    code: &[u8],
    meta: &Metadata,
) -> Result<Vec<RegisteredFunction>, String> {
    register_with_env(lua, code, meta, &lua.globals())
}

/// Runs the body of library `code` (whose metadata is `meta`) and returns the functions it
/// registered, in order.
///
/// The body runs in Redis's load environment (see [`super::env`]): only
/// `redis.register_function`, `redis.log`, `redis.LOG_*`, `redis.REDIS_VERSION(_NUM)` exist,
/// the last five copied from `runtime_env.redis` when it has them. After the load, global
/// names in the library's functions resolve through `runtime_env` (reads only; assignments
/// raise `Attempt to modify a readonly table`). Nothing in `runtime_env` is modified, and the
/// Lua hook is removed at the end (a hook the caller had installed must be set again).
///
/// `redis.register_function` accepts `(name, callback)` or one table
/// `{function_name=, callback=, flags={...}, description=}`; called after the load it raises
/// `{err="ERR redis.register_function can only be called on FUNCTION LOAD command"}`.
///
/// Errors (redis-server 7.0.15 texts):
/// - `ERR Error compiling function: user_function:<line>: <lua message>`
/// - `ERR Error registering functions: ERR <message>` for errors raised by
///   `register_function` (e.g. `wrong number of arguments to redis.register_function`), the
///   time limit (`FUNCTION LOAD timeout`) and Lua runtime errors
///   (`user_function:2: Script attempted to access nonexistent global variable 'math'`)
/// - `ERR No functions registered`
///
/// Lua messages are cut at their first NUL byte, as Redis's C formatting does.
pub fn register_with_env(
    lua: &Lua,
    code: &[u8],
    meta: &Metadata,
    runtime_env: &Table,
) -> Result<Vec<RegisteredFunction>, String> {
    let body = code.get(meta.body_offset..).unwrap_or_default();
    let state = Rc::new(RefCell::new(LoadState {
        active: true,
        functions: Vec::new(),
    }));
    let reg_fn = make_register_function(lua, state.clone())?;
    let env = LoadEnv::new(lua, runtime_env, reg_fn)?;
    let result = run_body(lua, body, &env);
    state.borrow_mut().active = false;
    env.finish(runtime_env)?;
    result?;
    let functions = std::mem::take(&mut state.borrow_mut().functions);
    if functions.is_empty() {
        return Err("ERR No functions registered".to_string());
    }
    Ok(functions)
}

/// Compiles and runs the body under the time limit.
fn run_body(lua: &Lua, body: &[u8], env: &LoadEnv) -> Result<(), String> {
    let chunk = lua
        .load(body)
        .set_name("@user_function")
        .set_mode(mlua::ChunkMode::Text)
        .set_environment(env.env.clone())
        .into_function()
        .map_err(|e| {
            let msg = match e {
                mlua::Error::SyntaxError { message, .. } => message,
                other => other.to_string(),
            };
            format!("ERR Error compiling function: {}", c_str(&msg))
        })?;
    let trampoline = trampoline(lua)?;
    let timed_out = Rc::new(Cell::new(false));
    let flag = timed_out.clone();
    let start = Instant::now();
    lua.set_hook(
        HookTriggers::new().every_nth_instruction(HOOK_EVERY),
        move |_, _| {
            if flag.get() || start.elapsed() > LOAD_TIMEOUT {
                flag.set(true);
                return Err(mlua::Error::runtime("FUNCTION LOAD timeout"));
            }
            Ok(VmState::Continue)
        },
    )
    .map_err(|e| format!("ERR Error registering functions: {e}"))?;
    let outcome = trampoline.call::<(Value, Value)>(chunk);
    lua.remove_hook();
    let fail = |msg: &str| Err(format!("ERR Error registering functions: {}", c_str(msg)));
    if timed_out.get() {
        return fail("ERR FUNCTION LOAD timeout");
    }
    match outcome {
        Ok((Value::Nil, _)) => Ok(()),
        // Errors raised with a table: Redis uses its `err` field as is.
        Ok((Value::Boolean(true), Value::String(s))) => fail(&s.to_string_lossy()),
        Ok((Value::Boolean(true), _)) => fail("(null)"),
        // String errors get an "ERR " prefix.
        Ok((Value::String(s), _)) => fail(&format!("ERR {}", s.to_string_lossy())),
        Ok(_) => fail("ERR unknown error"),
        Err(e) => fail(&format!("ERR {e}")),
    }
}

/// A Lua function that runs its argument under `pcall` and reports the error value without
/// the traceback mlua would add: `nil` on success, `(true, err_field)` for a table error,
/// `(message)` for a string or number error, `(false)` otherwise.
fn trampoline(lua: &Lua) -> Result<Function, String> {
    const SRC: &str = r#"
local pcall, type = ...
return function(f)
  local ok, e = pcall(f)
  if ok then return nil end
  local t = type(e)
  if t == 'table' then return true, e.err end
  if t == 'string' or t == 'number' then return e end
  return false
end
"#;
    let wrap = || -> mlua::Result<Function> {
        lua.load(SRC).set_name("=functions_load").call((
            base_function(lua, "pcall").map_err(mlua::Error::runtime)?,
            base_function(lua, "type").map_err(mlua::Error::runtime)?,
        ))
    };
    wrap().map_err(|e| format!("ERR Error registering functions: {e}"))
}

/// `redis.register_function`: a Lua wrapper raising `{err=...}` around the Rust parser.
fn make_register_function(lua: &Lua, state: Rc<RefCell<LoadState>>) -> Result<Function, String> {
    const SRC: &str = r#"
local impl, error = ...
return function(...)
  local err = impl(...)
  if err then error({err = err}) end
end
"#;
    let build = || -> mlua::Result<Function> {
        let imp = lua.create_function(move |lua, args: MultiValue| {
            let mut st = state.borrow_mut();
            if !st.active {
                return Ok(Some(
                    "ERR redis.register_function can only be called on FUNCTION LOAD command"
                        .to_string(),
                ));
            }
            match parse_args(lua, args, &st.functions) {
                Ok(f) => {
                    st.functions.push(f);
                    Ok(None)
                }
                Err(e) => Ok(Some(e)),
            }
        })?;
        lua.load(SRC).set_name("=functions_register").call((
            imp,
            base_function(lua, "error").map_err(mlua::Error::runtime)?,
        ))
    };
    build().map_err(|e| format!("ERR Error registering functions: {e}"))
}

/// Validates one `register_function` call; the error texts are redis-server 7.0.15's.
fn parse_args(
    lua: &Lua,
    args: MultiValue,
    existing: &[RegisteredFunction],
) -> Result<RegisteredFunction, String> {
    let mut args: Vec<Value> = args.into_iter().collect();
    let (name, callback, flags, description) = match args.len() {
        1 => match args.pop() {
            Some(Value::Table(t)) => named_args(lua, &t)?,
            _ => return Err("ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).".to_string()),
        },
        2 => {
            let cb = args.pop();
            let name = args.pop().and_then(|v| coerce(lua, v)).ok_or_else(|| {
                "ERR first argument to redis.register_function must be a string".to_string()
            })?;
            let Some(Value::Function(cb)) = cb else {
                return Err(
                    "ERR second argument to redis.register_function must be a function"
                        .to_string(),
                );
            };
            (name, cb, FunctionFlags::EMPTY, None)
        }
        _ => return Err("ERR wrong number of arguments to redis.register_function".to_string()),
    };
    if !is_valid_name(&name) {
        return Err(INVALID_NAME.to_string());
    }
    // Valid names are ASCII.
    let name = String::from_utf8_lossy(&name).into_owned();
    // Redis 7.0.15 compares case-sensitively here, accepts `f` and `F` in one library and then
    // asserts (crashes) when that library is replaced or deleted; refuse it instead.
    if existing.iter().any(|f| f.name.eq_ignore_ascii_case(&name)) {
        return Err("ERR Function already exists in the library".to_string());
    }
    Ok(RegisteredFunction {
        name,
        callback,
        flags,
        description: description.map(Bytes::from),
    })
}

type Parsed = (Vec<u8>, Function, FunctionFlags, Option<Vec<u8>>);

/// The named-arguments form, `redis.register_function{...}`; keys are visited in Lua's
/// `next` order, as Redis does, so the first offending key decides the error.
fn named_args(lua: &Lua, t: &Table) -> Result<Parsed, String> {
    let (mut name, mut callback, mut flags, mut description) =
        (None, None, FunctionFlags::EMPTY, None);
    for pair in t.pairs::<Value, Value>() {
        let (k, v) = pair.map_err(|e| format!("ERR {e}"))?;
        let key = match &k {
            Value::String(s) => s.as_bytes().to_vec(),
            _ => Vec::new(),
        };
        match key.as_slice() {
            b"function_name" => {
                name = Some(coerce(lua, v).ok_or_else(|| {
                    "ERR function_name argument given to redis.register_function must be a string"
                        .to_string()
                })?);
            }
            b"description" => {
                description = Some(coerce(lua, v).ok_or_else(|| {
                    "ERR description argument given to redis.register_function must be a string"
                        .to_string()
                })?);
            }
            b"callback" => match v {
                Value::Function(f) => callback = Some(f),
                _ => {
                    return Err(
                        "ERR callback argument given to redis.register_function must be a function"
                            .to_string(),
                    );
                }
            },
            b"flags" => match v {
                Value::Table(ft) => flags = parse_flags(&ft)?,
                _ => return Err("ERR flags argument to redis.register_function must be a table representing function flags".to_string()),
            },
            _ => {
                return Err("ERR unknown argument given to redis.register_function".to_string());
            }
        }
    }
    let name = name.ok_or_else(|| {
        "ERR redis.register_function must get a function name argument".to_string()
    })?;
    let callback = callback
        .ok_or_else(|| "ERR redis.register_function must get a callback argument".to_string())?;
    Ok((name, callback, flags, description))
}

/// `flags={...}`: the array part from index 1 up to the first nil; each entry a flag name.
fn parse_flags(t: &Table) -> Result<FunctionFlags, String> {
    let mut flags = FunctionFlags::EMPTY;
    for i in 1.. {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) => break,
            Ok(Value::String(s)) => match FunctionFlags::from_name(&s.as_bytes()) {
                Some(f) => flags.insert(f),
                None => return Err("ERR unknown flag given".to_string()),
            },
            _ => return Err("ERR unknown flag given".to_string()),
        }
    }
    Ok(flags)
}

/// Lua's `lua_isstring` + `lua_tostring`: strings and numbers, as bytes.
fn coerce(lua: &Lua, v: Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(_) | Value::Number(_) => lua
            .coerce_string(v)
            .ok()
            .flatten()
            .map(|s| s.as_bytes().to_vec()),
        _ => None,
    }
}

/// The text up to the first NUL, as C's `%s` prints it.
fn c_str(s: &str) -> &str {
    s.split('\0').next().unwrap_or_default()
}

#[cfg(test)]
mod tests;
