//! Inline-command argument splitting, following Redis 7 `sds.c`
//! `sdssplitargs`.

/// Splits one inline request line into arguments exactly like Redis's
/// `sdssplitargs`:
///
/// * arguments are separated by whitespace (space, `\t`, `\n`, `\r`, `\v`,
///   `\f` before an argument; space, `\n`, `\r`, `\t`, NUL end a bare one);
/// * `"..."` accepts `\xHH` hex escapes and `\n \r \t \b \a`; any other
///   `\c` yields `c`;
/// * `'...'` accepts only `\'` as an escape;
/// * a quote may start in the middle of a bare argument (`a"b c"` is `ab c`);
/// * a closing quote must be followed by whitespace or the end of the line.
///
/// A NUL byte ends the line, as in C.
///
/// Returns `None` for unbalanced quotes or a closing quote followed by a
/// non-space (Redis: "Protocol error: unbalanced quotes in request").
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    // Redis works on a C string: a NUL byte ends the line.
    let line = match line.iter().position(|&b| b == 0) {
        Some(nul) => &line[..nul],
        None => line,
    };
    let mut args = Vec::new();
    let mut i = 0;
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    loop {
        while i < line.len() && is_c_space(line[i]) {
            i += 1;
        }
        if i >= line.len() {
            return Some(args);
        }
        let mut cur = Vec::new();
        let mut in_dq = false;
        let mut in_sq = false;
        loop {
            let c = at(i);
            if in_dq {
                if i >= line.len() {
                    return None;
                }
                if c == b'\\' && at(i + 1) == b'x' && is_hex(at(i + 2)) && is_hex(at(i + 3)) {
                    cur.push(hex(at(i + 2)) * 16 + hex(at(i + 3)));
                    i += 3;
                } else if c == b'\\' && i + 1 < line.len() {
                    i += 1;
                    cur.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                } else if c == b'"' {
                    if i + 1 < line.len() && !is_c_space(line[i + 1]) {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    cur.push(c);
                }
            } else if in_sq {
                if i >= line.len() {
                    return None;
                }
                if c == b'\\' && at(i + 1) == b'\'' {
                    i += 1;
                    cur.push(b'\'');
                } else if c == b'\'' {
                    if i + 1 < line.len() && !is_c_space(line[i + 1]) {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    cur.push(c);
                }
            } else {
                if i >= line.len() {
                    break;
                }
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => break,
                    b'"' => in_dq = true,
                    b'\'' => in_sq = true,
                    _ => cur.push(c),
                }
            }
            i += 1;
        }
        args.push(cur);
    }
}

/// C `isspace` in the "C" locale.
fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn is_hex(c: u8) -> bool {
    c.is_ascii_hexdigit()
}

fn hex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::split_args;

    fn ok(line: &[u8]) -> Vec<Vec<u8>> {
        match split_args(line) {
            Some(v) => v,
            None => panic!("unexpected error for {line:?}"),
        }
    }

    #[test]
    fn bare_words() {
        assert_eq!(
            ok(b"SET a b"),
            vec![b"SET".to_vec(), b"a".to_vec(), b"b".to_vec()]
        );
        assert_eq!(ok(b"  PING \t "), vec![b"PING".to_vec()]);
        assert!(ok(b"").is_empty());
        assert!(ok(b"   ").is_empty());
    }

    #[test]
    fn double_quotes() {
        assert_eq!(
            ok(br#"SET "a b" "c\"d""#),
            vec![b"SET".to_vec(), b"a b".to_vec(), b"c\"d".to_vec()]
        );
        assert_eq!(
            ok(br#""\x41\x4a\x4A" "\n\r\t\b\a\z""#),
            vec![b"AJJ".to_vec(), b"\n\r\t\x08\x07z".to_vec()]
        );
        assert_eq!(ok(br#""\xZZ""#), vec![b"xZZ".to_vec()]);
        assert_eq!(ok(br#""""#), vec![b"".to_vec()]);
        assert_eq!(ok(br#"a"b c" d"#), vec![b"ab c".to_vec(), b"d".to_vec()]);
        assert_eq!(split_args(br#"a"b c"d"#), None);
    }

    #[test]
    fn single_quotes() {
        assert_eq!(
            ok(br"'a b' 'it\'s' 'x\n'"),
            vec![b"a b".to_vec(), b"it's".to_vec(), b"x\\n".to_vec()]
        );
    }

    #[test]
    fn unbalanced() {
        assert_eq!(split_args(br#""abc"#), None);
        assert_eq!(split_args(br"'abc"), None);
        assert_eq!(split_args(br#""a"b"#), None);
        assert_eq!(split_args(br"'a'b"), None);
        assert_eq!(split_args(br#""abc\"#), None);
    }
}
