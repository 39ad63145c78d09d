//! `FUNCTION DUMP` and `FUNCTION RESTORE` (Redis 7.0 `functions.c` `functionDumpCommand`,
//! `functionRestoreCommand`, `libraryJoin`; `rdb.c` `rdbSaveFunctions`, `rdbFunctionLoad`;
//! `cluster.c` `verifyDumpPayload`).
//!
//! Payload: for each library, the opcode 245 (`RDB_OPCODE_FUNCTION2`) and its code as an RDB
//! string (LZF-compressed when that saves enough, see [`rdb::save_string`]); then the RDB
//! version, 10, as 2 bytes little-endian; then the CRC-64 (Redis's, Jones polynomial) of all
//! the preceding bytes as 8 bytes little-endian.

use bytes::Bytes;

use super::metadata::Metadata;
use super::rdb::{self, Reader};
use super::registry::{Libraries, Registration};

/// The CRC-64 Redis puts in dump payloads.
const CRC64: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_REDIS);

/// `FUNCTION RESTORE` policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RestorePolicy {
    /// Add the libraries; any that already exists fails the restore (the default).
    #[default]
    Append,
    /// Add the libraries, replacing those of the same name.
    Replace,
    /// Drop every library first.
    Flush,
}

impl RestorePolicy {
    /// Parses the optional policy argument, ignoring case; otherwise
    /// `ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.`
    pub fn parse(arg: &[u8]) -> Result<Self, String> {
        if arg.eq_ignore_ascii_case(b"append") {
            Ok(Self::Append)
        } else if arg.eq_ignore_ascii_case(b"replace") {
            Ok(Self::Replace)
        } else if arg.eq_ignore_ascii_case(b"flush") {
            Ok(Self::Flush)
        } else {
            Err(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."
                    .to_string(),
            )
        }
    }
}

/// The `FUNCTION DUMP` payload of `libs` (libraries in [`Libraries::iter`] order).
pub fn dump(libs: &Libraries) -> Bytes {
    let mut out = Vec::new();
    for lib in libs.iter() {
        out.push(rdb::OPCODE_FUNCTION2);
        rdb::save_string(&mut out, &lib.code);
    }
    out.extend_from_slice(&rdb::RDB_VERSION.to_le_bytes());
    let crc = CRC64.checksum(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Bytes::from(out)
}

const BAD_PAYLOAD: &str = "ERR DUMP payload version or checksum are wrong";

/// Checks the footer: at least 10 bytes, RDB version at most 10, CRC-64 matching.
fn verify(payload: &[u8]) -> Result<(), String> {
    if payload.len() < 10 {
        return Err(BAD_PAYLOAD.to_string());
    }
    let footer = &payload[payload.len() - 10..];
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    if version > rdb::RDB_VERSION {
        return Err(BAD_PAYLOAD.to_string());
    }
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&footer[2..]);
    if CRC64.checksum(&payload[..payload.len() - 8]) != u64::from_le_bytes(crc) {
        return Err(BAD_PAYLOAD.to_string());
    }
    Ok(())
}

/// Reads one pre-GA record (7.0 release candidates: name, engine, optional description,
/// body) and rebuilds the GA payload `#!<engine> name=<name>\n<body>` from it.
fn read_pre_ga(r: &mut Reader<'_>) -> Result<Vec<u8>, String> {
    let name = r
        .string()
        .ok_or_else(|| "ERR Failed loading library name".to_string())?;
    let engine = r
        .string()
        .ok_or_else(|| "ERR Failed loading engine name".to_string())?;
    let has_desc = r
        .length()
        .ok_or_else(|| "ERR Failed loading library description indicator".to_string())?;
    if has_desc != 0 {
        r.string()
            .ok_or_else(|| "ERR Failed loading library description".to_string())?;
    }
    let body = r
        .string()
        .ok_or_else(|| "ERR Failed loading library blob".to_string())?;
    // Redis formats with %s: each part ends at its first NUL byte.
    let c = |s: &[u8]| -> Vec<u8> { s.iter().take_while(|&&b| b != 0).copied().collect() };
    let mut code = b"#!".to_vec();
    code.extend(c(&engine));
    code.extend_from_slice(b" name=");
    code.extend(c(&name));
    code.push(b'\n');
    code.extend(c(&body));
    Ok(code)
}

/// Parses a payload into a fresh [`Libraries`], running `loader` on each library's code.
///
/// `loader(code, &meta)` must run the code in Lua ([`register`](super::library::register))
/// and return its [`Registration`] or the error line. It is only called once the metadata
/// parsed and the library name is not a duplicate within the payload, as Redis orders it.
pub fn parse<F>(payload: &[u8], mut loader: F) -> Result<Libraries, String>
where
    F: FnMut(&[u8], &Metadata) -> Result<Registration, String>,
{
    verify(payload)?;
    let mut out = Libraries::new();
    // Reads may run into the 10-byte footer, as Redis's do; records start only before it.
    let end = payload.len() - 10;
    let mut r = Reader::new(payload);
    while r.pos() < end {
        let code = match r.byte() {
            Some(rdb::OPCODE_FUNCTION2) => r
                .string()
                .ok_or_else(|| "ERR Failed loading library payload".to_string())?,
            Some(rdb::OPCODE_FUNCTION_PRE_GA) => read_pre_ga(&mut r)?,
            Some(_) => return Err("ERR given type is not a function".to_string()),
            None => return Err("ERR can not read data type".to_string()),
        };
        let meta = Metadata::parse(&code)?;
        out.check_load(&meta.name, false)?;
        let reg = loader(&code, &meta)?;
        out.load(reg, false)?;
    }
    Ok(out)
}

/// `FUNCTION RESTORE payload [APPEND|REPLACE|FLUSH]`: parses `payload` (see [`parse`]) and
/// merges it into `libs` according to `policy`. On any error `libs` is unchanged.
///
/// Errors (as redis-server 7.0.15 words them):
/// - `ERR DUMP payload version or checksum are wrong`: shorter than 10 bytes, RDB version
///   above 10, or CRC mismatch
/// - `ERR given type is not a function`: an opcode other than 245/246
/// - `ERR Failed loading library payload`: truncated or undecodable string (pre-GA records:
///   `ERR Failed loading library name` / `engine name` / `library description indicator` /
///   `library description` / `library blob`)
/// - the metadata and load errors of the library code (e.g. `ERR Missing library metadata`,
///   `ERR Library 'x' already exists` for a library twice in the payload, the loader's)
/// - APPEND: `ERR Library <name> already exists`; APPEND/REPLACE:
///   `ERR Function <fn> already exists`.
pub fn restore<F>(
    libs: &mut Libraries,
    payload: &[u8],
    policy: RestorePolicy,
    loader: F,
) -> Result<(), String>
where
    F: FnMut(&[u8], &Metadata) -> Result<Registration, String>,
{
    let parsed = parse(payload, loader)?;
    match policy {
        RestorePolicy::Flush => {
            libs.replace_all(parsed);
            Ok(())
        }
        RestorePolicy::Append => libs.join(parsed, false),
        RestorePolicy::Replace => libs.join(parsed, true),
    }
}

#[cfg(test)]
mod tests;
