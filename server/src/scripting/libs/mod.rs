//! The Lua libraries Redis 7.0 gives scripts besides the standard ones: `cjson`, `cmsgpack`,
//! `bit` and `struct`, written in Rust against the Lua 5.1 C API that mlua exposes
//! (`mlua::ffi`), with Redis 7.0.15's observable behaviour: same results byte for byte, same
//! error texts (plain Lua strings, with the caller's `chunk:line:` prefix as `luaL_error`
//! gives it), same limits.
//!
//! The functions are C functions as in Redis; their bodies return errors instead of raising
//! them (see [`raw`]), and never panic on any input. The tables are plain tables of
//! functions; making them read-only is the caller's business.

pub mod bit;
pub mod cjson;
pub mod cmsgpack;
mod raw;
pub mod structlib;
#[cfg(test)]
mod tests;

use mlua::Lua;

/// Creates the globals `cjson`, `cmsgpack`, `bit` and `struct` in `lua`'s global table.
///
/// # Errors
/// Lua memory errors, or an error from a `__newindex` on the global table.
pub fn load(lua: &Lua) -> mlua::Result<()> {
    let globals = lua.globals();
    globals.set("cjson", cjson::create(lua)?)?;
    globals.set("cmsgpack", cmsgpack::create(lua)?)?;
    globals.set("bit", bit::create(lua)?)?;
    globals.set("struct", structlib::create(lua)?)?;
    Ok(())
}
