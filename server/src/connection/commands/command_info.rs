//! COMMAND, COMMAND COUNT | INFO | DOCS | LIST [FILTERBY …] | GETKEYS | GETKEYSANDFLAGS
//! (Redis 7.0 reply shapes), generated from the command table and the subcommand table of
//! [`super::subcommands`]. redis-cli sends `COMMAND DOCS` on start for its hints.

use bytes::Bytes;

use super::subcommands::{self, SubcommandSpec};
use crate::cmd::table::{self, CommandSpec};
use crate::keyspace::glob::string_match;
use crate::resp::Frame;

/// Dispatches `COMMAND [subcommand …]`.
pub fn command(args: &[Bytes]) -> Frame {
    let Some(sub) = args.get(1).map(|s| s.to_ascii_uppercase()) else {
        return Frame::Array(table::all().iter().map(info_entry).collect());
    };
    let arity = |name: &str| {
        Frame::error(format!(
            "ERR wrong number of arguments for 'command|{name}' command"
        ))
    };
    match sub.as_slice() {
        b"COUNT" if args.len() > 2 => arity("count"),
        b"COUNT" => Frame::Integer(table::all().len() as i64),
        b"LIST" => list(&args[2..]),
        b"INFO" if args.len() == 2 => Frame::Array(table::all().iter().map(info_entry).collect()),
        b"INFO" => Frame::Array(args[2..].iter().map(|name| info_by_name(name)).collect()),
        b"GETKEYS" | b"GETKEYSANDFLAGS" if args.len() < 3 => {
            arity(&String::from_utf8_lossy(&sub).to_ascii_lowercase())
        }
        b"GETKEYS" => match keys_of(&args[2..]) {
            Ok(keys) => Frame::Array(keys.into_iter().map(|(k, _)| Frame::Bulk(k)).collect()),
            Err(err) => err,
        },
        b"GETKEYSANDFLAGS" => match keys_of(&args[2..]) {
            Ok(keys) => Frame::Array(
                keys.into_iter()
                    .map(|(k, flags)| {
                        Frame::Array(vec![
                            Frame::Bulk(k),
                            Frame::Set(flags.iter().map(|f| Frame::Simple((*f).into())).collect()),
                        ])
                    })
                    .collect(),
            ),
            Err(err) => err,
        },
        b"DOCS" => {
            let specs: Vec<&CommandSpec> = if args.len() == 2 {
                table::all().iter().collect()
            } else {
                args[2..].iter().filter_map(|n| table::lookup(n)).collect()
            };
            Frame::Map(
                specs
                    .into_iter()
                    .map(|s| (bulk(s.name), docs_entry(s)))
                    .collect(),
            )
        }
        b"HELP" => Frame::Array(
            [
                "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "(no subcommand)",
                "COUNT",
                "DOCS [<command-name> ...]",
                "GETKEYS <full-command>",
                "GETKEYSANDFLAGS <full-command>",
                "INFO [<command-name> ...]",
                "LIST [FILTERBY (MODULE <module-name>|ACLCAT <category>|PATTERN <pattern>)]",
                "HELP",
            ]
            .iter()
            .map(|s| Frame::Simple((*s).into()))
            .collect(),
        ),
        _ => Frame::error(format!(
            "ERR unknown subcommand '{}'. Try COMMAND HELP.",
            String::from_utf8_lossy(&args[1])
        )),
    }
}

