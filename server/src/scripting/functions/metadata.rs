//! The library metadata line, `#!<engine> name=<library>` (Redis 7.0 `functions.c`
//! `functionExtractLibMetaData`, `functionsVerifyName`, and `sds.c` `sdssplitargs` for the
//! tokenizing of that line).

/// The name Redis 7.0 reports for its only engine (`FUNCTION LIST` `engine` field and the
/// `FUNCTION STATS` `engines` key).
pub const LUA_ENGINE: &str = "LUA";

/// Redis's error text for an invalid library or function name.
pub const INVALID_NAME: &str = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// Parsed metadata of a library payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metadata {
    /// Engine name as Redis reports it; always [`LUA_ENGINE`] (the shebang's engine is matched
    /// case-insensitively, so `#!lua` and `#!LUA` both give `"LUA"`).
    pub engine: &'static str,
    /// Library name (validated: `[A-Za-z0-9_]+`, case-sensitive).
    pub name: String,
    /// Byte offset in the payload of the `\n` that ends the shebang line. Redis compiles the
    /// payload from this newline on, so Lua line numbers match the payload's (line 2 is the
    /// first line after the shebang).
    pub body_offset: usize,
}

impl Metadata {
    /// Parses and validates the first line of a library payload, checking in Redis's order:
    ///
    /// - payload not starting with `#!`: `ERR Missing library metadata`
    /// - no `\n` before the end or before a NUL byte, or unbalanced quotes in the line:
    ///   `ERR Invalid library metadata`
    /// - a second `name=`: `ERR Invalid metadata value, name argument was given multiple times`
    /// - any other token: `ERR Invalid metadata value given: <token>`
    /// - no `name=`: `ERR Library name was not given`
    /// - bad name: [`INVALID_NAME`]
    /// - engine other than `lua` (any case): `ERR Engine '<engine>' not found`
    ///
    /// The line is tokenized like `redis-cli` arguments (`sdssplitargs`): `name="foo"` is
    /// `name=foo`, `"\x41"` escapes work inside double quotes. `name=` matches
    /// case-insensitively.
    pub fn parse(payload: &[u8]) -> Result<Metadata, String> {
        if !payload.starts_with(b"#!") {
            return Err("ERR Missing library metadata".to_string());
        }
        // strchr(payload, '\n') on a C string: a NUL byte ends the search.
        let body_offset = match payload.iter().position(|&b| b == b'\n' || b == 0) {
            Some(i) if payload[i] == b'\n' => i,
            _ => return Err("ERR Invalid library metadata".to_string()),
        };
        let parts = split_args(&payload[..body_offset])
            .ok_or_else(|| "ERR Invalid library metadata".to_string())?;
        let Some(first) = parts.first() else {
            return Err("ERR Invalid library metadata".to_string());
        };
        let engine = c_str(first.get(2..).unwrap_or_default());
        let mut name: Option<&[u8]> = None;
        for part in &parts[1..] {
            if part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=") {
                if name.is_some() {
                    return Err(
                        "ERR Invalid metadata value, name argument was given multiple times"
                            .to_string(),
                    );
                }
                name = Some(&part[5..]);
                continue;
            }
            return Err(format!(
                "ERR Invalid metadata value given: {}",
                String::from_utf8_lossy(c_str(part))
            ));
        }
        let Some(name) = name else {
            return Err("ERR Library name was not given".to_string());
        };
        if !is_valid_name(name) {
            return Err(INVALID_NAME.to_string());
        }
        if !engine.eq_ignore_ascii_case(b"lua") {
            return Err(format!(
                "ERR Engine '{}' not found",
                String::from_utf8_lossy(engine)
            ));
        }
        Ok(Metadata {
            engine: LUA_ENGINE,
            // Valid names are ASCII.
            name: String::from_utf8_lossy(name).into_owned(),
            body_offset,
        })
    }
}

/// True for a valid library or function name: non-empty, only `[A-Za-z0-9_]`
/// (Redis 7.0 `functionsVerifyName`).
pub fn is_valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

/// The bytes up to the first NUL, as C's `%s` prints them.
fn c_str(s: &[u8]) -> &[u8] {
    s.iter().position(|&b| b == 0).map_or(s, |i| &s[..i])
}

