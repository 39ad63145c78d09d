//! Redis 7.0 functions: the library side of `FUNCTION LOAD / LIST / DUMP / RESTORE / STATS /
//! DELETE / FLUSH` and `FCALL` (Redis 7.0 `functions.c`, `function_lua.c`, `rdb.c`).
//!
//! Layout (one concern per module):
//! - [`metadata`]: the `#!lua name=<lib>` shebang ([`Metadata::parse`]).
//! - [`flags`]: the function flags bitset ([`FunctionFlags`]).
//! - [`env`]: the restricted Lua environment a library body runs in while it loads.
//! - [`library`]: runs a library body and collects `redis.register_function` calls ([`register`]).
//! - [`registry`]: the shared, Lua-free set of loaded libraries ([`Libraries`]).
//! - [`lzf`] and [`rdb`]: LZF and RDB string encoding used by the dump payload.
//! - [`dump`]: `FUNCTION DUMP` payload and `FUNCTION RESTORE` ([`dump()`], [`restore`]).
//!
//! Error strings returned by this module are whole Redis error lines without the leading `-`
//! and the trailing CRLF, e.g. `"ERR Library 'x' already exists"`.
//!
//! `FUNCTION LOAD [REPLACE] code`, in Redis's order of checks:
//! 1. [`Metadata::parse`] (shebang errors),
//! 2. [`Libraries::check_load`] (`ERR Library 'x' already exists`, before any Lua runs),
//! 3. [`register`] in the shard's Lua state (compile / registration / timeout errors),
//! 4. [`Libraries::load`] with [`Registration::from_registered`] (`ERR Function f already
//!    exists`); the reply is the library name as a bulk string.
//!
//! `FUNCTION RESTORE payload [policy]`: parse the policy first ([`RestorePolicy::parse`];
//! redis-server reports a bad policy before a bad payload), then [`restore`] with a loader
//! doing steps 3 and 4's registration build.
//!
//! Reply shapes seen on redis-server 7.0.15 (RESP2 / RESP3):
//! - `FUNCTION LIST [WITHCODE] [LIBRARYNAME p]`: array of libraries, each a map (RESP3 `%`,
//!   RESP2 flat array) `library_name` bulk, `engine` bulk `LUA`, `functions` array of maps
//!   {`name` bulk, `description` bulk or null (`$-1` / `_`), `flags` set of status strings
//!   (RESP2 `*N` of `+no-writes`..., RESP3 `~N`)}, then with WITHCODE `library_code` bulk.
//! - `FUNCTION STATS`: map {`running_script`: null or map {`name` bulk, `command` array of
//!   bulks (the whole FCALL command), `duration_ms` integer}, `engines`: map {`LUA`: map
//!   {`libraries_count` integer, `functions_count` integer}}}.

pub mod dump;
pub mod env;
pub mod flags;
pub mod library;
pub mod lzf;
pub mod metadata;
pub mod rdb;
pub mod registry;

pub use dump::{dump, restore, RestorePolicy};
pub use flags::FunctionFlags;
pub use library::{register, register_with_env, RegisteredFunction, LOAD_TIMEOUT};
pub use metadata::Metadata;
pub use registry::{FunctionInfo, Libraries, LibraryInfo, Registration};
