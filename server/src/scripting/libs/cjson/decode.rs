//! `cjson.decode(text)`.
//!
//! lua-cjson's tokenizer and parser, iterative instead of recursive, building tables on the
//! Lua stack with the same pushes and the same `lua_checkstack` calls (2 slots per array
//! level, 3 per object level), so nesting errors report the same depth and character.
//! Errors read `Expected <what> but found <token> at character <n>` (1-based), with the
//! C token names (`T_END`, `T_ARR_END`, ...) or the lexer's error (`invalid token`,
//! `invalid number`, `unexpected end of string`, `invalid escape code`,
//! `invalid unicode escape code`). A NUL byte ends the input, as for the C parser.

use std::ffi::c_int;

use mlua::ffi;

use super::super::raw::{check_bytes, push_bytes, LuaResult, Raise};
use super::number::strtod;
use super::{single_arg_config, Config};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tok {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str,
    Number,
    Boolean,
    Null,
    Colon,
    Comma,
    End,
    Whitespace,
    Error,
    Unknown,
}

impl Tok {
    /// lua-cjson's `json_token_type_name`.
    fn name(self) -> &'static str {
        match self {
            Tok::ObjBegin => "T_OBJ_BEGIN",
            Tok::ObjEnd => "T_OBJ_END",
            Tok::ArrBegin => "T_ARR_BEGIN",
            Tok::ArrEnd => "T_ARR_END",
            Tok::Str => "T_STRING",
            Tok::Number => "T_NUMBER",
            Tok::Boolean => "T_BOOLEAN",
            Tok::Null => "T_NULL",
            Tok::Colon => "T_COLON",
            Tok::Comma => "T_COMMA",
            Tok::End => "T_END",
            Tok::Whitespace => "T_WHITESPACE",
            Tok::Error => "T_ERROR",
            Tok::Unknown => "T_UNKNOWN",
        }
    }

    /// lua-cjson's `ch2token` table.
    fn of(ch: u8) -> Tok {
        match ch {
            b'{' => Tok::ObjBegin,
            b'}' => Tok::ObjEnd,
            b'[' => Tok::ArrBegin,
            b']' => Tok::ArrEnd,
            b',' => Tok::Comma,
            b':' => Tok::Colon,
            0 => Tok::End,
            b' ' | b'\t' | b'\r' | b'\n' => Tok::Whitespace,
            b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'"' | b'+' | b'-' | b'0'..=b'9' => {
                Tok::Unknown
            }
            _ => Tok::Error,
        }
    }
}

/// A token; a string token's text is in [`Parser::tmp`].
#[derive(Clone, Copy, Debug)]
struct Token {
    ty: Tok,
    /// 0-based offset reported in errors.
    index: usize,
    number: f64,
    boolean: bool,
    /// Lexer error text when `ty == Tok::Error`.
    error: &'static str,
}

struct Parser<'a> {
    data: &'a [u8],
    ptr: usize,
    depth: c_int,
    cfg: Config,
    /// Text of the last string token.
    tmp: Vec<u8>,
}

