//! Shared error replies and argument parsing with Redis 7's exact texts
//! (`server.c` shared objects, `object.c` `getLongLongFromObjectOrReply`).

use bytes::Bytes;

use crate::resp::num::parse_i64;
use crate::resp::Frame;

/// `-WRONGTYPE ...` (Redis `shared.wrongtypeerr`).
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
/// `-ERR syntax error` (Redis `shared.syntaxerr`).
pub const SYNTAX: &str = "ERR syntax error";
/// Redis `getLongLongFromObjectOrReply` failure text.
pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
/// Redis `getPositiveLongFromObjectOrReply` failure text for negatives.
pub const NOT_POSITIVE: &str = "ERR value is out of range, must be positive";

/// WRONGTYPE error frame.
pub fn wrong_type() -> Frame {
    Frame::error(WRONGTYPE)
}

/// `ERR syntax error` frame.
pub fn syntax_error() -> Frame {
    Frame::error(SYNTAX)
}

/// `ERR value is not an integer or out of range` frame.
pub fn not_integer() -> Frame {
    Frame::error(NOT_INTEGER)
}

/// `ERR wrong number of arguments for '<name>' command` (Redis 7
/// `addReplyErrorArity`; `name` is the canonical lowercase name, or
/// `container|sub` for subcommands).
pub fn wrong_arity(name: &str) -> Frame {
    Frame::error(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

/// `ERR invalid expire time in '<name>' command` (Redis 7
/// `addReplyErrorExpireTime`).
pub fn invalid_expire(name: &str) -> Frame {
    Frame::error(format!("ERR invalid expire time in '{name}' command"))
}

/// Redis 7 `processCommand`'s unknown-command error:
/// `ERR unknown command 'name', with args beginning with: 'a' 'b' ` — name
/// cut to 128 bytes, quoted arguments appended while the list is shorter than
/// 128 bytes (each cut to the remaining room), CR/LF replaced by spaces.
pub fn unknown_command(args: &[Bytes]) -> Frame {
    let name = args.first().map(|n| &n[..n.len().min(128)]).unwrap_or(b"");
    let mut list: Vec<u8> = Vec::new();
    for arg in args.iter().skip(1) {
        if list.len() >= 128 {
            break;
        }
        let room = 128 - list.len();
        list.push(b'\'');
        list.extend_from_slice(&arg[..arg.len().min(room)]);
        list.extend_from_slice(b"' ");
    }
    let text = format!(
        "ERR unknown command '{}', with args beginning with: {}",
        String::from_utf8_lossy(name),
        String::from_utf8_lossy(&list)
    );
    Frame::error(text.replace(['\r', '\n'], " "))
}

/// Parses an integer argument (Redis `string2ll` rules) or returns the
/// `ERR value is not an integer or out of range` frame.
pub fn int_arg(arg: &[u8]) -> Result<i64, Frame> {
    parse_i64(arg).ok_or_else(not_integer)
}

/// Parses an integer argument that must lie in `min..=max` (Redis
/// `getRangeLongFromObjectOrReply`): a non-integer is `NOT_INTEGER`, an
/// integer outside the range is `ERR value is out of range, value must
/// between <min> and <max>` (Redis's wording).
pub fn range_arg(arg: &[u8], min: i64, max: i64) -> Result<i64, Frame> {
    let n = int_arg(arg)?;
    if (min..=max).contains(&n) {
        Ok(n)
    } else {
        Err(Frame::error(format!(
            "ERR value is out of range, value must between {min} and {max}"
        )))
    }
}

/// Parses a non-negative count (Redis `getPositiveLongFromObjectOrReply`):
/// non-integers and negatives both give `NOT_POSITIVE`.
pub fn positive_arg(arg: &[u8]) -> Result<u64, Frame> {
    parse_i64(arg)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| Frame::error(NOT_POSITIVE))
}

/// Lowercase ASCII comparison of an argument with an option keyword.
pub fn is_opt(arg: &[u8], keyword: &str) -> bool {
    arg.eq_ignore_ascii_case(keyword.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_command_text() {
        let args: Vec<Bytes> = ["foo", "a", "b\r\nc"]
            .iter()
            .map(|s| Bytes::from(*s))
            .collect();
        assert_eq!(
            unknown_command(&args),
            Frame::error("ERR unknown command 'foo', with args beginning with: 'a' 'b  c' ")
        );
        assert_eq!(
            unknown_command(&args[..1]),
            Frame::error("ERR unknown command 'foo', with args beginning with: ")
        );
    }

    #[test]
    fn unknown_command_truncation() {
        // Checked against redis-server 7.0.15.
        let long: Vec<Bytes> = vec![
            Bytes::from("FOO"),
            Bytes::from("x".repeat(200)),
            Bytes::from("y"),
        ];
        let want = format!(
            "ERR unknown command 'FOO', with args beginning with: '{}' ",
            "x".repeat(128)
        );
        assert_eq!(unknown_command(&long), Frame::error(want));
        let two: Vec<Bytes> = vec![
            Bytes::from("FOO"),
            Bytes::from("a".repeat(100)),
            Bytes::from("b".repeat(100)),
            Bytes::from("c"),
        ];
        let want = format!(
            "ERR unknown command 'FOO', with args beginning with: '{}' '{}' ",
            "a".repeat(100),
            "b".repeat(25)
        );
        assert_eq!(unknown_command(&two), Frame::error(want));
    }

    #[test]
    fn ranges() {
        assert_eq!(range_arg(b"-5", -5, 5), Ok(-5));
        assert_eq!(range_arg(b"5\0", -5, 5), Err(not_integer()));
        assert_eq!(
            range_arg(b"6", -5, 5),
            Err(Frame::error(
                "ERR value is out of range, value must between -5 and 5"
            ))
        );
    }

    #[test]
    fn counts() {
        assert_eq!(positive_arg(b"3"), Ok(3));
        assert_eq!(positive_arg(b"-1"), Err(Frame::error(NOT_POSITIVE)));
        assert_eq!(positive_arg(b"x"), Err(Frame::error(NOT_POSITIVE)));
    }
}
