//! Adding or replacing one user in a users file, atomically.

use std::fs::{File, Metadata, Permissions};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use super::{UsersFileError, DEFAULT_USER, NOPASS};
use crate::sha512_crypt::hash_password;

/// Makes the default user need no password: its line becomes `default:nopass` (see
/// [`NOPASS`]), written as [`set_user_password`] writes (atomic, owner and mode kept, the
/// other lines untouched, the file created with mode 0600 if missing).
///
/// # Errors
/// As [`set_user_password`].
pub fn set_default_nopass(path: &Path) -> Result<(), UsersFileError> {
    set_user_line(path, DEFAULT_USER, || NOPASS.to_string())
}

/// Sets `user`'s password in the users file at `path`, creating the file if needed. A
/// symlink is followed: the file it points to is the one rewritten.
///
/// Hashes `password` with a random salt and `rounds` (see [`hash_password`]). Replaces the
/// user's existing line in place, or appends one; every other line, comment and blank line
/// is kept. Atomic: writes a temporary file in the same directory, fsyncs it, renames it over
/// `path`, then fsyncs the directory — a crash leaves the old or the new file. The new file
/// keeps the old one's owner, group and permission bits (`fchown`/`fchmod` on the temporary
/// file before it is written), so root editing a service user's file leaves it readable by
/// the service; a file created here has mode 0600 and the caller's owner.
///
/// # Errors
/// [`UsersFileError::BadUserName`] if `user` is empty or has `:`, whitespace or a leading `#`;
/// [`UsersFileError::NotAFile`] if `path` is (or points to) something other than a regular
/// file;
/// [`UsersFileError::KeepOwner`] if the old owner or group cannot be given to the new file
/// (nothing is written); [`UsersFileError::Io`] on any read, write, sync or rename failure.
pub fn set_user_password(
    path: &Path,
    user: &str,
    password: &[u8],
    rounds: u32,
) -> Result<(), UsersFileError> {
    set_user_line(path, user, || hash_password(password, rounds))
}

/// Replaces (or appends) `user`'s line with `user:` followed by what `credential` makes,
/// atomically; see [`set_user_password`]. `credential` runs once the user name is checked.
fn set_user_line(
    path: &Path,
    user: &str,
    credential: impl FnOnce() -> String,
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
    // A symlinked users file (config management, a mounted secret) is edited where it
    // points; a path that is not a regular file (a device, a FIFO) is refused, not replaced.
    let target = match std::fs::canonicalize(path) {
        Ok(target) => target,
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                && std::fs::symlink_metadata(path).is_err() =>
        {
            path.to_path_buf()
        }
        Err(e) => return Err(io(path)(e)),
    };
    let path = target.as_path();
    let (old, old_meta) = match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => {
            return Err(UsersFileError::NotAFile {
                path: path.to_path_buf(),
            })
        }
        Ok(meta) => {
            let mut text = String::new();
            File::open(path)
                .and_then(|mut file| file.read_to_string(&mut text))
                .map_err(io(path))?;
            (text, Some(meta))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (String::new(), None),
        Err(e) => return Err(io(path)(e)),
    };
    let new_line = format!("{user}:{}", credential());
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
    // tempfile's errors name the temporary file's random path: say first if the directory
    // itself is missing, which is what the user must fix.
    std::fs::metadata(dir).map_err(io(dir))?;
    // NamedTempFile creates the file with mode 0600.
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io(dir))?;
    if let Some(old) = old_meta {
        keep_owner_and_mode(tmp.as_file(), &old, path)?;
    }
    tmp.write_all(out.as_bytes()).map_err(io(tmp.path()))?;
    tmp.as_file().sync_all().map_err(io(path))?;
    tmp.persist(path).map_err(|e| io(path)(e.error))?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))?;
    Ok(())
}

/// Gives `tmp` the owner, group and permission bits (`st_mode & 0o7777`) of `old`, the users
/// file at `path` it will replace. The owner and group are changed only when they differ from
/// the caller's defaults, so a user editing their own file needs no privilege.
fn keep_owner_and_mode(tmp: &File, old: &Metadata, path: &Path) -> Result<(), UsersFileError> {
    let io = |source| UsersFileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let current = tmp.metadata().map_err(io)?;
    if (current.uid(), current.gid()) != (old.uid(), old.gid()) {
        std::os::unix::fs::fchown(tmp, Some(old.uid()), Some(old.gid())).map_err(|source| {
            UsersFileError::KeepOwner {
                path: path.to_path_buf(),
                uid: old.uid(),
                gid: old.gid(),
                source,
            }
        })?;
    }
    // After fchown, which may clear set-id bits.
    tmp.set_permissions(Permissions::from_mode(old.mode() & 0o7777))
        .map_err(io)
}
