//! The set of loaded function libraries, shared by all shards (Redis 7.0 `functions.c`:
//! `functionsLibCtx`, `libraryLink`/`libraryUnlink`, `libraryJoin`).
//!
//! This part holds no Lua values, so it is `Send + Sync` and can sit behind a lock; every
//! shard keeps its own Lua callbacks and rebuilds them (with
//! [`register`](super::library::register)) when [`Libraries::version`] moves.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;

use super::flags::FunctionFlags;
use super::metadata::Metadata;

/// What `FUNCTION LIST` shows of one function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionInfo {
    /// Function name as registered (original case; lookups ignore ASCII case).
    pub name: String,
    /// Flags given with `flags={...}`.
    pub flags: FunctionFlags,
    /// `description=...`; `None` when not given (listed as a null bulk / RESP3 null).
    pub description: Option<Bytes>,
}

/// A validated library ready to be linked: the result of running its code with
/// [`register`](super::library::register). Build it with [`Registration::new`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    /// The whole payload given to `FUNCTION LOAD`, shebang included.
    pub code: Bytes,
    /// Its parsed metadata.
    pub meta: Metadata,
    /// The functions it registered, in registration order.
    pub functions: Vec<FunctionInfo>,
}

impl Registration {
    /// Bundles a payload, its metadata and the functions its code registered.
    pub fn new(code: Bytes, meta: Metadata, functions: Vec<FunctionInfo>) -> Self {
        Registration {
            code,
            meta,
            functions,
        }
    }

    /// The same from [`register`](super::library::register)'s result.
    pub fn from_registered(
        code: Bytes,
        meta: Metadata,
        functions: &[super::library::RegisteredFunction],
    ) -> Self {
        Self::new(code, meta, functions.iter().map(|f| f.info()).collect())
    }
}

/// A loaded library.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibraryInfo {
    /// Library name (case-sensitive).
    pub name: String,
    /// Engine name, `"LUA"`.
    pub engine: &'static str,
    /// The whole payload, as `FUNCTION LIST WITHCODE` prints it and `FUNCTION DUMP` saves it.
    pub code: Bytes,
    /// Its functions, in registration order.
    pub functions: Vec<FunctionInfo>,
}

/// All loaded libraries plus the function-name index.
///
/// Libraries are kept in name order; that is the order of [`Libraries::iter`],
/// [`Libraries::list`] and of the `FUNCTION DUMP` payload (Redis uses its dict order, which is
/// randomized per process, so no order is "the" Redis order).
#[derive(Clone, Debug, Default)]
pub struct Libraries {
    libs: BTreeMap<String, LibraryInfo>,
    /// ASCII-lowercased function name → library name.
    index: HashMap<String, String>,
    version: u64,
}

fn fold(name: &str) -> String {
    name.to_ascii_lowercase()
}

impl Libraries {
    /// An empty set at version 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// A counter that changes on every successful modification (load, delete, flush,
    /// restore). Shards compare it with the version their Lua functions were built from.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The check `FUNCTION LOAD` makes before running any Lua: without `replace`, an existing
    /// library of that name gives `ERR Library '<name>' already exists`.
    pub fn check_load(&self, name: &str, replace: bool) -> Result<(), String> {
        if !replace && self.libs.contains_key(name) {
            return Err(format!("ERR Library '{name}' already exists"));
        }
        Ok(())
    }

    /// Links a registered library, as the end of `FUNCTION LOAD [REPLACE]`; returns its name.
    ///
    /// Errors, leaving the set unchanged:
    /// - `ERR Library '<name>' already exists` (exists and not `replace`)
    /// - `ERR No functions registered`
    /// - `ERR Function <fn> already exists` (a function of another library has that name,
    ///   compared ignoring ASCII case; `<fn>` as spelled in the new library). With `replace`
    ///   the library being replaced does not count.
    pub fn load(&mut self, reg: Registration, replace: bool) -> Result<String, String> {
        let name = reg.meta.name.clone();
        self.check_load(&name, replace)?;
        if reg.functions.is_empty() {
            return Err("ERR No functions registered".to_string());
        }
        for f in &reg.functions {
            if self
                .index
                .get(&fold(&f.name))
                .is_some_and(|owner| *owner != name)
            {
                return Err(format!("ERR Function {} already exists", f.name));
            }
        }
        self.unlink(&name);
        self.link(LibraryInfo {
            name: name.clone(),
            engine: reg.meta.engine,
            code: reg.code,
            functions: reg.functions,
        });
        self.version += 1;
        Ok(name)
    }

