//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT (Redis 7.0 `eval.c`), over
//! [`crate::scripting`]; FUNCTION and FCALL are in [`super::functions`].

use std::rc::Rc;

use bytes::Bytes;

use super::super::session::Session;
use super::subcommands;
use crate::forward::ShardJob;
use crate::resp::Frame;
use crate::scripting::api::sha1_hex;
use crate::scripting::busy::Kill;
use crate::scripting::functions::FunctionFlags;
use crate::scripting::run::{self, Call, Target};
use crate::scripting::shebang;
use crate::scripting::vm::{Vm, EVAL_CHUNK};
use crate::shard::Shard;

/// Redis's reply to SCRIPT KILL (`function == false`) / FUNCTION KILL.
pub fn kill_reply(outcome: Kill, function: bool) -> Frame {
    match outcome {
        Kill::Killed => Frame::ok(),
        Kill::NotBusy => Frame::error("NOTBUSY No scripts in execution right now."),
        // The running one is of the other kind: Redis answers as to any command then.
        Kill::OtherKind => Frame::error(crate::scripting::busy::busy_error(!function)),
        Kill::Unkillable => Frame::error(
            "UNKILLABLE Sorry the script already executed write commands against the dataset. \
             You can either wait the script termination or kill the server in a hard way using \
             the SHUTDOWN NOSAVE command.",
        ),
    }
}

