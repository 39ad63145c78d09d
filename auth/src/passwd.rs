//! `shardline passwd USER [--users PATH] [--rounds N]`: set a user's password.

use std::io::{BufRead, IsTerminal};
use std::path::Path;

use zeroize::Zeroizing;

use crate::users::{set_user_password, UsersFileError};

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
    /// Writing the users file failed.
    #[error(transparent)]
    Users(#[from] UsersFileError),
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

/// Sets `user`'s password in the users file at `users_path` (created if missing), hashed
/// with `rounds` SHA-512-crypt rounds (5000 is written implicitly).
///
/// The password comes from the terminal without echo, asked twice, when stdin is a tty;
/// otherwise it is one line of stdin (trailing newline stripped), e.g.
/// `echo secret | shardline passwd alice`. See [`set_user_password`] for the atomic write.
///
/// # Errors
/// [`PasswdError`] for a read failure, mismatch, empty password, a password longer than
/// `max_password_bytes` (the server's `--max-password-bytes`) or a users-file failure.
pub fn run_passwd(
    user: &str,
    users_path: &Path,
    rounds: u32,
    max_password_bytes: usize,
) -> Result<(), PasswdError> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
