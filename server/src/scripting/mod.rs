//! Lua scripting, as Redis 7.0 has it: EVAL and EVALSHA (and their `_RO` forms), SCRIPT, and
//! functions (FUNCTION, FCALL), in Lua 5.1 with Redis's sandbox and libraries.
//!
//! - **Where a script runs.** On its connection's shard, in that shard's VM ([`vm`]); the
//!   bodies are cached process-wide by SHA1 ([`Scripts`]), so a script loaded on any shard
//!   runs by SHA from every other, and each shard compiles it once.
//! - **Atomic across shards.** Before it starts, a script takes the gates ([`crate::txn`]) of
//!   its own shard and of the owner shards of its declared KEYS, the same gates MULTI/EXEC
//!   takes: no other client's command runs on those shards until it ends. A `redis.call` on a
//!   key of another held shard hops there inside the script's transaction ([`exec`]). A key it
//!   did not declare, on a shard it does not hold, makes it start again holding every shard,
//!   as long as it has written nothing ([`run`]); its SHA is then remembered, and it holds
//!   every shard from the start on later runs.
//! - **Long scripts.** A count hook ([`hook`]) yields the script to the reactor whenever the
//!   shard's task quota is used up, so the shard's other connections keep being served (their
//!   commands on the held shards wait; after `busy-reply-threshold` every client gets `-BUSY`,
//!   as from Redis ([`busy`])), and stops it on SCRIPT KILL / FUNCTION KILL.
//! - **Durability.** A script's writes go to the logs of the shards they touch as the
//!   commands it ran, wrapped in MULTI/EXEC per shard when it ran several there, so a replay
//!   applies all of them or none; its reply waits for them as a command's would.

pub mod api;
pub mod busy;
pub mod call;
pub mod context;
pub mod convert;
pub mod exec;
pub mod functions;
pub mod hook;
pub mod library_store;
pub mod libs;
pub mod run;
pub mod shebang;
pub mod vm;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

use bytes::Bytes;

/// The process-wide script state: the bodies of EVAL scripts by SHA1, the scripts known to
/// touch undeclared keys, and the running scripts ([`busy::Busy`]).
pub struct Scripts {
    bodies: RwLock<HashMap<String, Bytes>>,
    /// Bumped by SCRIPT FLUSH: shards drop what they compiled before.
    epoch: AtomicU64,
    /// SHAs of scripts that touched a key on a shard they did not lock: they lock every
    /// shard.
    undeclared: RwLock<HashSet<String>>,
    /// Running scripts, for `-BUSY` and SCRIPT KILL.
    pub busy: busy::Busy,
    /// The function libraries (FUNCTION LOAD …), kept in [`library_store::FILE_NAME`].
    pub functions: RwLock<functions::Libraries>,
}

impl Scripts {
    /// The state of a server of `shards` shards starting with function `libraries`.
    pub fn new(shards: usize, libraries: functions::Libraries) -> Self {
        Self {
            bodies: RwLock::new(HashMap::new()),
            epoch: AtomicU64::new(0),
            undeclared: RwLock::new(HashSet::new()),
            busy: busy::Busy::new(shards),
            functions: RwLock::new(libraries),
        }
    }

    /// The body of the script with SHA1 `sha` (40 lowercase hex digits), if cached.
    pub fn body(&self, sha: &str) -> Option<Bytes> {
        self.bodies.read().ok()?.get(sha).cloned()
    }

    /// Caches `body` under `sha`.
    pub fn insert(&self, sha: String, body: Bytes) {
        if let Ok(mut bodies) = self.bodies.write() {
            bodies.entry(sha).or_insert(body);
        }
    }

    /// Whether a script with SHA1 `sha` is cached.
    pub fn exists(&self, sha: &str) -> bool {
        self.bodies.read().is_ok_and(|b| b.contains_key(sha))
    }

