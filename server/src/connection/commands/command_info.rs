//! COMMAND, COMMAND COUNT, COMMAND INFO, COMMAND DOCS (Redis 7 reply shapes), generated from
//! the command table. redis-cli sends `COMMAND DOCS` on start for its hints.

use bytes::Bytes;

use crate::cmd::table::{self, CommandSpec};
use crate::resp::Frame;

/// Dispatches `COMMAND [COUNT | INFO name… | DOCS name… | LIST]`.
pub fn command(args: &[Bytes]) -> Frame {
    let Some(sub) = args.get(1).map(|s| s.to_ascii_uppercase()) else {
        return Frame::Array(table::all().iter().map(info_entry).collect());
    };
    match sub.as_slice() {
        b"COUNT" if args.len() > 2 => {
            Frame::error("ERR wrong number of arguments for 'command|count' command")
        }
        b"COUNT" => Frame::Integer(table::all().len() as i64),
        b"LIST" => Frame::Array(table::all().iter().map(|s| bulk(s.name)).collect()),
        b"INFO" if args.len() == 2 => Frame::Array(table::all().iter().map(info_entry).collect()),
        b"INFO" => Frame::Array(
            args[2..]
                .iter()
                .map(|name| table::lookup(name).map(info_entry).unwrap_or(Frame::Null))
                .collect(),
        ),
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
        _ => Frame::error(format!(
            "ERR unknown subcommand '{}'. Try COMMAND HELP.",
            String::from_utf8_lossy(&args[1])
        )),
    }
}

fn bulk(text: &str) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(text.as_bytes()))
}

/// `[name, arity, flags, first key, last key, step, acl categories, tips, key specs,
/// subcommands]`.
fn info_entry(spec: &CommandSpec) -> Frame {
    Frame::Array(vec![
        bulk(spec.name),
        Frame::Integer(spec.arity as i64),
        Frame::Set(
            spec.flags
                .iter()
                .map(|f| Frame::Simple((*f).into()))
                .collect(),
        ),
        Frame::Integer(spec.first_key as i64),
        Frame::Integer(spec.last_key as i64),
        Frame::Integer(spec.key_step as i64),
        Frame::Set(
            spec.acl_categories
                .iter()
                .map(|c| Frame::Simple((*c).into()))
                .collect(),
        ),
        Frame::Set(Vec::new()),
        Frame::Array(Vec::new()),
        Frame::Array(Vec::new()),
    ])
}

fn docs_entry(spec: &CommandSpec) -> Frame {
    Frame::Map(vec![
        (bulk("summary"), bulk(spec.summary)),
        (bulk("since"), bulk(spec.since)),
        (bulk("group"), bulk(spec.group)),
    ])
}
