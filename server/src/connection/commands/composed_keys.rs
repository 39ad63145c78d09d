//! Keys of the commands [`super::composed`] serves: those it reads (and whose owner shards it
//! locks), those a reply says were written, and COMMAND GETKEYS / GETKEYSANDFLAGS with Redis
//! 7.0.15's per-key flags.

use bytes::Bytes;

use crate::resp::Frame;

/// The keys of `args` for `name` (a name [`super::composed::serves`]; arity checked), in
/// argument order. For SINTERCARD and LMPOP a malformed `numkeys` gives the keys that are
/// there, for a sorted set command an argument error none (`crate::cmd::zset_multi::keys_of`):
/// the command itself then replies with Redis's error.
pub fn keys_of(name: &str, args: &[Bytes]) -> Vec<Bytes> {
    if let Some(kind) = crate::cmd::zset_multi::kind_of(name) {
        return crate::cmd::zset_multi::keys_of(kind, name, args).unwrap_or_default();
    }
    let from = |at: usize| args.get(at..).unwrap_or(&[]).to_vec();
    match name {
        "bitop" => from(2),
        "smove" | "lmove" | "rpoplpush" => args[1..3].to_vec(),
        "sintercard" | "lmpop" => {
            let n = crate::resp::num::parse_i64(&args[1])
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(0);
            args.get(2..)
                .unwrap_or(&[])
                .iter()
                .take(n)
                .cloned()
                .collect()
        }
        _ => from(1),
    }
}

/// A key and its Redis 7 key-spec flags (COMMAND GETKEYSANDFLAGS).
pub type FlaggedKey = (Bytes, &'static [&'static str]);

/// COMMAND GETKEYS / GETKEYSANDFLAGS of the full command line `line` (arity checked) when
/// its command is one [`serves`]: each key with its key-spec flags, as redis-server 7.0.15
/// reports them (a destination `OW update` or `RW update`, a move's source `RW access
/// delete` and destination `RW insert`, a source read `RO access`). SINTERCARD's and
/// LMPOP's `numkeys` must be at least 1 and fit the line, else `ERR Invalid arguments
/// specified for command`. `None` for any other command.
pub fn keys_with_flags(name: &str, line: &[Bytes]) -> Option<Result<Vec<FlaggedKey>, Frame>> {
    const RO: &[&str] = &["RO", "access"];
    const OW: &[&str] = &["OW", "update"];
    const RW_UPDATE: &[&str] = &["RW", "update"];
    const TAKE: &[&str] = &["RW", "access", "delete"];
    const INSERT: &[&str] = &["RW", "insert"];
    let all = |from: usize, flags: &'static [&'static str]| -> Vec<FlaggedKey> {
        line.get(from..)
            .unwrap_or(&[])
            .iter()
            .map(|k| (k.clone(), flags))
            .collect()
    };
    let with_dest = |dest: usize, dest_flags: &'static [&'static str]| -> Vec<FlaggedKey> {
        let mut keys = vec![(line[dest].clone(), dest_flags)];
        keys.extend(all(dest + 1, RO));
        keys
    };
    let keys = match name {
        "sinter" | "sunion" | "sdiff" => all(1, RO),
        "sinterstore" => with_dest(1, RW_UPDATE),
        "sunionstore" | "sdiffstore" => with_dest(1, OW),
        "bitop" => with_dest(2, OW),
        "smove" | "lmove" | "rpoplpush" => {
            vec![(line[1].clone(), TAKE), (line[2].clone(), INSERT)]
        }
        "sintercard" | "lmpop" => {
            let count = crate::resp::num::parse_i64(&line[1])
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| n >= 1 && n <= line.len() - 2);
            let Some(count) = count else {
                return Some(Err(Frame::error(
                    "ERR Invalid arguments specified for command",
                )));
            };
            let flags = if name == "lmpop" { TAKE } else { RO };
            line[2..2 + count]
                .iter()
                .map(|k| (k.clone(), flags))
                .collect()
        }
        _ => return None,
    };
    Some(Ok(keys))
}