/// `COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN glob]`: commands and
/// `container|subcommand` names. No module is loaded here, so MODULE matches nothing.
fn list(args: &[Bytes]) -> Frame {
    enum Filter<'a> {
        All,
        Module,
        AclCategory(&'a [u8]),
        Pattern(&'a [u8]),
    }
    let filter = match args {
        [] => Filter::All,
        [by, kind, value] if by.eq_ignore_ascii_case(b"filterby") => {
            match kind.to_ascii_lowercase().as_slice() {
                b"module" => Filter::Module,
                b"aclcat" => Filter::AclCategory(value),
                b"pattern" => Filter::Pattern(value),
                _ => return Frame::error("ERR syntax error"),
            }
        }
        _ => return Frame::error("ERR syntax error"),
    };
    let mut names = Vec::new();
    for spec in table::all() {
        let rows = std::iter::once((spec.name.to_owned(), spec.acl_categories)).chain(
            subcommands::of(spec.name)
                .iter()
                .map(|s| (format!("{}|{}", spec.name, s.name), s.acl_categories)),
        );
        for (name, categories) in rows {
            let keep = match filter {
                Filter::All => true,
                Filter::Module => false,
                Filter::AclCategory(cat) => categories
                    .iter()
                    .any(|c| c.as_bytes()[1..].eq_ignore_ascii_case(cat)),
                Filter::Pattern(glob) => string_match(glob, name.as_bytes(), true),
            };
            if keep {
                names.push(Frame::Bulk(Bytes::from(name)));
            }
        }
    }
    Frame::Array(names)
}

/// COMMAND INFO of `name` or `container|subcommand`; null when unknown.
fn info_by_name(name: &[u8]) -> Frame {
    let mut parts = name.splitn(3, |&b| b == b'|');
    let (Some(first), second, third) = (parts.next(), parts.next(), parts.next()) else {
        return Frame::Null;
    };
    let Some(spec) = table::lookup(first) else {
        return Frame::Null;
    };
    match (second, third) {
        (None, _) => info_entry(spec),
        (Some(sub), None) => subcommands::lookup(spec.name, sub)
            .map(|s| sub_entry(spec, s))
            .unwrap_or(Frame::Null),
        _ => Frame::Null,
    }
}

fn bulk(text: &str) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(text.as_bytes()))
}

fn simple_set(items: &[&str]) -> Frame {
    Frame::Set(items.iter().map(|f| Frame::Simple((*f).into())).collect())
}

/// `[name, arity, flags, first key, last key, step, acl categories, tips, key specs,
/// subcommands]`.
fn info_entry(spec: &CommandSpec) -> Frame {
    let keys = (spec.first_key, spec.last_key, spec.key_step);
    Frame::Array(vec![
        bulk(spec.name),
        Frame::Integer(spec.arity as i64),
        simple_set(spec.flags),
        Frame::Integer(spec.first_key as i64),
        Frame::Integer(spec.last_key as i64),
        Frame::Integer(spec.key_step as i64),
        simple_set(spec.acl_categories),
        Frame::Set(Vec::new()),
        list_key_specs(spec.name)
            .unwrap_or_else(|| key_specs(keys, key_flags(spec.name, spec.flags))),
        Frame::Array(
            subcommands::of(spec.name)
                .iter()
                .map(|s| sub_entry(spec, s))
                .collect(),
        ),
    ])
}

fn sub_entry(container: &CommandSpec, sub: &SubcommandSpec) -> Frame {
    Frame::Array(vec![
        bulk(&format!("{}|{}", container.name, sub.name)),
        Frame::Integer(sub.arity as i64),
        simple_set(sub.flags),
        Frame::Integer(sub.keys.0 as i64),
        Frame::Integer(sub.keys.1 as i64),
        Frame::Integer(sub.keys.2 as i64),
        simple_set(sub.acl_categories),
        Frame::Set(Vec::new()),
        key_specs(sub.keys, &["RO"]),
        Frame::Array(Vec::new()),
    ])
}

/// Redis 7 key specs for a plain `first..last step` key range: one spec, `begin_search`
/// by index, `find_keys` by range; none when the command has no keys.
fn key_specs(keys: (i32, i32, i32), flags: &[&str]) -> Frame {
    let (first, last, step) = keys;
    if first == 0 {
        return Frame::Array(Vec::new());
    }
    let last_key = if last < 0 { last } else { last - first };
    let map = |pairs: Vec<(&str, Frame)>| {
        Frame::Map(pairs.into_iter().map(|(k, v)| (bulk(k), v)).collect())
    };
    Frame::Array(vec![map(vec![
        ("flags", simple_set(flags)),
        (
            "begin_search",
            map(vec![
                ("type", bulk("index")),
                ("spec", map(vec![("index", Frame::Integer(first as i64))])),
            ]),
        ),
        (
            "find_keys",
            map(vec![
                ("type", bulk("range")),
                (
                    "spec",
                    map(vec![
                        ("lastkey", Frame::Integer(last_key as i64)),
                        ("keystep", Frame::Integer(step as i64)),
                        ("limit", Frame::Integer(0)),
                    ]),
                ),
            ]),
        ),
    ])])
}

