//! Conversions between replies and Lua values, as Redis 7.0's `script_lua.c` makes them
//! (a reply to a script's Lua value: [`super::call`]; a script's value to its reply: here).
//!
//! A command's reply seen by a script (`redisProtocolToLuaType`), under the script's protocol
//! (`redis.setresp`, 2 unless changed):
//!
//! | reply | RESP2 | RESP3 |
//! |---|---|---|
//! | integer | number | number |
//! | bulk string | string | string |
//! | null | `false` | `nil` |
//! | status | `{ok=...}` | `{ok=...}` |
//! | error | `{err=...}` | `{err=...}` |
//! | array | table | table |
//! | map | flat table | `{map={k=v}}` |
//! | set | table | `{set={member=true}}` |
//! | double | string | `{double=n}` |
//! | boolean | 1 / 0 | `true` / `false` |
//! | big number | string | `{big_number="..."}` |
//! | verbatim | string | `{verbatim_string={format=..., string=...}}` |
//!
//! A script's value seen by the client (`luaReplyToRedisReply`): a string is a bulk string,
//! a number an integer (truncated toward zero), `true` 1 and `false` null (RESP2) or
//! booleans (RESP3), `nil` null; a table with `err`, `ok`, `double`, `big_number`, `map`,
//! `set` or `verbatim_string` is that reply; any other table is an array of its elements
//! 1, 2, … up to the first `nil`.

use bytes::Bytes;
use mlua::{Table, Value};

use crate::resp::Frame;

/// Deepest nesting of tables converted to a reply: a deeper table becomes Redis's error for a
/// reply nested past the Lua stack (`-ERR reached lua stack limit`), e.g. for a table that
/// contains itself.
const MAX_DEPTH: usize = 200;

/// A script's result `value` as the reply to its client, the script using protocol `resp`.
pub fn lua_to_reply(value: &Value, resp: u8) -> Frame {
    to_reply(value, resp, 0)
}

fn to_reply(value: &Value, resp: u8, depth: usize) -> Frame {
    match value {
        Value::Nil => Frame::Null,
        Value::Boolean(b) if resp == 3 => Frame::Boolean(*b),
        Value::Boolean(true) => Frame::Integer(1),
        Value::Boolean(false) => Frame::Null,
        Value::Integer(n) => Frame::Integer(*n),
        Value::Number(n) => Frame::Integer(number_to_integer(*n)),
        Value::String(s) => Frame::Bulk(Bytes::copy_from_slice(&s.as_bytes())),
        Value::Table(_) if depth >= MAX_DEPTH => Frame::error("ERR reached lua stack limit"),
        Value::Table(table) => table_to_reply(table, resp, depth),
        _ => Frame::Null,
    }
}

/// Redis's `(long long)lua_tonumber`: toward zero; NaN and values outside the `i64` range
/// give `i64::MIN`, as the C cast does on x86-64 (Rust's `as` would saturate instead).
pub fn number_to_integer(n: f64) -> i64 {
    const BOUND: f64 = 9_223_372_036_854_775_808.0;
    if n.is_nan() || !(-BOUND..BOUND).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

fn field(table: &Table, key: &str) -> Value {
    table.raw_get(key).unwrap_or(Value::Nil)
}

fn table_to_reply(table: &Table, resp: u8, depth: usize) -> Frame {
    if let Value::String(err) = field(table, "err") {
        let text = err.to_string_lossy();
        // redis.error_reply's `-`: dropped, and an empty message becomes `ERR `.
        return match text.strip_prefix('-') {
            Some("") => Frame::Error("ERR ".to_owned()),
            Some(rest) => Frame::Error(rest.to_owned()),
            None => Frame::Error(text.to_string()),
        };
    }
    if let Value::String(ok) = field(table, "ok") {
        return Frame::Simple(ok.to_string_lossy().to_string());
    }
    if let Value::Number(d) = field(table, "double") {
        return Frame::Double(d);
    }
    if let Value::Integer(d) = field(table, "double") {
        return Frame::Double(d as f64);
    }
    if let Value::String(digits) = field(table, "big_number") {
        return Frame::BigNumber(digits.to_string_lossy().to_string());
    }
    if let Value::Table(map) = field(table, "map") {
        let pairs = map
            .pairs::<Value, Value>()
            .filter_map(Result::ok)
            .map(|(k, v)| (to_reply(&k, resp, depth + 1), to_reply(&v, resp, depth + 1)))
            .collect();
        return Frame::Map(pairs);
    }
    if let Value::Table(set) = field(table, "set") {
        let members = set
            .pairs::<Value, Value>()
            .filter_map(Result::ok)
            .map(|(k, _)| to_reply(&k, resp, depth + 1))
            .collect();
        return Frame::Set(members);
    }
    if let Value::Table(verbatim) = field(table, "verbatim_string") {
        if let (Value::String(format), Value::String(text)) =
            (field(&verbatim, "format"), field(&verbatim, "string"))
        {
            let mut tag = *b"txt";
            let bytes = format.as_bytes();
            if bytes.len() == 3 {
                tag.copy_from_slice(&bytes);
            }
            return Frame::Verbatim {
                format: tag,
                text: Bytes::copy_from_slice(&text.as_bytes()),
            };
        }
    }
    let mut items = Vec::new();
    for i in 1.. {
        match table.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(item) => items.push(to_reply(&item, resp, depth + 1)),
        }
    }
    Frame::Array(items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlua::Lua;

    fn eval(lua: &Lua, source: &str, resp: u8) -> Frame {
        let value: Value = lua.load(source).eval().unwrap();
        lua_to_reply(&value, resp)
    }

    /// Each expected reply is redis-server 7.0.15's to `EVAL "<source>" 0`.
    #[test]
    fn script_values_become_redis_replies() {
        let lua = Lua::new();
        assert_eq!(eval(&lua, "return 100.5", 2), Frame::Integer(100));
        assert_eq!(eval(&lua, "return -3.99", 2), Frame::Integer(-3));
        assert_eq!(eval(&lua, "return true", 2), Frame::Integer(1));
        assert_eq!(eval(&lua, "return false", 2), Frame::Null);
        assert_eq!(eval(&lua, "return true", 3), Frame::Boolean(true));
        assert_eq!(
            eval(&lua, "return {ok='fine'}", 2),
            Frame::Simple("fine".into())
        );
        assert_eq!(
            eval(&lua, "return {err='ERR this is an error'}", 2),
            Frame::Error("ERR this is an error".into())
        );
        assert_eq!(
            eval(&lua, "return {1,2,3,'ciao',{1,2}}", 2),
            Frame::Array(vec![
                Frame::Integer(1),
                Frame::Integer(2),
                Frame::Integer(3),
                Frame::Bulk(Bytes::from_static(b"ciao")),
                Frame::Array(vec![Frame::Integer(1), Frame::Integer(2)]),
            ])
        );
        // Stops at the first nil.
        assert_eq!(
            eval(&lua, "return {1,2,3,nil,5}", 2),
            Frame::Array(vec![
                Frame::Integer(1),
                Frame::Integer(2),
                Frame::Integer(3)
            ])
        );
        assert_eq!(eval(&lua, "return {double=2.5}", 3), Frame::Double(2.5));
    }
}
