//! The `redis` table scripts see (Redis 7.0 `script_lua.c` `luaRegisterRedisAPI`): call,
//! pcall, sha1hex, error_reply, status_reply, log and its LOG_* levels, setresp, set_repl and
//! its REPL_* flags, replicate_commands, acl_check_cmd, REDIS_VERSION(_NUM). `breakpoint` and
//! `debug` (the Lua debugger's) are absent: shardline has no script debugger.

use bytes::Bytes;
use mlua::{Lua, MultiValue, Table, Value};

use super::{call, context};

/// `redis.REDIS_VERSION`: the Redis version shardline answers as.
pub const REDIS_VERSION: &str = "7.0.15";
/// `redis.REDIS_VERSION_NUM`: 0x00MMmmpp.
pub const REDIS_VERSION_NUM: u32 = 0x0007_000f;

/// `{err = message}`.
pub fn error_table(lua: &Lua, message: &str) -> mlua::Result<Value> {
    let table = lua.create_table_with_capacity(0, 1)?;
    table.raw_set("err", message)?;
    Ok(Value::Table(table))
}

/// The arguments of a Lua call as command arguments: strings as they are, numbers as Lua
/// prints them (`%.14g`); anything else is Redis's error.
fn command_args(lua: &Lua, values: MultiValue) -> Result<Vec<Bytes>, &'static str> {
    if values.is_empty() {
        return Err("ERR Please specify at least one argument for this redis lib call");
    }
    let mut args = Vec::with_capacity(values.len());
    for value in values {
        let bytes = match &value {
            Value::String(s) => Bytes::copy_from_slice(&s.as_bytes()),
            Value::Number(_) | Value::Integer(_) => match lua.coerce_string(value.clone()) {
                Ok(Some(s)) => Bytes::copy_from_slice(&s.as_bytes()),
                _ => return Err(BAD_ARGUMENT),
            },
            _ => return Err(BAD_ARGUMENT),
        };
        args.push(bytes);
    }
    Ok(args)
}

const BAD_ARGUMENT: &str = "ERR Lua redis lib command arguments must be strings or integers";

/// Creates the `redis` table.
///
/// # Errors
/// A Lua error while creating it (out of memory).
pub fn create(lua: &Lua) -> mlua::Result<Table> {
    let redis = lua.create_table()?;
    // SAFETY: plain C functions of the Lua API (scripting::call).
    let (call, pcall) = unsafe {
        (
            lua.create_c_function(call::redis_call)?,
            lua.create_c_function(call::redis_pcall)?,
        )
    };
    redis.set("call", call)?;
    redis.set("pcall", pcall)?;
    redis.set(
        "sha1hex",
        lua.create_function(|lua, values: MultiValue| {
            let [value] = values
                .into_vec()
                .try_into()
                .map_err(|_| mlua::Error::runtime("wrong number of arguments"))?;
            let bytes = match lua.coerce_string(value)? {
                Some(s) => s.as_bytes().to_vec(),
                None => Vec::new(),
            };
            Ok(sha1_hex(&bytes))
        })?,
    )?;
    redis.set(
        "error_reply",
        lua.create_function(|lua, message: mlua::String| {
            // Redis 7.0 keeps the leading `-` it adds; the reply drops it again.
            let message = message.to_string_lossy();
            if message.starts_with('-') {
                error_table(lua, &message)
            } else {
                error_table(lua, &format!("-{message}"))
            }
        })?,
    )?;
    redis.set(
        "status_reply",
        lua.create_function(|lua, message: mlua::String| {
            let table = lua.create_table_with_capacity(0, 1)?;
            table.raw_set("ok", message)?;
            Ok(table)
        })?,
    )?;
    redis.set("log", lua.create_function(log)?)?;
    for (name, level) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
    ] {
        redis.set(name, level)?;
    }
    redis.set(
        "setresp",
        lua.create_function(|lua, values: MultiValue| {
            if values.len() != 1 {
                return Err(mlua::Error::runtime(
                    "redis.setresp() requires one argument.",
                ));
            }
            // As lua_tonumber: "3" is 3.
            let resp = match values.front().cloned().map(|v| lua.coerce_number(v)) {
                Some(Ok(Some(n))) => n as i64,
                _ => 0,
            };
            if resp != 2 && resp != 3 {
                return Err(mlua::Error::runtime("RESP version must be 2 or 3."));
            }
            if let Some(ctx) = context::current() {
                ctx.resp.set(resp as u8);
            }
            Ok(())
        })?,
    )?;
    for (name, flag) in [
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        redis.set(name, flag)?;
    }
    redis.set(
        "set_repl",
        lua.create_function(|_, values: MultiValue| {
            if values.len() != 1 {
                return Err(mlua::Error::runtime(
                    "redis.set_repl() requires one argument.",
                ));
            }
            match values.front() {
                Some(Value::Number(n)) if (0.0..=3.0).contains(n) => Ok(()),
                Some(Value::Integer(n)) if (0..=3).contains(n) => Ok(()),
                _ => Err(mlua::Error::runtime(
                    "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
                )),
            }
        })?,
    )?;
    redis.set("replicate_commands", lua.create_function(|_, ()| Ok(true))?)?;
    redis.set(
        "acl_check_cmd",
        lua.create_function(|lua, values: MultiValue| {
            let args = command_args(lua, values).map_err(mlua::Error::runtime)?;
            match crate::cmd::table::lookup(&args[0]) {
                // No ACL rules: every user may run every command.
                Some(_) => Ok(true),
                None => Err(mlua::Error::runtime(
                    "Invalid command passed to redis.acl_check_cmd()",
                )),
            }
        })?,
    )?;
    redis.set("REDIS_VERSION", REDIS_VERSION)?;
    redis.set("REDIS_VERSION_NUM", REDIS_VERSION_NUM)?;
    Ok(redis)
}

/// `redis.log(level, message, ...)`: the arguments joined by spaces, to the server's log at
/// the level's severity (Redis's `serverLogRaw` levels).
fn log(_: &Lua, values: MultiValue) -> mlua::Result<()> {
    if values.len() < 2 {
        return Err(mlua::Error::runtime(
            "redis.log() requires two arguments or more.",
        ));
    }
    let mut values = values.into_iter();
    let level = match values.next() {
        Some(Value::Number(n)) => n as i64,
        Some(Value::Integer(n)) => n,
        _ => {
            return Err(mlua::Error::runtime(
                "First argument must be a number (log level).",
            ))
        }
    };
    if !(0..=3).contains(&level) {
        return Err(mlua::Error::runtime("Invalid debug level."));
    }
    let message = values
        .map(|v| match v {
            Value::String(s) => s.to_string_lossy().to_string(),
            Value::Number(n) => n.to_string(),
            Value::Integer(n) => n.to_string(),
            _ => String::new(),
        })
        .collect::<Vec<_>>()
        .join(" ");
    match level {
        0 => tracing::debug!(target: "script", "{message}"),
        1 => tracing::debug!(target: "script", "{message}"),
        2 => tracing::info!(target: "script", "{message}"),
        _ => tracing::warn!(target: "script", "{message}"),
    }
    Ok(())
}

/// SHA1 of `bytes` as 40 lowercase hex digits (SCRIPT LOAD's and `redis.sha1hex`'s form).
pub fn sha1_hex(bytes: &[u8]) -> String {
    let digest = openssl::sha::sha1(bytes);
    let mut out = String::with_capacity(40);
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}
