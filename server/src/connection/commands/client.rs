//! CLIENT ID / SETNAME / GETNAME / SETINFO / INFO (Redis 7).

use bytes::Bytes;

use crate::connection::session::Session;
use crate::resp::{Frame, Protocol};
use crate::shard::Shard;

/// Dispatches `CLIENT <subcommand> …`.
pub fn client(_shard: &Shard, session: &mut Session, args: &[Bytes]) -> Frame {
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
            text: Bytes::from(client_info_line(session)),
        }),
        b"HELP" => Frame::Array(
            [
                "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "GETNAME",
                "ID",
                "INFO",
                "SETINFO <option> <value>",
                "SETNAME <name>",
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

/// One line in Redis's CLIENT INFO / CLIENT LIST format (the fields we track), plus `shard`.
pub fn client_info_line(session: &Session) -> String {
    let text = |v: &Option<Bytes>| {
        v.as_ref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    };
    let addr = |a: Option<std::net::SocketAddr>| a.map(|a| a.to_string()).unwrap_or_default();
    format!(
        "id={} addr={} laddr={} fd=-1 name={} age={} idle={} flags=N db={} sub=0 psub=0 ssub=0 \
         multi=-1 qbuf={} qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem={} \
         tot-mem={} events=r cmd=client|info user={} redir=-1 resp={} lib-name={} lib-ver={} \
         shard={}\n",
        session.id,
        addr(session.peer),
        addr(session.local),
        text(&session.name),
        session.created.elapsed().as_secs(),
        session.last_interaction.elapsed().as_secs(),
        session.db,
        session.query_buffer_bytes,
        session.output_buffer_bytes,
        session.query_buffer_bytes + session.output_buffer_bytes,
        session.user.as_deref().unwrap_or(""),
        match session.protocol {
            Protocol::Resp2 => 2,
            Protocol::Resp3 => 3,
        },
        text(&session.lib_name),
        text(&session.lib_ver),
        session.shard,
    )
}
