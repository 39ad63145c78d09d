//! The function libraries of the server (FUNCTION LOAD …): one set for every shard, kept
//! durable in `<data-dir>/functions.rdb` (a FUNCTION DUMP payload, Redis 7.0's format),
//! and each shard's VM holding their compiled callbacks.
//!
//! Libraries are server-wide while the append-only logs are per shard, so they have a file of
//! their own: every change is written to a new file, fsynced and renamed over the old one
//! before its reply, so a crash keeps either the old set or the new one. At start the file is
//! loaded before any shard serves (a corrupt file stops the start, naming it).

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use bytes::Bytes;
use mlua::Function;

use super::functions::{self, FunctionFlags, Libraries, Metadata, Registration};
use super::vm::Vm;

/// The file the libraries are kept in, under the data directory.
pub const FILE_NAME: &str = "functions.rdb";

/// Where the libraries of a server with data directory `data_dir` are kept.
pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE_NAME)
}

/// Compiles and registers library `code` in a fresh VM, to check it before it is loaded
/// (FUNCTION LOAD, FUNCTION RESTORE, start): its registration, or Redis's error.
pub fn validate(code: &[u8], meta: &Metadata) -> Result<Registration, String> {
    let vm = Vm::new().map_err(|err| format!("ERR cannot start the Lua VM: {err}"))?;
    let registered = functions::register_with_env(&vm.lua, code, meta, &vm.env)?;
    Ok(Registration::from_registered(
        Bytes::copy_from_slice(code),
        meta.clone(),
        &registered,
    ))
}

/// Writes `libraries` to `path`: a new file renamed over the old one, so a crash keeps one
/// whole set. With `fsync` (under `appendfsync always`) the file and the directory are
/// fsynced before this returns; otherwise the OS writes them back within seconds, as the
/// logs' own `everysec` writes.
///
/// # Errors
/// The I/O error, as text for an `ERR` reply.
pub fn save(path: &Path, libraries: &Libraries, fsync: bool) -> Result<(), String> {
    let payload = functions::dump(libraries);
    let temporary = path.with_extension("rdb.tmp");
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(&payload)?;
        if fsync {
            file.sync_all()?;
        }
        std::fs::rename(&temporary, path)?;
        if let Some(dir) = path.parent().filter(|_| fsync) {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    };
    write().map_err(|err| format!("ERR cannot save the function libraries: {err}"))
}

/// The libraries kept at `path` (none when there is no file).
///
/// # Errors
/// What is wrong with the file: unreadable, not a FUNCTION DUMP payload, a library that does
/// not load.
pub fn load(path: &Path) -> Result<Libraries, String> {
    let payload = match std::fs::read(path) {
        Ok(payload) => payload,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Libraries::new()),
        Err(err) => return Err(format!("{}: {err}", path.display())),
    };
    functions::dump::parse(&payload, validate).map_err(|err| format!("{}: {err}", path.display()))
}

/// A function callback compiled in a shard's VM, with its flags.
#[derive(Clone)]
pub struct Compiled {
    /// The callback, called as `f(keys, args)`.
    pub callback: Function,
    /// Its flags (`no-writes` …).
    pub flags: FunctionFlags,
    /// The library it belongs to.
    pub library: String,
}

/// One shard's VM for functions, holding the callbacks of one version of the libraries.
pub struct ShardFunctions {
    version: u64,
    /// The VM.
    pub vm: Rc<Vm>,
    callbacks: HashMap<String, Compiled>,
    /// The code of each library registered in the VM, by name.
    loaded: HashMap<String, Bytes>,
}

/// One shard's functions, rebuilt when the libraries change.
#[derive(Default)]
pub struct ShardLibraries {
    current: RefCell<Option<Rc<ShardFunctions>>>,
}

impl ShardLibraries {
    /// This shard's VM and callbacks for `libraries` (rebuilt when they changed since), and
    /// the function `name` (any case) if it exists.
    ///
    /// # Errors
    /// The VM could not be built, or a library failed to load (it loaded when it was
    /// added, so only for lack of memory).
    pub fn function(
        &self,
        libraries: &Libraries,
        name: &[u8],
        memory_limit: usize,
    ) -> Result<Option<(Rc<ShardFunctions>, Compiled)>, String> {
        let fresh = self
            .current
            .borrow()
            .as_ref()
            .filter(|f| f.version == libraries.version())
            .cloned();
        let functions = match fresh {
            Some(functions) => functions,
            None => {
                let previous = self.current.borrow_mut().take();
                let built = Rc::new(update(previous, libraries, memory_limit)?);
                *self.current.borrow_mut() = Some(built.clone());
                built
            }
        };
        let key = String::from_utf8_lossy(name).to_ascii_lowercase();
        let compiled = functions.callbacks.get(&key).cloned();
        Ok(compiled.map(|c| (functions, c)))
    }

    /// Memory the shard's functions VM uses, in bytes.
    pub fn memory_used(&self) -> usize {
        self.current
            .borrow()
            .as_ref()
            .map_or(0, |f| f.vm.lua.used_memory())
    }
}

/// The shard's functions for `libraries`: `previous` with the libraries that changed
/// registered again and those removed dropped (a library's globals are its own, so the others
/// stay as they are), or a new VM.
fn update(
    previous: Option<Rc<ShardFunctions>>,
    libraries: &Libraries,
    memory_limit: usize,
) -> Result<ShardFunctions, String> {
    let (vm, mut callbacks, mut loaded) = match previous.and_then(|p| Rc::try_unwrap(p).ok()) {
        Some(previous) => (previous.vm, previous.callbacks, previous.loaded),
        None => {
            let vm = Vm::new().map_err(|err| format!("ERR cannot start the Lua VM: {err}"))?;
            if memory_limit > 0 {
                vm.lua
                    .set_memory_limit(memory_limit)
                    .map_err(|err| format!("ERR cannot start the Lua VM: {err}"))?;
            }
            (Rc::new(vm), HashMap::new(), HashMap::new())
        }
    };
    loaded.retain(|name, code| {
        libraries
            .library(name)
            .is_some_and(|library| library.code == *code)
    });
    callbacks.retain(|_, compiled| loaded.contains_key(&compiled.library));
    for library in libraries.iter() {
        if loaded.contains_key(&library.name) {
            continue;
        }
        let meta = Metadata::parse(&library.code)?;
        for function in functions::register_with_env(&vm.lua, &library.code, &meta, &vm.env)? {
            callbacks.insert(
                function.name.to_ascii_lowercase(),
                Compiled {
                    callback: function.callback,
                    flags: function.flags,
                    library: library.name.clone(),
                },
            );
        }
        loaded.insert(library.name.clone(), library.code.clone());
    }
    Ok(ShardFunctions {
        version: libraries.version(),
        vm,
        callbacks,
        loaded,
    })
}