/// Key specs of the list moves and multi-pops as Redis 7.0's command table has them: a
/// source spec (`RW access delete`) and a destination spec (`RW insert`) for LMOVE,
/// RPOPLPUSH, BLMOVE and BRPOPLPUSH; one `keynum` spec for LMPOP, BLMPOP and BZMPOP.
fn list_key_specs(name: &str) -> Option<Frame> {
    let map = |pairs: Vec<(&str, Frame)>| {
        Frame::Map(pairs.into_iter().map(|(k, v)| (bulk(k), v)).collect())
    };
    let begin = |index: i64| {
        map(vec![
            ("type", bulk("index")),
            ("spec", map(vec![("index", Frame::Integer(index))])),
        ])
    };
    let one = |flags: &[&str], index: i64| {
        map(vec![
            ("flags", simple_set(flags)),
            ("begin_search", begin(index)),
            (
                "find_keys",
                map(vec![
                    ("type", bulk("range")),
                    (
                        "spec",
                        map(vec![
                            ("lastkey", Frame::Integer(0)),
                            ("keystep", Frame::Integer(1)),
                            ("limit", Frame::Integer(0)),
                        ]),
                    ),
                ]),
            ),
        ])
    };
    let keynum = |index: i64| {
        map(vec![
            ("flags", simple_set(&["RW", "access", "delete"])),
            ("begin_search", begin(index)),
            (
                "find_keys",
                map(vec![
                    ("type", bulk("keynum")),
                    (
                        "spec",
                        map(vec![
                            ("keynumidx", Frame::Integer(0)),
                            ("firstkey", Frame::Integer(1)),
                            ("keystep", Frame::Integer(1)),
                        ]),
                    ),
                ]),
            ),
        ])
    };
    match name {
        "lmove" | "rpoplpush" | "blmove" | "brpoplpush" => Some(Frame::Array(vec![
            one(&["RW", "access", "delete"], 1),
            one(&["RW", "insert"], 2),
        ])),
        "lmpop" => Some(Frame::Array(vec![keynum(1)])),
        "blmpop" | "bzmpop" => Some(Frame::Array(vec![keynum(2)])),
        _ => None,
    }
}

/// Redis 7 key-spec flags of the commands served here (`OW`/`RW`/`RO`/`RM` plus the
/// logical `access`/`update`/`insert`/`delete`), as COMMAND GETKEYSANDFLAGS reports them.
fn key_flags(name: &str, flags: &[&str]) -> &'static [&'static str] {
    match name {
        "set" | "mset" | "setex" | "psetex" => &["OW", "update"],
        "del" | "unlink" => &["RM", "delete"],
        "getdel" | "lpop" | "rpop" | "spop" | "blpop" | "brpop" | "smove" | "lmove"
        | "rpoplpush" | "lmpop" | "zpopmin" | "zpopmax" | "bzpopmin" | "bzpopmax" => {
            &["RW", "access", "delete"]
        }
        "zrem" | "zremrangebyscore" | "zremrangebyrank" | "zremrangebylex" => &["RW", "delete"],
        "bitop" | "sunionstore" | "sdiffstore" => &["OW", "update"],
        "sinterstore" => &["RW", "update"],
        "lpush" | "rpush" | "lpushx" | "rpushx" | "sadd" | "linsert" | "append" | "setnx"
        | "hsetnx" => &["RW", "insert"],
        "exists" | "type" | "ttl" | "pttl" | "expiretime" | "pexpiretime" | "strlen" | "llen"
        | "hlen" | "scard" | "hexists" | "hstrlen" | "zcard" => &["RO"],
        "expire" | "pexpire" | "expireat" | "pexpireat" | "persist" | "move" | "lrem" | "ltrim"
        | "hdel" | "srem" | "hset" | "hmset" | "zadd" => &["RW", "update"],
        _ if flags.contains(&"readonly") => &["RO", "access"],
        _ => &["RW", "access", "update"],
    }
}

