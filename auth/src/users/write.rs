//! Adding or replacing one user in a users file, atomically.

use std::io::Write;
use std::path::Path;

use super::UsersFileError;
use crate::sha512_crypt::hash_password;

/// Sets `user`'s password in the users file at `path`, creating the file if needed.
///
/// Hashes `password` with a random salt and `rounds` (see [`hash_password`]). Replaces the
/// user's existing line in place, or appends one; every other line, comment and blank line
/// is kept. Atomic: writes a temporary file (mode 0600) in the same directory, fsyncs it,
/// renames it over `path`, then fsyncs the directory — a crash leaves the old or the new file.
///
/// # Errors
/// [`UsersFileError::BadUserName`] if `user` is empty or has `:`, whitespace or a leading `#`;
/// [`UsersFileError::Io`] on any read, write, sync or rename failure.
pub fn set_user_password(
    path: &Path,
    user: &str,
    password: &[u8],
    rounds: u32,
) -> Result<(), UsersFileError> {
    if user.is_empty()
        || user.contains(':')
        || user.starts_with('#')
        || user.chars().any(char::is_whitespace)
    {
        return Err(UsersFileError::BadUserName(user.to_string()));
    }
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| UsersFileError::Io { path: p, source }
    };
    let old = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io(path)(e)),
    };
    let new_line = format!("{user}:{}", hash_password(password, rounds));
    let mut out = String::with_capacity(old.len() + new_line.len() + 1);
    let mut replaced = false;
    for line in old.lines() {
        let is_user = line
            .trim_start()
            .split_once(':')
            .is_some_and(|(name, _)| name == user);
        if is_user && !replaced {
            out.push_str(&new_line);
            replaced = true;
        } else if !is_user {
            out.push_str(line);
        } else {
            continue; // a later duplicate of the same user: drop it
        }
        out.push('\n');
    }
    if !replaced {
        out.push_str(&new_line);
        out.push('\n');
    }

    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // NamedTempFile creates the file with mode 0600.
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io(dir))?;
    tmp.write_all(out.as_bytes()).map_err(io(tmp.path()))?;
    tmp.as_file().sync_all().map_err(io(path))?;
    tmp.persist(path).map_err(|e| io(path)(e.error))?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))?;
    Ok(())
}
