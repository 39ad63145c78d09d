//! `shardline passwd USER [--users PATH] [--rounds N]`: set a user's password.

use std::io::{BufRead, IsTerminal};
use std::path::Path;

use zeroize::Zeroizing;

use crate::sha512_crypt::{ROUNDS_DEFAULT, ROUNDS_MAX, ROUNDS_MIN};
use crate::users::{
    set_default_nopass, set_user_password, LineError, Users, UsersFileError, UsersLimits,
    DEFAULT_USER,
};

/// Why `shardline passwd` failed.
#[derive(Debug, thiserror::Error)]
pub enum PasswdError {
    /// Reading the password failed (terminal or stdin).
    #[error("reading the password: {0}")]
    Read(#[source] std::io::Error),
    /// The two entries typed at the terminal differ.
    #[error("passwords do not match")]
    Mismatch,
    /// The password is empty.
    #[error("empty password")]
    Empty,
    /// The password is longer than the server accepts, so that user could never log in.
    #[error(
        "the password is {len} bytes; the server refuses passwords longer than {max} bytes \
         (--max-password-bytes)"
    )]
    TooLong {
        /// Its length in bytes.
        len: usize,
        /// The limit it was checked against.
        max: usize,
    },
    /// The hash would cost more rounds than the server's `--max-hash-rounds`: the server
    /// would refuse the whole file at load, with this same message
    /// ([`LineError::TooManyRounds`]).
    #[error("{0}")]
    TooManyRounds(LineError),
    /// Writing the users file failed.
    #[error(transparent)]
    Users(#[from] UsersFileError),
}

/// Refuses to edit a users file the server would refuse to load (a bad line, a duplicate, a
/// hash above `max_hash_rounds`), with the server's message: adding a user to it would not
/// make that user able to log in. A missing or user-less file is fine (passwd creates or
/// fills it).
///
/// # Errors
/// [`PasswdError::Users`] with the load error.
fn check_users_file(path: &Path, max_hash_rounds: u32) -> Result<(), PasswdError> {
    if !path.is_file() {
        return Ok(());
    }
    match Users::load(path, &UsersLimits { max_hash_rounds }) {
        Ok(_) | Err(UsersFileError::NoUsers { .. }) => Ok(()),
        Err(err) => Err(err.into()),
    }
}

/// Reads one line from `input` as the password: bytes up to the first newline, with a
/// trailing `\n` or `\r\n` removed. Any other bytes (including NUL and 0xFF) are kept.
///
/// # Errors
/// [`PasswdError::Read`] on I/O failure, [`PasswdError::Empty`] for an empty line or input.
pub fn read_password_line(mut input: impl BufRead) -> Result<Zeroizing<Vec<u8>>, PasswdError> {
    let mut line = Zeroizing::new(Vec::new());
    input
        .read_until(b'\n', &mut line)
        .map_err(PasswdError::Read)?;
    if line.last() == Some(&b'\n') {
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
    }
    if line.is_empty() {
        return Err(PasswdError::Empty);
    }
    Ok(line)
}

/// Asks twice at the terminal without echo (`rpassword`); both entries must match.
fn read_password_tty(user: &str) -> Result<Zeroizing<Vec<u8>>, PasswdError> {
    let first = Zeroizing::new(
        rpassword::prompt_password(format!("New password for {user}: "))
            .map_err(PasswdError::Read)?,
    );
    let second = Zeroizing::new(
        rpassword::prompt_password("Retype new password: ").map_err(PasswdError::Read)?,
    );
    if first != second {
        return Err(PasswdError::Mismatch);
    }
    if first.is_empty() {
        return Err(PasswdError::Empty);
    }
    Ok(Zeroizing::new(first.as_bytes().to_vec()))
}

/// The server's limits that `shardline passwd` checks before writing, so that it never
/// writes a line the server would refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PasswdLimits {
    /// The server's `--max-password-bytes`.
    pub max_password_bytes: usize,
    /// The server's `--max-hash-rounds`.
    pub max_hash_rounds: u32,
}

/// Checks that a hash made with `rounds` (clamped to SHA-512-crypt's 1000..=999,999,999 as
/// the hash will be) is within `max_hash_rounds`.
///
/// # Errors
/// [`PasswdError::TooManyRounds`], whose text is the server's load-time refusal.
pub fn check_rounds(rounds: u32, max_hash_rounds: u32) -> Result<(), PasswdError> {
    let rounds = rounds.clamp(ROUNDS_MIN, ROUNDS_MAX);
    if rounds > max_hash_rounds {
        return Err(PasswdError::TooManyRounds(LineError::TooManyRounds {
            rounds,
            max: max_hash_rounds,
        }));
    }
    Ok(())
}

/// Sets `user`'s password in the users file at `users_path` (created if missing), hashed
/// with `rounds` SHA-512-crypt rounds (5000 is written implicitly).
///
/// The rounds are checked against `limits` first (before any password is asked). The
/// password comes from the terminal without echo, asked twice, when stdin is a tty;
/// otherwise it is one line of stdin (trailing newline stripped), e.g.
/// `echo secret | shardline passwd alice`. See [`set_user_password`] for the atomic write
/// that keeps the file's owner and mode.
///
/// # Errors
/// [`PasswdError`] for rounds above `limits.max_hash_rounds`, a read failure, mismatch, empty
/// password, a password longer than `limits.max_password_bytes` or a users-file failure.
pub fn run_passwd(
    user: &str,
    users_path: &Path,
    rounds: u32,
    limits: PasswdLimits,
) -> Result<(), PasswdError> {
    check_rounds(rounds, limits.max_hash_rounds)?;
    check_users_file(users_path, limits.max_hash_rounds)?;
    let max_password_bytes = limits.max_password_bytes;
    let stdin = std::io::stdin();
    let password = if stdin.is_terminal() {
        read_password_tty(user)?
    } else {
        read_password_line(stdin.lock())?
    };
    if password.len() > max_password_bytes {
        return Err(PasswdError::TooLong {
            len: password.len(),
            max: max_password_bytes,
        });
    }
    set_user_password(users_path, user, &password, rounds)?;
    Ok(())
}

