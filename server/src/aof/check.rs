//! `shardline check-aof [--fix] FILE` (as Redis 7's `redis-check-aof`): walks a log with the
//! replay's own decoder, prints what it found and, with `--fix`, truncates the file at the
//! first bad record. Runs outside the server, with plain blocking file I/O.

use std::path::Path;

use super::replay::check;

/// Checks `path`; with `fix`, truncates it at the first bad record.
///
/// Output (stdout) as redis-check-aof: `AOF analyzed: filename=…, size=…, ok_up_to=…,
/// diff=…`, then the fault with its offset if any. Errors: the file cannot be read or
/// truncated, or it is not valid and `fix` is off (exit status 1).
pub fn run(path: &Path, fix: bool) -> Result<(), String> {
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