/// Keys of a full command line (`COMMAND GETKEYS`), with their key-spec flags. Errors as
/// Redis 7.0 `commandGetKeys`.
fn keys_of(line: &[Bytes]) -> Result<Vec<(Bytes, &'static [&'static str])>, Frame> {
    let invalid = || Frame::error("ERR Invalid command specified");
    let spec = table::lookup(&line[0]).ok_or_else(invalid)?;
    let (arity, keys, flags) = match subcommands::of(spec.name) {
        [] => (
            spec.arity,
            (spec.first_key, spec.last_key, spec.key_step),
            key_flags(spec.name, spec.flags),
        ),
        _ => {
            let sub = line
                .get(1)
                .and_then(|s| subcommands::lookup(spec.name, s))
                .ok_or_else(invalid)?;
            (sub.arity, sub.keys, &["RO"][..])
        }
    };
    let argc = line.len() as i32;
    if (arity > 0 && argc != arity) || argc < -arity {
        return Err(Frame::error(
            "ERR Invalid number of arguments specified for command",
        ));
    }
    if let Some(keys) = super::composed_keys::keys_with_flags(spec.name, line) {
        return keys;
    }
    if let Some(kind) = crate::cmd::zset_multi::kind_of(spec.name) {
        return zset_keys(kind, spec.name, line);
    }
    if matches!(spec.name, "blmpop" | "bzmpop") {
        return blocking_mpop_keys(line);
    }
    if matches!(
        spec.name,
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro"
    ) {
        return Ok(script_keys(spec.name, line));
    }
    let (first, last, step) = keys;
    if first == 0 {
        return Err(Frame::error("ERR The command has no key arguments"));
    }
    let last = if last < 0 { argc + last } else { last };
    Ok((first..=last.min(argc - 1))
        .step_by(step.max(1) as usize)
        .map(|i| (line[i as usize].clone(), flags))
        .collect())
}

/// The declared keys of EVAL / FCALL (Redis 7.0 `evalGetKeys`): `numkeys` keys after it,
/// none when it is not a count that fits.
fn script_keys(name: &str, line: &[Bytes]) -> Vec<(Bytes, &'static [&'static str])> {
    let flags: &'static [&'static str] = if name.ends_with("_ro") {
        &["RO", "access"]
    } else {
        &["RW", "access", "update"]
    };
    let numkeys = std::str::from_utf8(&line[2])
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|&n| n <= line.len() - 3)
        .unwrap_or(0);
    line[3..3 + numkeys]
        .iter()
        .map(|key| (key.clone(), flags))
        .collect()
}

/// The movable keys of a multi-key sorted set command (Redis 7.0 `zunionInterDiffGetKeys`,
/// `zmpopGetKeys`): a destination `OW update`, sources `RO access`, ZMPOP's `RW access
/// delete`. A bad numkeys is `ERR Invalid arguments specified for command`.
fn zset_keys(
    kind: crate::cmd::zset_multi::Kind,
    name: &str,
    line: &[Bytes],
) -> Result<Vec<(Bytes, &'static [&'static str])>, Frame> {
    use crate::cmd::zset_multi::{keys_of, Kind};
    let keys = keys_of(kind, name, line)
        .map_err(|_| Frame::error("ERR Invalid arguments specified for command"))?;
    let writes_first = matches!(kind, Kind::SetOp { store: true, .. } | Kind::RangeStore);
    Ok(keys
        .into_iter()
        .enumerate()
        .map(|(i, key)| {
            let flags: &'static [&'static str] = match kind {
                Kind::Mpop => &["RW", "access", "delete"],
                _ if writes_first && i == 0 => &["OW", "update"],
                _ => &["RO", "access"],
            };
            (key, flags)
        })
        .collect())
}

/// The keys of BLMPOP / BZMPOP (`timeout numkeys key…`, Redis 7.0 `blmpopGetKeys`,
/// `bzmpopGetKeys`), each `RW access delete`; a numkeys below 1 or beyond the line is
/// `ERR Invalid arguments specified for command`.
fn blocking_mpop_keys(line: &[Bytes]) -> Result<Vec<(Bytes, &'static [&'static str])>, Frame> {
    let count = line
        .get(2)
        .and_then(|n| crate::resp::num::parse_i64(n))
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n >= 1 && n <= line.len().saturating_sub(3))
        .ok_or_else(|| Frame::error("ERR Invalid arguments specified for command"))?;
    Ok(line[3..3 + count]
        .iter()
        .map(|k| (k.clone(), &["RW", "access", "delete"][..]))
        .collect())
}

