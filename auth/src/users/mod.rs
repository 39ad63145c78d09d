//! The users file: one `name:$6$…` line per user, `#` comments and blank lines allowed.
//!
//! The user `default` alone may instead have the line `default:nopass` ([`NOPASS`]), which
//! `CONFIG SET requirepass ""` writes (Redis's `nopass` default user): every new connection
//! is then logged in as `default` without AUTH, and `AUTH default <anything>` succeeds.
//!
//! Hashes written by `mkpasswd -m sha-512`, `openssl passwd -6` or [`crate::sha512_crypt::hash_password`]
//! are accepted unmodified. Every line is checked at load time — malformed lines, duplicate
//! names and hashes costing more than [`UsersLimits::max_hash_rounds`] refuse the whole file
//! with file, line number and reason — so a login never pays for an unexpectedly costly hash.

mod write;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rand::RngCore;

use crate::sha512_crypt::{
    random_salt, CryptDigest, HashFormatError, HashSetting, PasswordHash, ROUNDS_DEFAULT,
};

pub use write::{set_default_nopass, set_user_password};

/// The user whose `nopass` line ([`NOPASS`]) is accepted: Redis's default user, the one a
/// new connection is logged in as when it needs no password.
pub const DEFAULT_USER: &str = "default";

/// What stands in place of the hash on the line `default:nopass`: the default user needs no
/// password (Redis's `nopass` flag). Refused for any other user.
pub const NOPASS: &str = "nopass";

/// Limits applied while loading a users file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsersLimits {
    /// Largest `rounds=` accepted (default 1,000,000, `--max-hash-rounds`); a hash above it
    /// would cost seconds per login and is refused at load instead.
    pub max_hash_rounds: u32,
}

impl Default for UsersLimits {
    fn default() -> Self {
        UsersLimits {
            max_hash_rounds: 1_000_000,
        }
    }
}

/// Why one line of a users file was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// No `:` between user name and hash.
    #[error("expected name:$6$hash")]
    MissingColon,
    /// The name before `:` is empty or contains whitespace.
    #[error("user name is empty or contains whitespace")]
    BadName,
    /// The hash is not valid SHA-512-crypt.
    #[error("{0}")]
    BadHash(#[from] HashFormatError),
    /// The hash's round count is above the configured maximum.
    #[error("hash uses {rounds} rounds, more than the maximum {max} (--max-hash-rounds)")]
    TooManyRounds {
        /// Rounds in the hash.
        rounds: u32,
        /// The configured limit.
        max: u32,
    },
    /// `nopass` on a line of a user other than [`DEFAULT_USER`].
    #[error("only the user 'default' may be 'nopass'")]
    NopassNotDefault,
    /// The user name already appeared on an earlier line.
    #[error("duplicate user, first defined on line {first_line}")]
    Duplicate {
        /// 1-based line of the first definition.
        first_line: usize,
    },
}

/// Errors reading or writing a users file.
#[derive(Debug, thiserror::Error)]
pub enum UsersFileError {
    /// The file could not be read, written, synced or renamed.
    #[error("{path}: {source}")]
    Io {
        /// The users file (or its directory).
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A line was refused.
    #[error("{path}:{line}: {reason}")]
    Line {
        /// The users file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: LineError,
    },
    /// The file names no user (only blank or comment lines): nobody could log in, so it is
    /// refused at start and on reload (a reload keeps the old users).
    #[error(
        "{path}: no users (only blank or comment lines); add one with `shardline passwd USER`"
    )]
    NoUsers {
        /// The users file.
        path: PathBuf,
    },
    /// The users-file path is a device, a FIFO, a directory or another non-regular file.
    #[error("{path}: not a regular file; a users file must be one, and it is not replaced")]
    NotAFile {
        /// The path (after following symlinks).
        path: PathBuf,
    },
    /// [`set_user_password`] could not give the new file the old one's owner and group
    /// (e.g. not root and not a member of the group); nothing was written.
    #[error(
        "{path}: cannot keep its owner {uid}:{gid} on the rewritten file ({source}); run \
         shardline passwd as root or as the file's owner"
    )]
    KeepOwner {
        /// The users file.
        path: PathBuf,
        /// Its owner's user id.
        uid: u32,
        /// Its group id.
        gid: u32,
        /// The fchown(2) error.
        source: std::io::Error,
    },
    /// The user name given to [`set_user_password`] is empty or contains `:`, whitespace or `#`.
    #[error("invalid user name {0:?}")]
    BadUserName(String),
}

/// A non-fatal finding while loading (also logged with `tracing::warn!`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsersWarning {
    /// Others may read or write the file, or its group may write it (mode shown in octal):
    /// hashes can be attacked offline, or users added. A group-readable file (0640, the
    /// service's group) is the usual way to give a service user the file and is not warned
    /// about.
    ReadableByOthers {
        /// The users file.
        path: PathBuf,
        /// Permission bits (`st_mode & 0o777`).
        mode: u32,
    },
}

static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);

/// A loaded users file: user name (bytes) → password hash.
#[derive(Debug)]
pub struct Users {
    by_name: HashMap<Vec<u8>, PasswordHash>,
    /// The file had `default:nopass`.
    default_nopass: bool,
    generation: u64,
    dummy: PasswordHash,
    warnings: Vec<UsersWarning>,
}

/// What one line gives its user.
enum Credential {
    Hash(PasswordHash),
    NoPass,
}