/// C `isspace` in the C locale.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Splits a line into arguments the way Redis's `sdssplitargs` does; `None` for unbalanced
/// quotes or a closing quote not followed by a space.
fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    // The line is a C string: it ends at the first NUL (callers never pass one).
    let line = c_str(line);
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let mut out = Vec::new();
    let mut p = 0;
    loop {
        while p < line.len() && is_space(line[p]) {
            p += 1;
        }
        if p >= line.len() {
            return Some(out);
        }
        let (mut inq, mut insq) = (false, false);
        let mut cur = Vec::new();
        loop {
            let c = at(p);
            if inq {
                if c == b'\\'
                    && at(p + 1) == b'x'
                    && at(p + 2).is_ascii_hexdigit()
                    && at(p + 3).is_ascii_hexdigit()
                {
                    let hex = |d: u8| (d as char).to_digit(16).unwrap_or(0) as u8;
                    cur.push(hex(at(p + 2)) * 16 + hex(at(p + 3)));
                    p += 3;
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    cur.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return None;
                } else {
                    cur.push(c);
                }
            } else if insq {
                if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    cur.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return None;
                } else {
                    cur.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => {
                        if c != 0 {
                            p += 1;
                        }
                        break;
                    }
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    other => cur.push(other),
                }
            }
            if c != 0 {
                p += 1;
            }
        }
        out.push(cur);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(payload: &[u8]) -> String {
        Metadata::parse(payload).expect_err("should fail")
    }

    // Expected texts: `redis-cli -p 6420 function load "<payload>"` on redis-server 7.0.15
    // (payloads with a NUL byte sent with `printf ... | redis-cli -x function load`).

    #[test]
    fn missing_and_invalid_metadata() {
        assert_eq!(
            err(b"lua name=test2\nredis.register_function('F', function() return 1 end)"),
            "ERR Missing library metadata"
        );
        assert_eq!(
            err(b"   #!lua name=ok\nreturn 1"),
            "ERR Missing library metadata"
        );
        assert_eq!(err(b"#!lua name=test2"), "ERR Invalid library metadata");
        assert_eq!(err(b"#!lua name=t\0a\nx"), "ERR Invalid library metadata");
        assert_eq!(err(b"#!lua name=ta\0\nx"), "ERR Invalid library metadata");
        assert_eq!(
            err(b"#!lua name=\"te\"st\nx"),
            "ERR Invalid library metadata"
        );
    }

    #[test]
    fn metadata_values() {
        assert_eq!(
            err(b"#!lua name=test2 foo=bar\nx"),
            "ERR Invalid metadata value given: foo=bar"
        );
        assert_eq!(
            err(b"#!bad name=ok foo\nx"),
            "ERR Invalid metadata value given: foo"
        );
        assert_eq!(
            err(b"#!lua NAME=test2 name=x\nx"),
            "ERR Invalid metadata value, name argument was given multiple times"
        );
        assert_eq!(err(b"#!lua\nx"), "ERR Library name was not given");
        assert_eq!(err(b"#!\nx"), "ERR Library name was not given");
        assert_eq!(err(b"#!bad\nx"), "ERR Library name was not given");
    }

    #[test]
    fn names_and_engines() {
        // Name validity is checked before the engine.
        assert_eq!(err(b"#!bad name=bad-name\nx"), INVALID_NAME);
        assert_eq!(err(b"#!LuA name=bad-name\nx"), INVALID_NAME);
        assert_eq!(err(b"#!lua name=\nx"), INVALID_NAME);
        assert_eq!(err(b"#!lua name=\"te st\"\nx"), INVALID_NAME);
        assert_eq!(err(b"#!lua name=t\\x41\nx"), INVALID_NAME);
        assert_eq!(err(b"#!bad name=ok\nx"), "ERR Engine 'bad' not found");
        // functions.tcl "function test empty engine".
        assert_eq!(
            err(b"#! name=test\nredis.register_function('foo', function() return 1 end)"),
            "ERR Engine '' not found"
        );
        assert_eq!(
            err(b"#!bad_engine name=test\nx"),
            "ERR Engine 'bad_engine' not found"
        );
    }

    #[test]
    fn accepted_forms() {
        // redis-server accepted these (the load then failed later, in Lua).
        let m = Metadata::parse(b"#!lua name=\"t\\x41\"\nx").expect("ok");
        assert_eq!(
            (m.engine, m.name.as_str(), m.body_offset),
            ("LUA", "tA", 18)
        );
        let m = Metadata::parse(b"#!LuA   name=ok   \r\nreturn 1").expect("ok");
        assert_eq!(m.name, "ok");
        let m = Metadata::parse(b"#!lua name=\"foo\"\nx").expect("ok");
        assert_eq!(m.name, "foo");
        let m = Metadata::parse(b"#!lua name='a_1'\nx").expect("ok");
        assert_eq!((m.name.as_str(), m.body_offset), ("a_1", 16));
        let m = Metadata::parse(b"#!lua name=x\n").expect("ok");
        assert_eq!(m.body_offset, 12);
    }

    #[test]
    fn split_args_like_sdssplitargs() {
        assert_eq!(
            split_args(b"  a \"b c\" 'd\\'e' x\"y\\n\"").expect("ok"),
            vec![
                b"a".to_vec(),
                b"b c".to_vec(),
                b"d'e".to_vec(),
                b"xy\n".to_vec()
            ]
        );
        assert_eq!(split_args(b"\"abc"), None);
        assert_eq!(split_args(b"'abc'd"), None);
        assert_eq!(split_args(b"   "), Some(vec![]));
    }
}