impl Parser<'_> {
    /// The byte at `i`, with a NUL terminator past the end (as C sees the Lua string).
    fn at(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    fn starts_with(&self, word: &[u8]) -> bool {
        self.data
            .get(self.ptr..)
            .is_some_and(|rest| rest.starts_with(word))
    }

    fn token(&self, ty: Tok) -> Token {
        Token {
            ty,
            index: self.ptr,
            number: 0.0,
            boolean: false,
            error: "",
        }
    }

    fn error_token(&self, error: &'static str) -> Token {
        Token {
            error,
            ..self.token(Tok::Error)
        }
    }

    /// `json_is_invalid_number`: JSON-invalid number syntax at the cursor (leading `+`,
    /// hex, leading zeros, inf, nan).
    fn is_invalid_number(&self) -> bool {
        let mut p = self.ptr;
        if self.at(p) == b'+' {
            return true;
        }
        if self.at(p) == b'-' {
            p += 1;
        }
        let c = self.at(p);
        if c == b'0' {
            let c2 = self.at(p + 1);
            return (c2 | 0x20) == b'x' || c2.is_ascii_digit();
        }
        // C compares a signed char: bytes >= 0x80 count as "<= '9'".
        if c <= b'9' || c >= 0x80 {
            return false;
        }
        let rest = self.data.get(p..).unwrap_or(&[]);
        let ci = |w: &[u8]| rest.len() >= 3 && rest[..3].eq_ignore_ascii_case(w);
        ci(b"inf") || ci(b"nan")
    }

    fn number_token(&mut self) -> Token {
        match strtod(self.data.get(self.ptr..).unwrap_or(&[])) {
            Some((value, used)) => {
                let mut t = self.token(Tok::Number);
                t.number = value;
                self.ptr += used;
                t
            }
            None => self.error_token("invalid number"),
        }
    }

    /// `json_next_token`.
    fn next_token(&mut self) -> Token {
        let mut ty;
        loop {
            ty = Tok::of(self.at(self.ptr));
            if ty != Tok::Whitespace {
                break;
            }
            self.ptr += 1;
        }
        match ty {
            Tok::Error => return self.error_token("invalid token"),
            Tok::End => return self.token(Tok::End),
            Tok::Unknown => {}
            _ => {
                let t = self.token(ty);
                self.ptr += 1;
                return t;
            }
        }
        let ch = self.at(self.ptr);
        let invalid_ok = self.cfg.decode_invalid_numbers != 0;
        if ch == b'"' {
            self.string_token()
        } else if ch == b'-' || ch.is_ascii_digit() {
            if !invalid_ok && self.is_invalid_number() {
                return self.error_token("invalid number");
            }
            self.number_token()
        } else if self.starts_with(b"true") {
            let mut t = self.token(Tok::Boolean);
            t.boolean = true;
            self.ptr += 4;
            t
        } else if self.starts_with(b"false") {
            let t = self.token(Tok::Boolean);
            self.ptr += 5;
            t
        } else if self.starts_with(b"null") {
            let t = self.token(Tok::Null);
            self.ptr += 4;
            t
        } else if invalid_ok && self.is_invalid_number() {
            self.number_token()
        } else {
            self.error_token("invalid token")
        }
    }

    /// `json_next_string_token`: the cursor is on the opening quote.
    fn string_token(&mut self) -> Token {
        let start = self.ptr;
        self.ptr += 1;
        self.tmp.clear();
        loop {
            let mut ch = self.at(self.ptr);
            if ch == b'"' {
                break;
            }
            if ch == 0 {
                return self.error_token("unexpected end of string");
            }
            if ch == b'\\' {
                ch = match self.at(self.ptr + 1) {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'/' => b'/',
                    b'b' => b'\x08',
                    b'f' => b'\x0c',
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'u' => {
                        if self.unicode_escape() {
                            continue;
                        }
                        return self.error_token("invalid unicode escape code");
                    }
                    _ => return self.error_token("invalid escape code"),
                };
                self.ptr += 1;
            }
            self.tmp.push(ch);
            self.ptr += 1;
        }
        self.ptr += 1;
        Token {
            index: start,
            ..self.token(Tok::Str)
        }
    }

    /// Four hex digits at `i`, or `None`.
    fn hex4(&self, i: usize) -> Option<u32> {
        (0..4).try_fold(0u32, |acc, k| {
            let d = (self.at(i + k) as char).to_digit(16)?;
            Some((acc << 4) | d)
        })
    }

    /// `json_append_unicode_escape`: `\uXXXX` (or a surrogate pair) at the cursor as UTF-8.
    fn unicode_escape(&mut self) -> bool {
        let Some(mut cp) = self.hex4(self.ptr + 2) else {
            return false;
        };
        let mut escape_len = 6;
        if cp & 0xF800 == 0xD800 {
            if cp & 0x400 != 0 {
                return false;
            }
            if self.at(self.ptr + 6) != b'\\' || self.at(self.ptr + 7) != b'u' {
                return false;
            }
            let Some(low) = self.hex4(self.ptr + 8) else {
                return false;
            };
            if low & 0xFC00 != 0xDC00 {
                return false;
            }
            cp = (((cp & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000;
            escape_len = 12;
        }
        let mut buf = [0u8; 4];
        let len = utf8_encode(cp, &mut buf);
        self.tmp.extend_from_slice(&buf[..len]);
        self.ptr += escape_len;
        true
    }

    fn parse_error(&self, expected: &str, t: &Token) -> Raise {
        let found = if t.ty == Tok::Error {
            t.error
        } else {
            t.ty.name()
        };
        Raise::Msg(format!(
            "Expected {expected} but found {found} at character {}",
            t.index + 1
        ))
    }

    /// `json_decode_descend`: one more nesting level, needing `slots` free stack slots.
    unsafe fn descend(&mut self, l: *mut ffi::lua_State, slots: c_int) -> LuaResult<()> {
        self.depth += 1;
        if self.depth <= self.cfg.decode_max_depth && unsafe { ffi::lua_checkstack(l, slots) } != 0
        {
            return Ok(());
        }
        Err(Raise::Msg(format!(
            "Found too many nested data structures ({}) at character {}",
            self.depth, self.ptr
        )))
    }

    /// Reads `"key" :` of an object member (the key token already read) and pushes the key.
    unsafe fn object_key(&mut self, l: *mut ffi::lua_State, t: Token) -> LuaResult<Token> {
        if t.ty != Tok::Str {
            return Err(self.parse_error("object key string", &t));
        }
        unsafe { push_bytes(l, &self.tmp) };
        let t = self.next_token();
        if t.ty != Tok::Colon {
            return Err(self.parse_error("colon", &t));
        }
        Ok(self.next_token())
    }
}

/// UTF-8 bytes of a code point (at most U+10FFFF here).
fn utf8_encode(cp: u32, buf: &mut [u8; 4]) -> usize {
    if cp < 0x80 {
        buf[0] = cp as u8;
        1
    } else if cp < 0x800 {
        buf[0] = 0xC0 | (cp >> 6) as u8;
        buf[1] = 0x80 | (cp & 0x3F) as u8;
        2
    } else if cp < 0x10000 {
        buf[0] = 0xE0 | (cp >> 12) as u8;
        buf[1] = 0x80 | ((cp >> 6) & 0x3F) as u8;
        buf[2] = 0x80 | (cp & 0x3F) as u8;
        3
    } else {
        buf[0] = 0xF0 | (cp >> 18) as u8;
        buf[1] = 0x80 | ((cp >> 12) & 0x3F) as u8;
        buf[2] = 0x80 | ((cp >> 6) & 0x3F) as u8;
        buf[3] = 0x80 | (cp & 0x3F) as u8;
        4
    }
}

/// A container being filled.
enum Frame {
    /// Next array index to set.
    Array(c_int),
    Object,
}

/// `cjson.decode(text)`: the Lua value; JSON null is `cjson.null` (a NULL light userdata).
pub(super) unsafe fn decode(l: *mut ffi::lua_State) -> LuaResult<c_int> {
    unsafe {
        let cfg = *single_arg_config(l)?;
        let data = check_bytes(l, 1)?;
        if data.len() >= 2 && (data[0] == 0 || data[1] == 0) {
            return Err(Raise::Msg(
                "JSON parser does not support UTF-16 or UTF-32".to_string(),
            ));
        }
        let mut p = Parser {
            data,
            ptr: 0,
            depth: 0,
            cfg,
            tmp: Vec::new(),
        };
        let mut frames: Vec<Frame> = Vec::new();
        let mut t = p.next_token();
        loop {
            // `t` starts a value: push it (or open a container).
            match t.ty {
                Tok::Str => push_bytes(l, &p.tmp),
                Tok::Number => ffi::lua_pushnumber(l, t.number),
                Tok::Boolean => ffi::lua_pushboolean(l, c_int::from(t.boolean)),
                Tok::Null => ffi::lua_pushlightuserdata(l, std::ptr::null_mut()),
                Tok::ArrBegin => {
                    p.descend(l, 2)?;
                    ffi::lua_createtable(l, 0, 0);
                    t = p.next_token();
                    if t.ty == Tok::ArrEnd {
                        p.depth -= 1;
                    } else {
                        frames.push(Frame::Array(1));
                        continue;
                    }
                }
                Tok::ObjBegin => {
                    p.descend(l, 3)?;
                    ffi::lua_createtable(l, 0, 0);
                    t = p.next_token();
                    if t.ty == Tok::ObjEnd {
                        p.depth -= 1;
                    } else {
                        t = p.object_key(l, t)?;
                        frames.push(Frame::Object);
                        continue;
                    }
                }
                _ => return Err(p.parse_error("value", &t)),
            }
            // A value is complete on top of the stack: store it in its container, closing
            // containers that end here, until the next value starts.
            loop {
                match frames.last_mut() {
                    None => {
                        let t = p.next_token();
                        if t.ty != Tok::End {
                            return Err(p.parse_error("the end", &t));
                        }
                        return Ok(1);
                    }
                    Some(Frame::Array(i)) => {
                        ffi::lua_rawseti(l, -2, ffi::lua_Integer::from(*i));
                        *i = i.wrapping_add(1);
                        t = p.next_token();
                        if t.ty != Tok::ArrEnd {
                            if t.ty != Tok::Comma {
                                return Err(p.parse_error("comma or array end", &t));
                            }
                            t = p.next_token();
                            break;
                        }
                    }
                    Some(Frame::Object) => {
                        ffi::lua_rawset(l, -3);
                        t = p.next_token();
                        if t.ty != Tok::ObjEnd {
                            if t.ty != Tok::Comma {
                                return Err(p.parse_error("comma or object end", &t));
                            }
                            let key = p.next_token();
                            t = p.object_key(l, key)?;
                            break;
                        }
                    }
                }
                p.depth -= 1;
                frames.pop();
            }
        }
    }
}