    /// `FUNCTION DELETE <name>` (case-sensitive); `ERR Library not found` when absent.
    pub fn delete(&mut self, name: &str) -> Result<(), String> {
        if self.unlink(name).is_none() {
            return Err("ERR Library not found".to_string());
        }
        self.version += 1;
        Ok(())
    }

    /// `FUNCTION FLUSH`: removes every library.
    pub fn flush(&mut self) {
        self.libs.clear();
        self.index.clear();
        self.version += 1;
    }

    /// The libraries `FUNCTION LIST [LIBRARYNAME pattern]` shows, in name order. `matcher` is
    /// called as `matcher(pattern, library_name)` and must match like Redis's
    /// `stringmatchlen(..., nocase=1)`: redis-server 7.0.15 lists `lib1` for `LIB*`.
    pub fn list<'a>(
        &'a self,
        pattern: Option<&'a [u8]>,
        matcher: &'a dyn Fn(&[u8], &[u8]) -> bool,
    ) -> impl Iterator<Item = &'a LibraryInfo> + 'a {
        self.libs
            .values()
            .filter(move |l| pattern.is_none_or(|p| matcher(p, l.name.as_bytes())))
    }

    /// All libraries in name order.
    pub fn iter(&self) -> impl Iterator<Item = &LibraryInfo> {
        self.libs.values()
    }

    /// A library by exact name.
    pub fn library(&self, name: &str) -> Option<&LibraryInfo> {
        self.libs.get(name)
    }

    /// A function by name, ignoring ASCII case as `FCALL` does (`fcall TEST` calls `test`),
    /// with its library.
    pub fn function(&self, name: &[u8]) -> Option<(&LibraryInfo, &FunctionInfo)> {
        let key = String::from_utf8_lossy(name).to_ascii_lowercase();
        let lib = self.libs.get(self.index.get(&key)?)?;
        let f = lib.functions.iter().find(|f| fold(&f.name) == key)?;
        Some((lib, f))
    }

    /// `FUNCTION STATS` `libraries_count`.
    pub fn libraries_count(&self) -> usize {
        self.libs.len()
    }

    /// `FUNCTION STATS` `functions_count`.
    pub fn functions_count(&self) -> usize {
        self.index.len()
    }

    /// Merges `src` into `self` as `FUNCTION RESTORE` APPEND (`replace == false`) or REPLACE
    /// does (Redis `libraryJoin`). Errors leave `self` unchanged:
    /// - `ERR Library <name> already exists` (no quotes, unlike `FUNCTION LOAD`) without
    ///   `replace`
    /// - `ERR Function <fn> already exists` when a function of `src` clashes with one of a
    ///   library of `self` that stays.
    pub fn join(&mut self, src: Libraries, replace: bool) -> Result<(), String> {
        if let Some(name) = src
            .libs
            .keys()
            .find(|n| !replace && self.libs.contains_key(*n))
        {
            return Err(format!("ERR Library {name} already exists"));
        }
        for lib in src.libs.values() {
            for f in &lib.functions {
                if self
                    .index
                    .get(&fold(&f.name))
                    .is_some_and(|owner| !src.libs.contains_key(owner))
                {
                    return Err(format!("ERR Function {} already exists", f.name));
                }
            }
        }
        for (name, lib) in src.libs {
            self.unlink(&name);
            self.link(lib);
        }
        self.version += 1;
        Ok(())
    }

    /// Replaces the whole content with `src` (`FUNCTION RESTORE ... FLUSH`).
    pub fn replace_all(&mut self, src: Libraries) {
        self.libs = src.libs;
        self.index = src.index;
        self.version += 1;
    }

    fn link(&mut self, lib: LibraryInfo) {
        for f in &lib.functions {
            self.index.insert(fold(&f.name), lib.name.clone());
        }
        self.libs.insert(lib.name.clone(), lib);
    }

    fn unlink(&mut self, name: &str) -> Option<LibraryInfo> {
        let lib = self.libs.remove(name)?;
        for f in &lib.functions {
            self.index.remove(&fold(&f.name));
        }
        Some(lib)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(lib: &str, fns: &[&str]) -> Registration {
        let code = format!("#!lua name={lib}\n");
        let meta = Metadata::parse(code.as_bytes()).expect("valid");
        Registration::new(
            Bytes::from(code),
            meta,
            fns.iter()
                .map(|f| FunctionInfo {
                    name: f.to_string(),
                    flags: FunctionFlags::EMPTY,
                    description: None,
                })
                .collect(),
        )
    }

    fn glob_nocase(p: &[u8], s: &[u8]) -> bool {
        // Enough of a glob for the tests: `*` suffix or exact, ignoring case.
        match p.strip_suffix(b"*") {
            Some(prefix) => {
                s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
            }
            None => p.eq_ignore_ascii_case(s),
        }
    }

    #[test]
    fn load_errors_match_redis() {
        // redis-server 7.0.15, `function load` of the same library twice, then of library
        // TEST (a new library: names are case-sensitive) registering `f` again.
        let mut l = Libraries::new();
        assert_eq!(l.load(reg("test", &["f"]), false), Ok("test".to_string()));
        assert_eq!(
            l.load(reg("test", &["f"]), false),
            Err("ERR Library 'test' already exists".to_string())
        );
        assert_eq!(
            l.load(reg("TEST", &["f"]), false),
            Err("ERR Function f already exists".to_string())
        );
        assert_eq!(
            l.load(reg("test2", &["F"]), false),
            Err("ERR Function F already exists".to_string())
        );
        assert_eq!(
            l.load(reg("x", &[]), false),
            Err("ERR No functions registered".to_string())
        );
        assert_eq!(l.version(), 1);
        // REPLACE of the owner may keep or drop the same function names.
        assert_eq!(
            l.load(reg("test", &["F", "g"]), true),
            Ok("test".to_string())
        );
        assert_eq!(l.version(), 2);
        assert_eq!(l.functions_count(), 2);
        let (lib, f) = l.function(b"f").expect("found ignoring case");
        assert_eq!((lib.name.as_str(), f.name.as_str()), ("test", "F"));
        assert!(l.function(b"h").is_none());
    }

    #[test]
    fn delete_flush_stats_and_list() {
        // functions.tcl "function stats": test1{f1,f2} + test2{f3} → 2 libraries, 3 functions;
        // after deleting test1 → 1, 1.
        let mut l = Libraries::new();
        l.load(reg("test1", &["f1", "f2"]), false).expect("load");
        l.load(reg("test2", &["f3"]), false).expect("load");
        assert_eq!((l.libraries_count(), l.functions_count()), (2, 3));
        let names: Vec<_> = l
            .list(Some(b"TEST1*"), &glob_nocase)
            .map(|x| x.name.clone())
            .collect();
        assert_eq!(names, ["test1"]);
        assert_eq!(l.list(None, &glob_nocase).count(), 2);
        assert_eq!(l.delete("TEST1"), Err("ERR Library not found".to_string()));
        l.delete("test1").expect("delete");
        assert_eq!((l.libraries_count(), l.functions_count()), (1, 1));
        assert!(l.function(b"f1").is_none());
        let v = l.version();
        l.flush();
        assert_eq!((l.libraries_count(), l.functions_count()), (0, 0));
        assert!(l.version() > v);
    }

    #[test]
    fn join_like_restore() {
        // functions.tcl "test function restore with function name collision".
        let mut src = Libraries::new();
        src.load(reg("lib1", &["f1", "f2", "f3"]), false)
            .expect("load");
        let mut dst = Libraries::new();
        dst.load(reg("lib1", &["f6"]), false).expect("load");
        dst.load(reg("lib2", &["f4", "f5", "f3"]), false)
            .expect("load");
        let before = dst.version();
        assert_eq!(
            dst.join(src.clone(), false),
            Err("ERR Library lib1 already exists".to_string())
        );
        assert_eq!(
            dst.join(src.clone(), true),
            Err("ERR Function f3 already exists".to_string())
        );
        assert_eq!(dst.version(), before);
        assert_eq!(dst.function(b"f6").map(|x| x.0.name.as_str()), Some("lib1"));
        dst.delete("lib2").expect("delete");
        dst.join(src, true).expect("replace");
        assert!(dst.function(b"f6").is_none());
        assert_eq!(dst.function(b"F3").map(|x| x.0.name.as_str()), Some("lib1"));
        assert_eq!(dst.functions_count(), 3);
    }
}