/// Splits and checks one non-comment line.
fn parse_line(line: &str, limits: &UsersLimits) -> Result<(Vec<u8>, Credential), LineError> {
    let (name, hash) = line.split_once(':').ok_or(LineError::MissingColon)?;
    if name.is_empty() || name.chars().any(char::is_whitespace) {
        return Err(LineError::BadName);
    }
    if hash.trim_end() == NOPASS {
        if name != DEFAULT_USER {
            return Err(LineError::NopassNotDefault);
        }
        return Ok((name.as_bytes().to_vec(), Credential::NoPass));
    }
    let hash = PasswordHash::parse(hash.trim_end())?;
    if hash.rounds() > limits.max_hash_rounds {
        return Err(LineError::TooManyRounds {
            rounds: hash.rounds(),
            max: limits.max_hash_rounds,
        });
    }
    Ok((name.as_bytes().to_vec(), Credential::Hash(hash)))
}

/// A hash with random salt and random digest at `rounds`: verifying any password against it
/// costs the same as a real hash of that cost, and nothing matches it.
fn make_dummy(rounds: u32) -> PasswordHash {
    let mut digest = [0u8; 64];
    rand::thread_rng().fill_bytes(&mut digest);
    let setting = HashSetting::new(rounds, &random_salt())
        .unwrap_or_else(|_| unreachable!("random_salt uses the crypt alphabet"));
    PasswordHash::new(setting, CryptDigest::from_bytes(digest))
}

impl Users {
    /// Parses users-file text; `path` is used in error messages only.
    ///
    /// # Errors
    /// [`UsersFileError::Line`] for the first refused line.
    pub fn parse(path: &Path, text: &str, limits: &UsersLimits) -> Result<Users, UsersFileError> {
        let mut by_name = HashMap::new();
        let mut first_line: HashMap<Vec<u8>, usize> = HashMap::new();
        let mut cost_count: HashMap<u32, usize> = HashMap::new();
        let mut default_nopass = false;
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let err = |reason| UsersFileError::Line {
                path: path.to_path_buf(),
                line: i + 1,
                reason,
            };
            let (name, credential) = parse_line(line, limits).map_err(err)?;
            if let Some(&first) = first_line.get(&name) {
                return Err(err(LineError::Duplicate { first_line: first }));
            }
            first_line.insert(name.clone(), i + 1);
            match credential {
                Credential::Hash(hash) => {
                    *cost_count.entry(hash.rounds()).or_default() += 1;
                    by_name.insert(name, hash);
                }
                Credential::NoPass => default_nopass = true,
            }
        }
        // The dummy costs what most users' hashes cost (ties: the higher), 5000 if none.
        let dummy_rounds = cost_count
            .iter()
            .max_by_key(|(rounds, count)| (**count, **rounds))
            .map_or(ROUNDS_DEFAULT, |(rounds, _)| *rounds);
        Ok(Users {
            by_name,
            default_nopass,
            generation: NEXT_GENERATION.fetch_add(1, Ordering::Relaxed),
            dummy: make_dummy(dummy_rounds),
            warnings: Vec::new(),
        })
    }

    /// Reads and checks a users file (UTF-8 text).
    ///
    /// Warns (returned by [`warnings`](Self::warnings) and logged) when the file is readable
    /// by group or others.
    ///
    /// # Errors
    /// [`UsersFileError::Io`] if it cannot be read or is not UTF-8; [`UsersFileError::Line`]
    /// for a malformed line, an over-limit round count or a duplicate name;
    /// [`UsersFileError::NoUsers`] when it names no user.
    pub fn load(path: &Path, limits: &UsersLimits) -> Result<Users, UsersFileError> {
        use std::os::unix::fs::PermissionsExt;
        let io = |source| UsersFileError::Io {
            path: path.to_path_buf(),
            source,
        };
        let text = std::fs::read_to_string(path).map_err(io)?;
        let mode = std::fs::metadata(path).map_err(io)?.permissions().mode() & 0o777;
        let mut users = Users::parse(path, &text, limits)?;
        if users.is_empty() {
            return Err(UsersFileError::NoUsers {
                path: path.to_path_buf(),
            });
        }
        if users.default_nopass {
            tracing::warn!(path = %path.display(), "users file has default:nopass: every client that connects is logged in as 'default' without a password");
        }
        if mode & 0o027 != 0 {
            tracing::warn!(path = %path.display(), mode = format!("{mode:o}"), "users file is accessible to others or writable by its group; chmod 640 (group: the server's) or 600 it");
            users.warnings.push(UsersWarning::ReadableByOthers {
                path: path.to_path_buf(),
                mode,
            });
        }
        Ok(users)
    }

    /// The hash of `name`, if such a user exists with a password (`None` too for a `nopass`
    /// default user: see [`default_nopass`](Self::default_nopass)).
    pub fn get(&self, name: &[u8]) -> Option<&PasswordHash> {
        self.by_name.get(name)
    }

    /// Whether the file has `default:nopass`: the default user needs no password, so new
    /// connections are logged in as it and any password for it is accepted.
    pub fn default_nopass(&self) -> bool {
        self.default_nopass
    }

    /// Number of users (a `nopass` default user included).
    pub fn len(&self) -> usize {
        self.by_name.len() + usize::from(self.default_nopass)
    }

    /// Whether the file defined no user.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A process-unique number for this load; a reload yields a larger one (caches compare it).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The hash to verify against for an unknown user, so that an unknown-user login costs
    /// as long as a wrong password: random salt and digest, with the round count most users
    /// of this file have (5000, the default cost, for an empty file).
    pub fn dummy_hash(&self) -> &PasswordHash {
        &self.dummy
    }

    /// Non-fatal findings of [`load`](Self::load).
    pub fn warnings(&self) -> &[UsersWarning] {
        &self.warnings
    }
}

#[cfg(test)]
mod tests;