/// `CONFIG SET requirepass <password>` (Redis 7.0 `ACLUpdateDefaultUserPassword`): the default
/// user's password becomes `password` (its line in the users file at `users_path` is replaced
/// by a SHA-512-crypt hash of it with the default 5000 rounds, or added), or, for an empty
/// `password`, the default user needs none (`default:nopass`). Written as
/// `shardline passwd` writes (atomic, owner and mode kept), then loaded back as a SIGHUP
/// reload loads it; the loaded users are returned for the caller to install.
///
/// Blocking (a hash, file I/O, fsyncs): run it off a reactor thread.
///
/// # Errors
/// [`PasswdError::TooLong`] above `limits.max_password_bytes`; [`PasswdError::TooManyRounds`]
/// when `limits.max_hash_rounds` is below 5000; [`PasswdError::Users`] when the current file
/// does not load (nothing is written) or writing or reloading it fails.
pub fn set_requirepass(
    users_path: &Path,
    password: &[u8],
    limits: PasswdLimits,
) -> Result<Users, PasswdError> {
    if password.len() > limits.max_password_bytes {
        return Err(PasswdError::TooLong {
            len: password.len(),
            max: limits.max_password_bytes,
        });
    }
    if password.is_empty() {
        check_users_file(users_path, limits.max_hash_rounds)?;
        set_default_nopass(users_path)?;
    } else {
        check_rounds(ROUNDS_DEFAULT, limits.max_hash_rounds)?;
        check_users_file(users_path, limits.max_hash_rounds)?;
        set_user_password(users_path, DEFAULT_USER, password, ROUNDS_DEFAULT)?;
    }
    Ok(Users::load(
        users_path,
        &UsersLimits {
            max_hash_rounds: limits.max_hash_rounds,
        },
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_are_checked_as_the_hash_will_have_them() {
        assert!(check_rounds(1_000_000, 1_000_000).is_ok());
        assert!(check_rounds(10, 1000).is_ok(), "clamped up to 1000");
        assert_eq!(
            check_rounds(1_000_001, 1_000_000)
                .expect_err("too many")
                .to_string(),
            "hash uses 1000001 rounds, more than the maximum 1000000 (--max-hash-rounds)"
        );
        assert_eq!(
            check_rounds(u32::MAX, 999_999_998)
                .expect_err("too many")
                .to_string(),
            "hash uses 999999999 rounds, more than the maximum 999999998 (--max-hash-rounds)"
        );
    }

    #[test]
    fn requirepass_sets_and_clears_the_default_password_keeping_other_users() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("users");
        std::fs::write(&path, "# kept\nalice:nopass-is-not-a-hash\n").expect("write");
        let limits = PasswdLimits {
            max_password_bytes: 8,
            max_hash_rounds: 1_000_000,
        };
        // A file that does not load is left alone.
        assert!(matches!(
            set_requirepass(&path, b"pw", limits),
            Err(PasswdError::Users(UsersFileError::Line { line: 2, .. }))
        ));
        std::fs::write(&path, "# kept\n").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        let users = set_requirepass(&path, b"secret", limits).expect("set");
        assert!(!users.default_nopass());
        let hash = users.get(b"default").expect("default");
        assert_eq!(hash.rounds(), ROUNDS_DEFAULT);
        assert!(hash.verify(b"secret"));
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.starts_with("# kept\ndefault:$6$"), "{text}");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o640, "mode kept");

        let users = set_requirepass(&path, b"", limits).expect("clear");
        assert!(users.default_nopass());
        assert!(users.get(b"default").is_none());
        assert_eq!(users.len(), 1);
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            "# kept\ndefault:nopass\n"
        );
        assert!(matches!(
            set_requirepass(&path, b"123456789", limits),
            Err(PasswdError::TooLong { len: 9, max: 8 })
        ));
        let low = PasswdLimits {
            max_hash_rounds: 1000,
            ..limits
        };
        assert!(matches!(
            set_requirepass(&path, b"pw", low),
            Err(PasswdError::TooManyRounds(_))
        ));
    }

    #[test]
    fn stdin_line_is_stripped_of_its_newline_only() {
        assert_eq!(
            read_password_line(&b"secret\n"[..]).expect("ok").as_slice(),
            b"secret"
        );
        assert_eq!(
            read_password_line(&b"secret\r\nmore\n"[..])
                .expect("ok")
                .as_slice(),
            b"secret"
        );
        assert_eq!(
            read_password_line(&b" sp ace \xff\0x"[..])
                .expect("ok")
                .as_slice(),
            b" sp ace \xff\0x"
        );
        assert!(matches!(
            read_password_line(&b"\n"[..]),
            Err(PasswdError::Empty)
        ));
        assert!(matches!(
            read_password_line(&b""[..]),
            Err(PasswdError::Empty)
        ));
    }
}
