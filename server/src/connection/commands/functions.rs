//! FUNCTION and FCALL / FCALL_RO (Redis 7.0 `functions.c`) over
//! [`crate::scripting::functions`] and [`crate::scripting::library_store`].

use std::rc::Rc;

use bytes::Bytes;

use super::super::session::Session;
use super::scripting::{kill_reply, split_keys, subcommand};
use crate::forward::ShardJob;
use crate::keyspace::glob::string_match;
use crate::resp::Frame;
use crate::scripting::functions::{self, FunctionFlags, Metadata, RestorePolicy};
use crate::scripting::library_store;
use crate::scripting::run::{self, Call, Target};
use crate::shard::Shard;

/// `FUNCTION <subcommand> …`.
pub async fn function(shard: &Rc<Shard>, args: &[Bytes]) -> Frame {
    let sub = match subcommand("function", args) {
        Ok(sub) => sub,
        Err(error) => return error,
    };
    let scripts = &shard.shared.scripts;
    match sub {
        "kill" => kill_reply(scripts.busy.kill(true), true),
        "load" => load(shard, args),
        "delete" => change(shard, |libraries| {
            libraries.delete(&String::from_utf8_lossy(&args[2]))?;
            Ok(Frame::ok())
        }),
        "flush" => match &args[2..] {
            [] => flush(shard),
            [mode] if mode.eq_ignore_ascii_case(b"async") || mode.eq_ignore_ascii_case(b"sync") => {
                flush(shard)
            }
            [_] => Frame::error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option"),
            _ => Frame::error(
                "ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP.",
            ),
        },
        "list" => list(shard, &args[2..]),
        "dump" => match scripts.functions.read() {
            Ok(libraries) => Frame::Bulk(functions::dump(&libraries)),
            Err(_) => poisoned(),
        },
        "restore" => restore(shard, args),
        "stats" => stats(shard),
        _ => help(),
    }
}

fn poisoned() -> Frame {
    Frame::error("ERR the function libraries are unavailable (a thread panicked)")
}

fn flush(shard: &Shard) -> Frame {
    change(shard, |libraries| {
        libraries.flush();
        Ok(Frame::ok())
    })
}

/// Applies `edit` to the libraries and saves them; on any error nothing changes.
fn change(
    shard: &Shard,
    edit: impl FnOnce(&mut functions::Libraries) -> Result<Frame, String>,
) -> Frame {
    let Ok(mut libraries) = shard.shared.scripts.functions.write() else {
        return poisoned();
    };
    let mut edited = libraries.clone();
    let reply = match edit(&mut edited) {
        Ok(reply) => reply,
        Err(error) => return Frame::error(error),
    };
    let path = library_store::path(&shard.shared.config.data_dir);
    let fsync = shard.runtime.borrow().appendfsync == crate::aof::AppendFsync::Always;
    if let Err(error) = library_store::save(&path, &edited, fsync) {
        return Frame::error(error);
    }
    *libraries = edited;
    reply
}

/// `FUNCTION LOAD [REPLACE] <code>`: the library name.
fn load(shard: &Shard, args: &[Bytes]) -> Frame {
    let Some((code, options)) = args[2..].split_last() else {
        return crate::cmd::reply::wrong_arity("function|load");
    };
    let mut replace = false;
    for option in options {
        if option.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else {
            return Frame::error(format!(
                "ERR Unknown option given: {}",
                String::from_utf8_lossy(option)
            ));
        }
    }
    let meta = match Metadata::parse(code) {
        Ok(meta) => meta,
        Err(error) => return Frame::error(error),
    };
    if let Ok(libraries) = shard.shared.scripts.functions.read() {
        if let Err(error) = libraries.check_load(&meta.name, replace) {
            return Frame::error(error);
        }
    }
    let registration = match library_store::validate(code, &meta) {
        Ok(registration) => registration,
        Err(error) => return Frame::error(error),
    };
    change(shard, |libraries| {
        let name = libraries.load(registration, replace)?;
        Ok(Frame::Bulk(Bytes::from(name)))
    })
}