    /// SCRIPT FLUSH: forgets every script.
    pub fn flush(&self) {
        if let Ok(mut bodies) = self.bodies.write() {
            bodies.clear();
        }
        if let Ok(mut undeclared) = self.undeclared.write() {
            undeclared.clear();
        }
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// The number of SCRIPT FLUSHes so far.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Number of cached scripts and their total body size in bytes (INFO `number_of_cached_scripts`,
    /// `used_memory_scripts_eval`).
    pub fn stats(&self) -> (usize, usize) {
        self.bodies
            .read()
            .map(|b| (b.len(), b.values().map(Bytes::len).sum()))
            .unwrap_or((0, 0))
    }

    /// Whether the EVAL, EVALSHA or FCALL `args` may write: unless its script's shebang or its
    /// function is flagged `no-writes` (an unknown script or function: it may).
    pub fn may_write(&self, args: &[Bytes]) -> bool {
        let Some(name) = args.first() else {
            return true;
        };
        let no_writes = functions::FunctionFlags::NO_WRITES;
        if name.eq_ignore_ascii_case(b"fcall") {
            return !args.get(1).is_some_and(|f| {
                self.functions.read().is_ok_and(|libraries| {
                    libraries
                        .function(f)
                        .is_some_and(|(_, info)| info.flags.contains(no_writes))
                })
            });
        }
        let body = if name.eq_ignore_ascii_case(b"evalsha") {
            args.get(1)
                .and_then(|sha| self.body(&String::from_utf8_lossy(sha).to_ascii_lowercase()))
        } else {
            args.get(1).cloned()
        };
        !body.is_some_and(|body| shebang::parse(&body).is_ok_and(|s| s.flags.contains(no_writes)))
    }

    /// Whether the script `sha` is known to touch keys it does not declare.
    pub fn touches_undeclared(&self, sha: &str) -> bool {
        self.undeclared.read().is_ok_and(|u| u.contains(sha))
    }

    /// Remembers that the script `sha` touches keys it does not declare.
    pub fn mark_undeclared(&self, sha: &str) {
        if let Ok(mut undeclared) = self.undeclared.write() {
            undeclared.insert(sha.to_owned());
        }
    }
}

/// One shard's Lua VM, made on first use.
#[derive(Default)]
pub struct ShardScripting {
    me: RefCell<std::rc::Weak<crate::shard::Shard>>,
    eval: RefCell<Option<Rc<vm::Vm>>>,
    /// The shard's VM for functions and their callbacks.
    pub functions: library_store::ShardLibraries,
}

impl ShardScripting {
    /// Records the shard this belongs to (a script shipped to it runs with it).
    pub fn set_shard(&self, shard: &Rc<crate::shard::Shard>) {
        *self.me.borrow_mut() = Rc::downgrade(shard);
    }

    /// The shard this belongs to, while it runs.
    pub fn shard(&self) -> Option<Rc<crate::shard::Shard>> {
        self.me.borrow().upgrade()
    }

    /// The shard's VM for EVAL scripts as of SCRIPT FLUSH number `epoch`, made now if needed,
    /// allowed `memory_limit` bytes (`--script-memory-limit`; 0 = no limit).
    ///
    /// # Errors
    /// The Lua error that stopped the VM from being built.
    pub fn eval_vm(&self, memory_limit: usize, epoch: u64) -> mlua::Result<Rc<vm::Vm>> {
        if let Some(vm) = self
            .eval
            .borrow()
            .as_ref()
            .filter(|vm| vm.epoch.get() == epoch)
        {
            return Ok(vm.clone());
        }
        // First use, or SCRIPT FLUSH since: a new VM, as Redis resets its Lua VM.
        let vm = Rc::new(vm::Vm::new()?);
        vm.epoch.set(epoch);
        if memory_limit > 0 {
            vm.lua.set_memory_limit(memory_limit)?;
        }
        *self.eval.borrow_mut() = Some(vm.clone());
        Ok(vm)
    }

    /// Memory the shard's EVAL VM uses, in bytes (INFO `used_memory_lua`).
    pub fn memory_used(&self) -> usize {
        self.eval
            .borrow()
            .as_ref()
            .map_or(0, |vm| vm.lua.used_memory())
    }
}