/// The number of keys of an EVAL or FCALL (`args[2]`) and the split of the rest into keys
/// and arguments.
///
/// # Errors
/// Redis's: not an integer, negative, more than the arguments given.
pub fn split_keys(args: &[Bytes]) -> Result<(Vec<Bytes>, Vec<Bytes>), Frame> {
    let numkeys = crate::resp::num::parse_i64(&args[2])
        .ok_or_else(|| Frame::error("ERR value is not an integer or out of range"))?;
    if numkeys < 0 {
        return Err(Frame::error("ERR Number of keys can't be negative"));
    }
    let rest = &args[3..];
    let numkeys = usize::try_from(numkeys).unwrap_or(usize::MAX);
    if numkeys > rest.len() {
        return Err(Frame::error(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    Ok((rest[..numkeys].to_vec(), rest[numkeys..].to_vec()))
}

/// The shard's VM, or Redis-style error text when it cannot be built.
pub fn vm_of(shard: &Shard) -> Result<Rc<Vm>, Frame> {
    shard
        .scripting
        .eval_vm(
            shard.shared.config.script_memory_limit,
            shard.shared.scripts.epoch(),
        )
        .map_err(|err| Frame::error(format!("ERR cannot start the Lua VM: {err}")))
}

/// The compiled script `sha` with `body`, compiled now if this shard has not yet; cached
/// process-wide once it compiles.
fn compiled(vm: &Vm, shard: &Shard, sha: &str, body: &Bytes) -> Result<mlua::Function, Frame> {
    if let Some(function) = vm.compiled.borrow().get(sha) {
        return Ok(function.clone());
    }
    let shebang = shebang::parse(body).map_err(Frame::error)?;
    let function = vm
        .compile(&body[shebang.skip..], EVAL_CHUNK)
        .map_err(|message| {
            Frame::error(format!(
                "ERR Error compiling script (new function): {message}"
            ))
        })?;
    vm.compiled
        .borrow_mut()
        .insert(sha.to_owned(), function.clone());
    shard.shared.scripts.insert(sha.to_owned(), body.clone());
    Ok(function)
}

/// EVAL, EVALSHA, EVAL_RO, EVALSHA_RO (`name`), arity checked.
pub async fn eval(shard: &Rc<Shard>, session: &Session, name: &str, args: &[Bytes]) -> Frame {
    let (keys, argv) = match split_keys(args) {
        Ok(split) => split,
        Err(error) => return error,
    };
    let (sha, body) = if name.starts_with("evalsha") {
        let sha = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
        match shard.shared.scripts.body(&sha) {
            Some(body) => (sha, body),
            None => return Frame::error("NOSCRIPT No matching script. Please use EVAL."),
        }
    } else {
        (sha1_hex(&args[1]), args[1].clone())
    };
    let vm = match vm_of(shard) {
        Ok(vm) => vm,
        Err(error) => return error,
    };
    let function = match compiled(&vm, shard, &sha, &body) {
        Ok(function) => function,
        Err(error) => return error,
    };
    let shebang = shebang::parse(&body).unwrap_or_default();
    let flags = shebang.flags;
    let no_writes = flags.contains(FunctionFlags::NO_WRITES);
    if shebang.present
        && !no_writes
        && !flags.contains(FunctionFlags::ALLOW_OOM)
        && out_of_memory(shard).await
    {
        return Frame::error(crate::eviction::OOM);
    }
    let read_only = name.ends_with("_ro") || no_writes;
    if let Some(owner) = shipping_owner(shard, session, &keys, &sha) {
        let (sha, body, keys, argv) = (sha.clone(), body.clone(), keys.clone(), argv.clone());
        let (db, client) = (session.db, session.client_tag());
        let job: ShardJob = Box::new(move |s: &Shard| {
            let Some(here) = s.scripting.shard() else {
                return Frame::error(run::RUN_AGAIN);
            };
            let vm = match vm_of(s) {
                Ok(vm) => vm,
                Err(error) => return error,
            };
            let function = match compiled(&vm, s, &sha, &body) {
                Ok(function) => function,
                Err(error) => return error,
            };
            let call = Call {
                keys,
                argv,
                db,
                client,
                outer: None,
                read_only,
                command: None,
            };
            run::run_shipped(&here, &vm, &eval_target(function, sha), call)
        });
        match shard.run_on_in(owner, None, job).await {
            Frame::Error(text) if text == run::RUN_AGAIN => {}
            reply => return reply,
        }
    }
    let target = eval_target(function, sha);
    let call = Call {
        keys,
        argv,
        db: session.db,
        client: session.client_tag(),
        outer: session.txn_scope,
        read_only,
        command: None,
    };
    run::run(shard, &vm, &target, call).await
}

/// Whether memory is over `maxmemory` (Redis 7.0 refuses a script flagged neither
/// `allow-oom` nor `no-writes` then, before it runs).
pub async fn out_of_memory(shard: &Rc<Shard>) -> bool {
    shard.runtime.borrow().maxmemory > 0
        && super::super::transaction::out_of_memory(shard, &[]).await
}

/// What runs for an EVAL script: its compiled `function`, named by its `sha`.
fn eval_target(function: mlua::Function, sha: String) -> Target {
    Target {
        function,
        label: sha.clone(),
        is_function: false,
        undeclared_key: sha,
    }
}

/// The other shard a script runs on in one hop ([`run::run_shipped`]): the owner of every key
/// it declares, when that is not this shard, the script is not inside an EXEC and is not
/// known to touch keys it does not declare.
pub fn shipping_owner(
    shard: &Shard,
    session: &Session,
    keys: &[Bytes],
    undeclared_key: &str,
) -> Option<usize> {
    if session.txn_scope.is_some() {
        return None;
    }
    let owner = shard.owner_of(keys.first()?);
    let one_owner = keys.iter().all(|key| shard.owner_of(key) == owner);
    (one_owner && owner != shard.id && !shard.shared.scripts.touches_undeclared(undeclared_key))
        .then_some(owner)
}

/// The subcommand of a container (`args[1]`), arity checked as Redis checks it: `Err` with
/// Redis's error for an unknown subcommand or a wrong argument count.
pub fn subcommand(container: &str, args: &[Bytes]) -> Result<&'static str, Frame> {
    let Some(spec) = subcommands::lookup(container, &args[1]) else {
        return Err(Frame::error(format!(
            "ERR unknown subcommand '{}'. Try {} HELP.",
            String::from_utf8_lossy(&args[1]),
            container.to_ascii_uppercase()
        )));
    };
    let argc = args.len() as i64;
    let arity = i64::from(spec.arity);
    if (arity >= 0 && argc != arity) || (arity < 0 && argc < -arity) {
        return Err(Frame::error(format!(
            "ERR wrong number of arguments for '{container}|{}' command",
            spec.name
        )));
    }
    Ok(spec.name)
}

/// `SCRIPT <subcommand> …`.
pub async fn script(shard: &Rc<Shard>, args: &[Bytes]) -> Frame {
    let sub = match subcommand("script", args) {
        Ok(sub) => sub,
        Err(error) => return error,
    };
    let scripts = &shard.shared.scripts;
    match sub {
        "load" => {
            let sha = sha1_hex(&args[2]);
            let vm = match vm_of(shard) {
                Ok(vm) => vm,
                Err(error) => return error,
            };
            match compiled(&vm, shard, &sha, &args[2]) {
                Ok(_) => Frame::Bulk(Bytes::from(sha)),
                Err(error) => error,
            }
        }
        "exists" => Frame::Array(
            args[2..]
                .iter()
                .map(|sha| {
                    let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
                    Frame::Integer(i64::from(scripts.exists(&sha)))
                })
                .collect(),
        ),
        "flush" => match &args[2..] {
            [] => {
                scripts.flush();
                Frame::ok()
            }
            [mode] if mode.eq_ignore_ascii_case(b"sync") || mode.eq_ignore_ascii_case(b"async") => {
                scripts.flush();
                Frame::ok()
            }
            _ => Frame::error("ERR SCRIPT FLUSH only support SYNC|ASYNC option"),
        },
        "kill" => kill_reply(scripts.busy.kill(false), false),
        "debug" if args[2].eq_ignore_ascii_case(b"no") => Frame::ok(),
        "debug" => Frame::error(
            "ERR SCRIPT DEBUG YES|SYNC is not supported: shardline has no Lua debugger",
        ),
        _ => help(),
    }
}

fn help() -> Frame {
    let lines = [
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DEBUG (YES|SYNC|NO)",
        "    Set the debug mode for subsequent scripts executed.",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the scripts cache.",
        "    * SYNC: Synchronously flush the scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
        "HELP",
        "    Prints this help.",
    ];
    super::object::help(&lines)
}
