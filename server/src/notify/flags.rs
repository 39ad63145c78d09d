//! The classes of keyspace events and the `notify-keyspace-events` string that selects them
//! (Redis 7.0 `server.h` `NOTIFY_*`, `notify.c` `keyspaceEventsStringToFlags` and
//! `keyspaceEventsFlagsToString`).

/// `K`: publish on `__keyspace@<db>__:<key>` (message: the event name).
pub const KEYSPACE: u16 = 1 << 0;
/// `E`: publish on `__keyevent@<db>__:<event>` (message: the key).
pub const KEYEVENT: u16 = 1 << 1;
/// `g`: generic commands (DEL, EXPIRE, RENAME, ...).
pub const GENERIC: u16 = 1 << 2;
/// `$`: string commands.
pub const STRING: u16 = 1 << 3;
/// `l`: list commands.
pub const LIST: u16 = 1 << 4;
/// `s`: set commands.
pub const SET: u16 = 1 << 5;
/// `h`: hash commands.
pub const HASH: u16 = 1 << 6;
/// `z`: sorted set commands.
pub const ZSET: u16 = 1 << 7;
/// `x`: a key found expired (on access or by the sweep).
pub const EXPIRED: u16 = 1 << 8;
/// `e`: a key evicted for `maxmemory`.
pub const EVICTED: u16 = 1 << 9;
/// `t`: stream commands.
pub const STREAM: u16 = 1 << 10;
/// `m`: a read found no key (not part of `A`).
pub const KEY_MISS: u16 = 1 << 11;
/// `d`: module key types.
pub const MODULE: u16 = 1 << 13;
/// `n`: a key added (not part of `A`).
pub const NEW: u16 = 1 << 14;
/// `A`: `g$lshzxetd`.
pub const ALL: u16 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// The error CONFIG SET gives for a character that names no class (Redis 7.0 `config.c`).
pub const INVALID: &str = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";

/// The classes `classes` selects, in any order and repeated at will; `None` when a character
/// names no class (Redis's `-1`). The empty string selects nothing (notifications off).
pub fn parse(classes: &[u8]) -> Option<u16> {
    let mut flags = 0;
    for c in classes {
        flags |= match c {
            b'A' => ALL,
            b'g' => GENERIC,
            b'$' => STRING,
            b'l' => LIST,
            b's' => SET,
            b'h' => HASH,
            b'z' => ZSET,
            b'x' => EXPIRED,
            b'e' => EVICTED,
            b'K' => KEYSPACE,
            b'E' => KEYEVENT,
            b't' => STREAM,
            b'm' => KEY_MISS,
            b'd' => MODULE,
            b'n' => NEW,
            _ => return None,
        };
    }
    Some(flags)
}

/// The canonical string of `flags`, as CONFIG GET shows it: `A` when every class of `A` is
/// on (then, as in Redis, `n` is not shown), else the classes in the order `g$lshzxetdn`;
/// then `K`, `E` and `m`.
pub fn render(flags: u16) -> String {
    let mut out = String::new();
    if flags & ALL == ALL {
        out.push('A');
    } else {
        for (bit, c) in [
            (GENERIC, 'g'),
            (STRING, '$'),
            (LIST, 'l'),
            (SET, 's'),
            (HASH, 'h'),
            (ZSET, 'z'),
            (EXPIRED, 'x'),
            (EVICTED, 'e'),
            (STREAM, 't'),
            (MODULE, 'd'),
            (NEW, 'n'),
        ] {
            if flags & bit != 0 {
                out.push(c);
            }
        }
    }
    for (bit, c) in [(KEYSPACE, 'K'), (KEYEVENT, 'E'), (KEY_MISS, 'm')] {
        if flags & bit != 0 {
            out.push(c);
        }
    }
    out
}

/// The classes worth reporting under `flags`: none unless `K` or `E` says where to publish
/// (Redis then publishes nothing either), so such a setting costs what an empty one does.
pub fn effective(flags: u16) -> u16 {
    if flags & (KEYSPACE | KEYEVENT) == 0 {
        0
    } else {
        flags
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(s: &str) -> Option<String> {
        parse(s.as_bytes()).map(render)
    }

    #[test]
    fn renders_redis_canonical_strings() {
        assert_eq!(canonical("").as_deref(), Some(""));
        assert_eq!(canonical("AKE").as_deref(), Some("AKE"));
        assert_eq!(canonical("KEA").as_deref(), Some("AKE"));
        assert_eq!(canonical("KA").as_deref(), Some("AK"));
        assert_eq!(canonical("EA").as_deref(), Some("AE"));
        assert_eq!(canonical("gKE").as_deref(), Some("gKE"));
        assert_eq!(canonical("$lshzxeKE").as_deref(), Some("$lshzxeKE"));
        assert_eq!(canonical("Kg$lshzxetd").as_deref(), Some("AK"));
        assert_eq!(canonical("nmE").as_deref(), Some("nEm"));
        // `A` hides `n`, as Redis's rendering does.
        assert_eq!(canonical("AnK").as_deref(), Some("AK"));
        assert_eq!(canonical("ggKK").as_deref(), Some("gK"));
        assert_eq!(canonical("dtezK").as_deref(), Some("zetdK"));
    }

    #[test]
    fn rejects_unknown_characters() {
        for bad in ["KEX", "a", "K E", "w", "KE\0"] {
            assert_eq!(parse(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn bits_follow_redis() {
        assert_eq!(parse(b"A"), Some(0b10_0111_1111_1100));
        assert_eq!(parse(b"n"), Some(1 << 14));
        assert_eq!(parse(b"m"), Some(1 << 11));
        assert_eq!(ALL & (KEY_MISS | NEW | KEYSPACE | KEYEVENT), 0);
    }

    #[test]
    fn nothing_is_reported_without_k_or_e() {
        assert_eq!(effective(ALL), 0);
        assert_eq!(effective(ALL | KEYSPACE), ALL | KEYSPACE);
        assert_eq!(effective(KEYEVENT | EXPIRED), KEYEVENT | EXPIRED);
    }
}