fn docs_entry(spec: &CommandSpec) -> Frame {
    Frame::Map(vec![
        (bulk("summary"), bulk(spec.summary)),
        (bulk("since"), bulk(spec.since)),
        (bulk("group"), bulk(spec.group)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<Bytes> {
        line.split(' ')
            .map(|s| Bytes::copy_from_slice(s.as_bytes()))
            .collect()
    }

    #[test]
    fn getkeys() {
        assert_eq!(
            command(&args("COMMAND GETKEYS mset a 1 b 2")),
            Frame::Array(vec![Frame::Bulk("a".into()), Frame::Bulk("b".into())])
        );
        assert_eq!(
            command(&args("COMMAND GETKEYS nosuch a")),
            Frame::error("ERR Invalid command specified")
        );
        assert_eq!(
            command(&args("COMMAND GETKEYS get")),
            Frame::error("ERR Invalid number of arguments specified for command")
        );
        assert_eq!(
            command(&args("COMMAND GETKEYS ping")),
            Frame::error("ERR The command has no key arguments")
        );
        // The blocking pops' keys (checked against redis-server 7.0.15).
        let keys = |names: &[&str]| {
            Frame::Array(
                names
                    .iter()
                    .map(|k| Frame::Bulk(Bytes::copy_from_slice(k.as_bytes())))
                    .collect(),
            )
        };
        assert_eq!(
            command(&args("COMMAND GETKEYS bzpopmin a b 0")),
            keys(&["a", "b"])
        );
        assert_eq!(
            command(&args("COMMAND GETKEYS bzmpop 0 2 a MIN")),
            keys(&["a", "MIN"])
        );
        assert_eq!(
            command(&args("COMMAND GETKEYS blmpop 0 2 a b left")),
            keys(&["a", "b"])
        );
        for line in [
            "COMMAND GETKEYS bzmpop 0 5 a MIN",
            "COMMAND GETKEYS bzmpop 0 x a b",
        ] {
            assert_eq!(
                command(&args(line)),
                Frame::error("ERR Invalid arguments specified for command")
            );
        }
        // Movable keys of the sorted set commands (checked against redis-server 7.0.15).
        assert_eq!(
            command(&args("COMMAND GETKEYS zunionstore d 2 a b WEIGHTS 1 2")),
            Frame::Array(vec![
                Frame::Bulk("d".into()),
                Frame::Bulk("a".into()),
                Frame::Bulk("b".into())
            ])
        );
        assert_eq!(
            command(&args("COMMAND GETKEYS zmpop 1 a MIN")),
            Frame::Array(vec![Frame::Bulk("a".into())])
        );
        assert_eq!(
            command(&args("COMMAND GETKEYS zinter 3 a b")),
            Frame::error("ERR Invalid arguments specified for command")
        );
    }

    #[test]
    fn list_filters() {
        let names = |frame: Frame| match frame {
            Frame::Array(items) => items
                .into_iter()
                .filter_map(|f| match f {
                    Frame::Bulk(b) => Some(String::from_utf8_lossy(&b).into_owned()),
                    _ => None,
                })
                .collect::<Vec<_>>(),
            _ => Vec::new(),
        };
        assert_eq!(
            names(command(&args("COMMAND LIST FILTERBY PATTERN get"))),
            ["get"]
        );
        let config = names(command(&args("COMMAND LIST FILTERBY PATTERN config|*re*")));
        assert_eq!(config, ["config|resetstat", "config|rewrite"]);
        assert_eq!(
            names(command(&args("COMMAND LIST FILTERBY ACLCAT bitmap"))),
            [
                "setbit",
                "getbit",
                "bitcount",
                "bitpos",
                "bitfield",
                "bitfield_ro",
                "bitop"
            ]
        );
        assert!(names(command(&args("COMMAND LIST"))).contains(&"client|list".to_string()));
        assert_eq!(
            command(&args("COMMAND LIST FILTERBY bad x")),
            Frame::error("ERR syntax error")
        );
        assert_eq!(
            command(&args("COMMAND LIST bad")),
            Frame::error("ERR syntax error")
        );
    }

    #[test]
    fn moves_have_a_source_and_a_destination_key_spec_and_mpops_a_keynum_one() {
        let Some(Frame::Array(specs)) = list_key_specs("blmove") else {
            panic!("no key specs for blmove");
        };
        assert_eq!(specs.len(), 2);
        let Some(Frame::Array(specs)) = list_key_specs("blmpop") else {
            panic!("no key specs for blmpop");
        };
        let Frame::Map(pairs) = &specs[0] else {
            panic!("{specs:?}");
        };
        let begin = format!("{:?}", pairs[1]);
        assert!(begin.contains("Integer(2)"), "{begin}");
        let find = format!("{:?}", pairs[2]);
        assert!(find.contains("keynum"), "{find}");
        assert!(list_key_specs("blpop").is_none());
    }
}
