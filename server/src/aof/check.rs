//! `shardline check-aof [--fix] FILE` (as Redis 7's `redis-check-aof`): walks a log with the
//! replay's own decoder, prints what it found and, with `--fix`, truncates the file at the
//! first bad record. Given a shard's manifest (`shard-<N>.manifest`), it checks every file the
//! manifest names, in order; `--fix` then truncates only the last one. Runs outside the
//! server, with plain blocking file I/O.

use std::path::Path;

use super::manifest::Manifest;
use super::replay::check;

/// Checks `path` (a log file, or a manifest: see the module doc); with `fix`, truncates the
/// (last) file at its first bad record.
///
/// Output (stdout) as redis-check-aof: `AOF analyzed: filename=…, size=…, ok_up_to=…,
/// diff=…` per file, then the fault with its offset if any. Errors: a file cannot be read or
/// truncated, a manifest is malformed or names a missing file, or a file is not valid and
/// `fix` is off or it is not the manifest's last file (exit status 1).
pub fn run(path: &Path, fix: bool) -> Result<(), String> {
    if path.extension().is_some_and(|ext| ext == "manifest") {
        return run_manifest(path, fix);
    }
    run_file(path, fix)
}

fn run_manifest(path: &Path, fix: bool) -> Result<(), String> {
    let shown = path.display();
    let text =
        std::fs::read_to_string(path).map_err(|err| format!("cannot read {shown}: {err}"))?;
    let manifest = Manifest::parse(&text).map_err(|err| format!("{shown}: {err}"))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let files: Vec<&String> = manifest.base.iter().chain(manifest.incrs.iter()).collect();
    println!("Manifest {shown} names {} file(s)", files.len());
    for (i, name) in files.iter().enumerate() {
        let file = dir.join(name);
        if !file.exists() {
            return Err(format!("{} is missing (named by {shown})", file.display()));
        }
        if i + 1 == files.len() {
            return run_file(&file, fix);
        }
        run_file(&file, false).map_err(|_| {
            format!(
                "AOF {} is not valid and is not the last file of the log: --fix truncates \
                 only the last file (a cut here would drop every file after it); keep a copy \
                 and repair it by hand",
                file.display()
            )
        })?;
    }
    Ok(())
}

fn run_file(path: &Path, fix: bool) -> Result<(), String> {
    let shown = path.display();
    let bytes = std::fs::read(path).map_err(|err| format!("cannot read {shown}: {err}"))?;
    let size = bytes.len() as u64;
    let fault = check(&bytes).err();
    let ok_up_to = fault.as_ref().map_or(size, |f| f.offset);
    println!(
        "AOF analyzed: filename={shown}, size={size}, ok_up_to={ok_up_to}, diff={}",
        size - ok_up_to
    );
    let Some(fault) = fault else {
        println!("AOF {shown} is valid");
        return Ok(());
    };
    println!("{shown}:{}: {}", fault.offset, fault.message);
    if !fix {
        return Err(format!(
            "AOF {shown} is not valid: use --fix to truncate it at offset {} (losing the \
             last {} bytes)",
            fault.offset,
            size - fault.offset
        ));
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|err| format!("cannot open {shown}: {err}"))?;
    file.set_len(fault.offset)
        .and_then(|()| file.sync_all())
        .map_err(|err| format!("cannot truncate {shown}: {err}"))?;
    println!(
        "Successfully truncated AOF {shown} to {} bytes ({} bytes removed)",
        fault.offset,
        size - fault.offset
    );
    Ok(())
}