/// The keys a successful `reply` to `name` wrote, in the order to write them back:
/// destinations first, sources last.
pub fn written_keys(name: &str, args: &[Bytes], reply: &Frame) -> Vec<Bytes> {
    match (name, reply) {
        ("bitop", _) => vec![args[2].clone()],
        (
            "sinterstore" | "sunionstore" | "sdiffstore" | "zunionstore" | "zinterstore"
            | "zdiffstore" | "zrangestore",
            _,
        ) => vec![args[1].clone()],
        ("smove", Frame::Integer(1)) | ("lmove" | "rpoplpush", Frame::Bulk(_)) => {
            vec![args[2].clone(), args[1].clone()]
        }
        ("lmpop" | "zmpop", Frame::Array(parts)) => match parts.first() {
            Some(Frame::Bulk(key)) => vec![key.clone()],
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> Vec<Bytes> {
        text.split(' ')
            .map(|s| Bytes::copy_from_slice(s.as_bytes()))
            .collect()
    }

    fn flagged(name: &str, text: &str) -> Result<Vec<(String, Vec<&'static str>)>, Frame> {
        let keys = keys_with_flags(name, &line(text)).unwrap_or_else(|| Ok(Vec::new()))?;
        Ok(keys
            .into_iter()
            .map(|(k, f)| (String::from_utf8_lossy(&k).into_owned(), f.to_vec()))
            .collect())
    }

    #[test]
    fn getkeys_as_redis_7_0_15() {
        assert_eq!(
            flagged("lmove", "LMOVE k1 k2 left right"),
            Ok(vec![
                ("k1".into(), vec!["RW", "access", "delete"]),
                ("k2".into(), vec!["RW", "insert"]),
            ])
        );
        assert_eq!(
            flagged("bitop", "BITOP AND d a"),
            Ok(vec![
                ("d".into(), vec!["OW", "update"]),
                ("a".into(), vec!["RO", "access"]),
            ])
        );
        assert_eq!(flagged("lmpop", "LMPOP 3 a b left").map(|k| k.len()), Ok(3));
        let invalid = Err(Frame::error("ERR Invalid arguments specified for command"));
        assert_eq!(flagged("sintercard", "SINTERCARD 5 a"), invalid);
        assert_eq!(flagged("sintercard", "SINTERCARD 0 a"), invalid);
        assert!(keys_with_flags("get", &line("GET k")).is_none());
    }

    #[test]
    fn keys_and_written_keys() {
        let args = line("SMOVE src dst m");
        assert_eq!(keys_of("smove", &args), line("src dst"));
        assert_eq!(
            written_keys("smove", &args, &Frame::Integer(1)),
            line("dst src")
        );
        assert!(written_keys("smove", &args, &Frame::Integer(0)).is_empty());
        assert_eq!(
            keys_of("sintercard", &line("SINTERCARD 2 a b LIMIT 1")),
            line("a b")
        );
        assert!(keys_of("lmpop", &line("LMPOP x a LEFT")).is_empty());
        let popped = Frame::Array(vec![Frame::Bulk("b".into()), Frame::Array(Vec::new())]);
        assert_eq!(
            written_keys("lmpop", &line("LMPOP 2 a b LEFT"), &popped),
            line("b")
        );
        assert_eq!(keys_of("bitop", &line("BITOP OR d a b")), line("d a b"));
        // Sorted sets: their own key positions; an argument error reads no key.
        let store = line("ZUNIONSTORE d 2 a b WEIGHTS 1 2");
        assert_eq!(keys_of("zunionstore", &store), line("d a b"));
        assert_eq!(
            written_keys("zunionstore", &store, &Frame::Integer(0)),
            line("d")
        );
        assert!(keys_of("zinterstore", &line("ZINTERSTORE d x a")).is_empty());
        let range = line("ZRANGESTORE d s 0 -1");
        assert_eq!(keys_of("zrangestore", &range), line("d s"));
        assert_eq!(
            written_keys("zrangestore", &range, &Frame::Integer(1)),
            line("d")
        );
        assert_eq!(
            written_keys("zmpop", &line("ZMPOP 2 a b MIN"), &popped),
            line("b")
        );
        assert!(written_keys("zmpop", &line("ZMPOP 2 a b MIN"), &Frame::NullArray).is_empty());
        assert!(
            written_keys("zunion", &line("ZUNION 2 a b"), &Frame::Array(Vec::new())).is_empty()
        );
    }
}
