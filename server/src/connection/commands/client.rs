//! CLIENT ID / SETNAME / GETNAME / SETINFO / INFO / LIST / KILL / NO-EVICT / PAUSE /
//! UNPAUSE / REPLY (Redis 7.0 networking.c `clientCommand`). LIST, KILL, PAUSE and UNPAUSE
//! reach the connections of every shard.

use std::rc::Rc;

use bytes::Bytes;

use super::client_admin;
use crate::connection::pipeline::{Pipeline, ReplyMode};
use crate::connection::session::Session;
use crate::introspection::clients::session_line;
use crate::resp::Frame;
use crate::shard::Shard;

/// Dispatches `CLIENT <subcommand> …`.
pub async fn client(
    shard: &Rc<Shard>,
    session: &mut Session,
    args: &[Bytes],
    pipeline: &mut Pipeline,
) -> Frame {
    let sub = args[1].to_ascii_uppercase();
    let arity = |expected: usize, name: &str| {
        (args.len() != expected).then(|| {
            Frame::error(format!(
                "ERR wrong number of arguments for 'client|{name}' command"
            ))
        })
    };
    match sub.as_slice() {
        b"ID" => arity(2, "id").unwrap_or(Frame::Integer(session.id as i64)),
        b"GETNAME" => arity(2, "getname").unwrap_or_else(|| match &session.name {
            Some(name) => Frame::Bulk(name.clone()),
            None => Frame::Null,
        }),
        b"SETNAME" => arity(3, "setname").unwrap_or_else(|| match validate_name(&args[2]) {
            Err(err) => err,
            Ok(()) => {
                session.name = (!args[2].is_empty()).then(|| args[2].clone());
                Frame::ok()
            }
        }),
        b"SETINFO" => arity(4, "setinfo").unwrap_or_else(|| {
            let attr = args[2].to_ascii_uppercase();
            if let Err(err) = validate_info_value(&args[3]) {
                return err;
            }
            let value = (!args[3].is_empty()).then(|| args[3].clone());
            match attr.as_slice() {
                b"LIB-NAME" => session.lib_name = value,
                b"LIB-VER" => session.lib_ver = value,
                _ => {
                    return Frame::error(format!(
                        "ERR Unrecognized option '{}'",
                        String::from_utf8_lossy(&args[2])
                    ))
                }
            }
            Frame::ok()
        }),
        b"INFO" => arity(2, "info").unwrap_or_else(|| Frame::Verbatim {
            format: *b"txt",
            text: Bytes::from(session_line(session, ("client", Some("info"))) + "\n"),
        }),
        b"LIST" => client_admin::list(shard, session, &args[2..]).await,
        b"KILL" if args.len() < 3 => {
            Frame::error("ERR wrong number of arguments for 'client|kill' command")
        }
        b"KILL" => client_admin::kill(shard, session, &args[2..]).await,
        b"PAUSE" if args.len() < 3 || args.len() > 4 => {
            Frame::error("ERR wrong number of arguments for 'client|pause' command")
        }
        b"PAUSE" => client_admin::pause(shard, &args[2..]).await,
        b"UNBLOCK" => unblock(shard, args).await,
        b"UNPAUSE" => match arity(2, "unpause") {
            Some(err) => err,
            None => client_admin::unpause(shard).await,
        },
        b"NO-EVICT" => arity(3, "no-evict").unwrap_or_else(|| {
            match args[2].to_ascii_lowercase().as_slice() {
                b"on" => session.no_evict = true,
                b"off" => session.no_evict = false,
                _ => return Frame::error("ERR syntax error"),
            }
            Frame::ok()
        }),
        b"REPLY" => arity(3, "reply").unwrap_or_else(|| {
            let mode = match args[2].to_ascii_lowercase().as_slice() {
                b"on" => ReplyMode::On,
                b"off" => ReplyMode::Off,
                b"skip" => ReplyMode::SkipNext,
                _ => return Frame::error("ERR syntax error"),
            };
            pipeline.set_reply_mode(mode);
            Frame::ok()
        }),
        b"HELP" => Frame::Array(
            [
                "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "GETNAME",
                "ID",
                "INFO",
                "KILL <ip:port>",
                "KILL <option> <value> [<option> <value> [...]]",
                "    ID <client-id> | TYPE normal | USER <username> | ADDR <ip:port> |",
                "    LADDR <ip:port> | SKIPME (YES|NO)",
                "LIST [TYPE normal] [ID <client-id> [<client-id> ...]]",
                "NO-EVICT (ON|OFF)",
                "PAUSE <timeout> [WRITE|ALL]",
                "REPLY (ON|OFF|SKIP)",
                "SETINFO <option> <value>",
                "SETNAME <name>",
                "UNBLOCK <clientid> [TIMEOUT|ERROR]",
                "UNPAUSE",
            ]
            .iter()
            .map(|s| Frame::Simple((*s).into()))
            .collect(),
        ),
        _ => Frame::error(format!(
            "ERR unknown subcommand '{}'. Try CLIENT HELP.",
            String::from_utf8_lossy(&args[1])
        )),
    }
}

/// Client names may not contain spaces, newlines or other characters outside `!`..`~`.
pub fn validate_name(name: &[u8]) -> Result<(), Frame> {
    if name.iter().all(|&b| (b'!'..=b'~').contains(&b)) {
        Ok(())
    } else {
        Err(Frame::error(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        ))
    }
}

fn validate_info_value(value: &[u8]) -> Result<(), Frame> {
    if value.iter().all(|&b| (b'!'..=b'~').contains(&b)) {
        Ok(())
    } else {
        Err(Frame::error(
            "ERR lib-name and lib-ver cannot contain spaces, newlines or special characters.",
        ))
    }
}

/// `CLIENT UNBLOCK id [TIMEOUT|ERROR]` (Redis 7.0 `clientCommand`): ends the wait of client
/// `id`, blocked in BLPOP or another blocking command on any shard, with its timeout reply
/// or the `UNBLOCKED` error → 1, or 0 when no such client is blocked.
async fn unblock(shard: &Rc<Shard>, args: &[Bytes]) -> Frame {
    if args.len() > 4 {
        return Frame::error(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLIENT HELP.",
            String::from_utf8_lossy(&args[1])
        ));
    }
    let error = match args.get(3) {
        None => false,
        Some(reason) if reason.eq_ignore_ascii_case(b"timeout") => false,
        Some(reason) if reason.eq_ignore_ascii_case(b"error") => true,
        Some(_) => return Frame::error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"),
    };
    let Some(id) = crate::resp::num::parse_i64(&args[2]) else {
        return Frame::error("ERR value is not an integer or out of range");
    };
    let Ok(id) = u64::try_from(id) else {
        return Frame::Integer(0);
    };
    let replies = shard
        .run_on_all(|| {
            Box::new(move |s: &Shard| {
                Frame::Integer(i64::from(crate::blocking::unblock_client(s, id, error)))
            })
        })
        .await;
    Frame::Integer(i64::from(replies.contains(&Frame::Integer(1))))
}