/// `FUNCTION RESTORE <payload> [FLUSH|APPEND|REPLACE]`.
fn restore(shard: &Shard, args: &[Bytes]) -> Frame {
    if args.len() > 4 {
        return Frame::error(
            "ERR unknown subcommand or wrong number of arguments for 'restore'. Try FUNCTION HELP.",
        );
    }
    let policy = match args.get(3) {
        None => RestorePolicy::default(),
        Some(arg) => match RestorePolicy::parse(arg) {
            Ok(policy) => policy,
            Err(error) => return Frame::error(error),
        },
    };
    change(shard, |libraries| {
        functions::restore(libraries, &args[2], policy, library_store::validate)?;
        Ok(Frame::ok())
    })
}

/// `FUNCTION LIST [WITHCODE] [LIBRARYNAME <pattern>]`.
fn list(shard: &Shard, options: &[Bytes]) -> Frame {
    let mut with_code = false;
    let mut pattern: Option<&[u8]> = None;
    let mut at = 0;
    while at < options.len() {
        let option = &options[at];
        if option.eq_ignore_ascii_case(b"withcode") && !with_code {
            with_code = true;
        } else if option.eq_ignore_ascii_case(b"libraryname") && pattern.is_none() {
            let Some(value) = options.get(at + 1) else {
                return Frame::error("ERR library name argument was not given");
            };
            pattern = Some(value);
            at += 1;
        } else {
            return Frame::error(format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(option)
            ));
        }
        at += 1;
    }
    let Ok(libraries) = shard.shared.scripts.functions.read() else {
        return poisoned();
    };
    let matcher = |pattern: &[u8], name: &[u8]| string_match(pattern, name, true);
    Frame::Array(
        libraries
            .list(pattern, &matcher)
            .map(|library| {
                let mut fields = vec![
                    (
                        Frame::bulk(b"library_name"),
                        Frame::Bulk(Bytes::from(library.name.clone())),
                    ),
                    (
                        Frame::bulk(b"engine"),
                        Frame::bulk(library.engine.as_bytes()),
                    ),
                    (
                        Frame::bulk(b"functions"),
                        Frame::Array(
                            library
                                .functions
                                .iter()
                                .map(|f| {
                                    Frame::Map(vec![
                                        (
                                            Frame::bulk(b"name"),
                                            Frame::Bulk(Bytes::from(f.name.clone())),
                                        ),
                                        (
                                            Frame::bulk(b"description"),
                                            f.description.clone().map_or(Frame::Null, Frame::Bulk),
                                        ),
                                        (
                                            Frame::bulk(b"flags"),
                                            Frame::Set(
                                                f.flags
                                                    .names()
                                                    .map(|n| Frame::Simple(n.to_owned()))
                                                    .collect(),
                                            ),
                                        ),
                                    ])
                                })
                                .collect(),
                        ),
                    ),
                ];
                if with_code {
                    fields.push((
                        Frame::bulk(b"library_code"),
                        Frame::Bulk(library.code.clone()),
                    ));
                }
                Frame::Map(fields)
            })
            .collect(),
    )
}

/// `FUNCTION STATS`.
fn stats(shard: &Shard) -> Frame {
    let Ok(libraries) = shard.shared.scripts.functions.read() else {
        return poisoned();
    };
    Frame::Map(vec![
        (
            Frame::bulk(b"running_script"),
            match shard.shared.scripts.busy.running_function() {
                None => Frame::Null,
                Some(running) => Frame::Map(vec![
                    (Frame::bulk(b"name"), Frame::Bulk(Bytes::from(running.name))),
                    (
                        Frame::bulk(b"command"),
                        Frame::Array(running.command.into_iter().map(Frame::Bulk).collect()),
                    ),
                    (
                        Frame::bulk(b"duration_ms"),
                        Frame::Integer(running.started.elapsed().as_millis() as i64),
                    ),
                ]),
            },
        ),
        (
            Frame::bulk(b"engines"),
            Frame::Map(vec![(
                Frame::bulk(b"LUA"),
                Frame::Map(vec![
                    (
                        Frame::bulk(b"libraries_count"),
                        Frame::Integer(libraries.libraries_count() as i64),
                    ),
                    (
                        Frame::bulk(b"functions_count"),
                        Frame::Integer(libraries.functions_count() as i64),
                    ),
                ]),
            )]),
        ),
    ])
}

