//! The shebang line of an EVAL script (Redis 7.0 `evalExtractShebangFlags`):
//! `#!lua [flags=<flag>,<flag>…]`. A script without one runs in Redis's compatibility mode.

use super::functions::FunctionFlags;

/// What a script's first line declares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shebang {
    /// Whether the script has a shebang line at all (else: compatibility mode).
    pub present: bool,
    /// Its flags.
    pub flags: FunctionFlags,
    /// Length of the shebang line without its newline: the script is compiled from there, so
    /// its line numbers stay those of the body.
    pub skip: usize,
}

/// Parses the shebang of `body`.
///
/// # Errors
/// Redis's texts: `ERR Unexpected engine in script shebang: …`, `ERR Unknown lua shebang
/// option: …`, `ERR Unexpected flag in script shebang: …`.
pub fn parse(body: &[u8]) -> Result<Shebang, String> {
    if !body.starts_with(b"#!") {
        return Ok(Shebang::default());
    }
    let end = body.iter().position(|&b| b == b'\n').unwrap_or(body.len());
    let line = &body[..end];
    let mut parts = line.split(|&b| b == b' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or(b"#!");
    if engine != b"#!lua" {
        return Err(format!(
            "ERR Unexpected engine in script shebang: {}",
            String::from_utf8_lossy(engine)
        ));
    }
    let mut flags = FunctionFlags::default();
    for option in parts {
        let Some(list) = option.strip_prefix(b"flags=") else {
            return Err(format!(
                "ERR Unknown lua shebang option: {}",
                String::from_utf8_lossy(option)
            ));
        };
        for flag in list.split(|&b| b == b',').filter(|f| !f.is_empty()) {
            let Some(known) = FunctionFlags::from_name(flag) else {
                return Err(format!(
                    "ERR Unexpected flag in script shebang: {}",
                    String::from_utf8_lossy(flag)
                ));
            };
            flags.insert(known);
        }
    }
    Ok(Shebang {
        present: true,
        flags,
        skip: end,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Errors as redis-server 7.0.15 replies them to EVAL.
    #[test]
    fn shebangs_parse_as_redis_parses_them() {
        assert_eq!(parse(b"return 1").unwrap(), Shebang::default());
        let s = parse(b"#!lua flags=no-writes,allow-oom\nreturn 1").unwrap();
        assert!(
            s.present
                && s.flags
                    .contains(FunctionFlags::NO_WRITES | FunctionFlags::ALLOW_OOM)
        );
        assert!(!s.flags.contains(FunctionFlags::NO_CLUSTER));
        assert_eq!(s.skip, 31);
        assert_eq!(
            parse(b"#!lua2\nreturn 1").unwrap_err(),
            "ERR Unexpected engine in script shebang: #!lua2"
        );
        assert_eq!(
            parse(b"#!lua name=x\nreturn 1").unwrap_err(),
            "ERR Unknown lua shebang option: name=x"
        );
        assert_eq!(
            parse(b"#!lua flags=bogus\nreturn 1").unwrap_err(),
            "ERR Unexpected flag in script shebang: bogus"
        );
        assert_eq!(parse(b"#!lua").unwrap().skip, 5);
    }
}
