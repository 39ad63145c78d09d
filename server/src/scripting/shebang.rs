//! The shebang line of an EVAL script (Redis 7.0 `evalExtractShebangFlags`):
//! `#!lua [flags=<flag>,<flag>…]`. A script without one runs in Redis's compatibility mode.

/// The flags a script or function declares (Redis 7.0 `SCRIPT_FLAG_*`), in Redis's order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScriptFlags {
    /// `no-writes`: the script may only read.
    pub no_writes: bool,
    /// `allow-oom`: it may run while memory is over `maxmemory`.
    pub allow_oom: bool,
    /// `allow-stale`: accepted (no replication here).
    pub allow_stale: bool,
    /// `no-cluster`: accepted (no cluster mode here).
    pub no_cluster: bool,
    /// `allow-cross-slot-keys`: accepted (keys may be on any shard).
    pub allow_cross_slot_keys: bool,
}

impl ScriptFlags {
    /// The flag names in Redis's order, as FUNCTION LIST shows them.
    pub const NAMES: [&'static str; 5] = [
        "no-writes",
        "allow-oom",
        "allow-stale",
        "no-cluster",
        "allow-cross-slot-keys",
    ];

    /// Sets the flag `name`; false when there is no such flag.
    pub fn set(&mut self, name: &[u8]) -> bool {
        let slot = match name {
            b"no-writes" => &mut self.no_writes,
            b"allow-oom" => &mut self.allow_oom,
            b"allow-stale" => &mut self.allow_stale,
            b"no-cluster" => &mut self.no_cluster,
            b"allow-cross-slot-keys" => &mut self.allow_cross_slot_keys,
            _ => return false,
        };
        *slot = true;
        true
    }

    /// The names of the flags set, in Redis's order.
    pub fn names(&self) -> Vec<&'static str> {
        let set = [
            self.no_writes,
            self.allow_oom,
            self.allow_stale,
            self.no_cluster,
            self.allow_cross_slot_keys,
        ];
        Self::NAMES
            .iter()
            .zip(set)
            .filter(|(_, on)| *on)
            .map(|(name, _)| *name)
            .collect()
    }
}

/// What a script's first line declares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shebang {
    /// Whether the script has a shebang line at all (else: compatibility mode).
    pub present: bool,
    /// Its flags.
    pub flags: ScriptFlags,
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
    let mut flags = ScriptFlags::default();
    for option in parts {
        let Some(list) = option.strip_prefix(b"flags=") else {
            return Err(format!(
                "ERR Unknown lua shebang option: {}",
                String::from_utf8_lossy(option)
            ));
        };
        for flag in list.split(|&b| b == b',').filter(|f| !f.is_empty()) {
            if !flags.set(flag) {
                return Err(format!(
                    "ERR Unexpected flag in script shebang: {}",
                    String::from_utf8_lossy(flag)
                ));
            }
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
        assert!(s.present && s.flags.no_writes && s.flags.allow_oom && !s.flags.no_cluster);
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