/// FCALL and FCALL_RO (`name`), arity checked.
pub async fn fcall(shard: &Rc<Shard>, session: &Session, name: &str, args: &[Bytes]) -> Frame {
    let found = {
        let Ok(libraries) = shard.shared.scripts.functions.read() else {
            return poisoned();
        };
        shard.scripting.functions.function(
            &libraries,
            &args[1],
            shard.shared.config.script_memory_limit,
        )
    };
    let (functions, compiled) = match found {
        Ok(Some(found)) => found,
        Ok(None) => return Frame::error("ERR Function not found"),
        Err(error) => return Frame::error(error),
    };
    if crate::resp::num::parse_i64(&args[2]).is_none() {
        return Frame::error("ERR Bad number of keys provided");
    }
    let (keys, argv) = match split_keys(args) {
        Ok(split) => split,
        Err(error) => return error,
    };
    let no_writes = compiled.flags.contains(FunctionFlags::NO_WRITES);
    if name == "fcall_ro" && !no_writes {
        return Frame::error("ERR Can not execute a script with write flag using *_ro command.");
    }
    if !no_writes
        && !compiled.flags.contains(FunctionFlags::ALLOW_OOM)
        && super::scripting::out_of_memory(shard).await
    {
        return Frame::error(crate::eviction::OOM);
    }
    let label = String::from_utf8_lossy(&args[1]).into_owned();
    let undeclared_key = format!("function:{}", label.to_ascii_lowercase());
    if let Some(owner) = super::scripting::shipping_owner(shard, session, &keys, &undeclared_key) {
        let (label, keys, argv, command) =
            (label.clone(), keys.clone(), argv.clone(), args.to_vec());
        let (db, client) = (session.db, session.client_tag());
        let job: ShardJob = Box::new(move |s: &Shard| {
            let Some(here) = s.scripting.shard() else {
                return Frame::error(run::RUN_AGAIN);
            };
            let found = match s.shared.scripts.functions.read() {
                Ok(libraries) => s.scripting.functions.function(
                    &libraries,
                    label.as_bytes(),
                    s.shared.config.script_memory_limit,
                ),
                Err(_) => return poisoned(),
            };
            let (functions, compiled) = match found {
                Ok(Some(found)) => found,
                Ok(None) => return Frame::error("ERR Function not found"),
                Err(error) => return Frame::error(error),
            };
            let target = Target {
                function: compiled.callback,
                undeclared_key: format!("function:{}", label.to_ascii_lowercase()),
                label,
                is_function: true,
            };
            let call = Call {
                keys,
                argv,
                db,
                client,
                outer: None,
                read_only: no_writes,
                command: Some(command),
            };
            run::run_shipped(&here, &functions.vm, &target, call)
        });
        match shard.run_on_in(owner, None, job).await {
            Frame::Error(text) if text == run::RUN_AGAIN => {}
            reply => return reply,
        }
    }
    let target = Target {
        function: compiled.callback,
        undeclared_key,
        label,
        is_function: true,
    };
    let call = Call {
        keys,
        argv,
        db: session.db,
        client: session.client_tag(),
        outer: session.txn_scope,
        read_only: no_writes,
        command: Some(args.to_vec()),
    };
    run::run(shard, &functions.vm, &target, call).await
}

fn help() -> Frame {
    let lines = [
        "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Create a new library with the given library name and code.",
        "DELETE <LIBRARY NAME>",
        "    Delete the given library.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Return general information on all the libraries:",
        "    * Library name",
        "    * The engine used to run the Library",
        "    * Library description",
        "    * Functions list",
        "    * Library code (if WITHCODE is given)",
        "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
        "STATS",
        "    Return information about the current function running:",
        "    * Function name",
        "    * Command used to run the function",
        "    * Duration in MS that the function is running",
        "    If no function is running, return nil",
        "    In addition, returns a list of available engines.",
        "KILL",
        "    Kill the current running function.",
        "FLUSH [ASYNC|SYNC]",
        "    Delete all the libraries.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the libraries.",
        "    * SYNC: Synchronously flush the libraries.",
        "DUMP",
        "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
        "    control how to handle existing libraries (default APPEND):",
        "    * FLUSH: delete all existing libraries.",
        "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
        "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
        "      libraries with the new libraries (notice that even on this option there is a chance of failure",
        "      in case of functions name collision with another library).",
        "HELP",
        "    Prints this help.",
    ];
    super::object::help(&lines)
}
