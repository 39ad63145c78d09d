//! The `$6$[rounds=N$]SALT[$HASH]` text forms: settings and stored password hashes.

use std::fmt;

use rand::Rng;

use super::encode::{decode_digest, encode_digest, DecodeError, ALPHABET, ENCODED_LEN};
use super::state::{
    CryptDigest, Sha512CryptState, ROUNDS_DEFAULT, ROUNDS_MAX, ROUNDS_MIN, SALT_MAX,
};

const PREFIX: &str = "$6$";
const ROUNDS_PREFIX: &str = "rounds=";

/// Why a `$6$` setting or hash string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HashFormatError {
    /// The string does not start with `$6$` (not SHA-512-crypt).
    #[error("not a SHA-512-crypt hash (expected prefix \"$6$\")")]
    NotSha512Crypt,
    /// `rounds=` is not followed by decimal digits and `$`.
    #[error("malformed rounds= field")]
    BadRounds,
    /// A stored hash names rounds outside 1000..=999999999 or with leading zeros, which
    /// neither libxcrypt nor glibc ever writes.
    #[error("rounds={0} is not a canonical round count (1000..=999999999, no leading zeros)")]
    NonCanonicalRounds(String),
    /// A salt character that libxcrypt refuses (whitespace, control, non-ASCII, or one of `$:;*!\`).
    #[error("invalid salt character {0:?}")]
    BadSaltChar(char),
    /// A stored hash whose salt is longer than 16 characters (crypt would have cut it).
    #[error("salt longer than 16 characters")]
    SaltTooLong,
    /// The hash part is missing (no `$` after the salt).
    #[error("missing hash part after the salt")]
    MissingHash,
    /// The hash part is not 86 characters of `./0-9A-Za-z` that encode 64 bytes exactly.
    #[error("invalid hash part: {0}")]
    BadHash(&'static str),
}

impl From<DecodeError> for HashFormatError {
    fn from(e: DecodeError) -> Self {
        HashFormatError::BadHash(match e {
            DecodeError::Length(_) => "not 86 characters",
            DecodeError::Character(_) => "character outside ./0-9A-Za-z",
            DecodeError::NonCanonical => "last character out of range",
        })
    }
}

/// Salt bytes accepted: printable ASCII except `$:;*!\` (what libxcrypt accepts; checked
/// against it in the fixture test).
fn check_salt(salt: &str) -> Result<(), HashFormatError> {
    match salt
        .chars()
        .find(|&c| !c.is_ascii_graphic() || "$:;*!\\".contains(c))
    {
        Some(c) => Err(HashFormatError::BadSaltChar(c)),
        None => Ok(()),
    }
}

/// A parsed SHA-512-crypt setting: round count, whether `rounds=` was written, and salt.
///
/// Parsing follows Drepper, 2008 (as glibc does): a `rounds=` value below 1000 is raised
/// to 1000, one above 999,999,999 is lowered to it, and the salt is cut to 16 characters;
/// anything after the salt's closing `$` is ignored. libxcrypt instead refuses
/// out-of-range and zero-led round counts (it answers `*0`); see the fixture test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashSetting {
    rounds: u32,
    rounds_explicit: bool,
    salt: String,
}

impl HashSetting {
    /// Builds a setting from parts; `rounds` is clamped to 1000..=999999999 and written as
    /// `rounds=N$`; `salt` is cut to 16 characters.
    ///
    /// # Errors
    /// [`HashFormatError::BadSaltChar`] for a salt character crypt refuses.
    pub fn new(rounds: u32, salt: &str) -> Result<Self, HashFormatError> {
        check_salt(salt)?;
        let salt = salt.chars().take(SALT_MAX).collect();
        Ok(HashSetting {
            rounds: rounds.clamp(ROUNDS_MIN, ROUNDS_MAX),
            rounds_explicit: true,
            salt,
        })
    }

    /// Parses `$6$[rounds=N$]SALT[$…]`.
    ///
    /// # Errors
    /// [`HashFormatError::NotSha512Crypt`], [`HashFormatError::BadRounds`] (no digits, or no
    /// `$` after them), [`HashFormatError::BadSaltChar`].
    pub fn parse(setting: &str) -> Result<Self, HashFormatError> {
        let rest = setting
            .strip_prefix(PREFIX)
            .ok_or(HashFormatError::NotSha512Crypt)?;
        let (rounds, rounds_explicit, rest) = match rest.strip_prefix(ROUNDS_PREFIX) {
            Some(r) => {
                let digits = r.bytes().take_while(u8::is_ascii_digit).count();
                if digits == 0 || r.as_bytes().get(digits) != Some(&b'$') {
                    return Err(HashFormatError::BadRounds);
                }
                // Saturate like strtoul, then clamp (spec).
                let value = r[..digits].parse::<u64>().unwrap_or(u64::MAX);
                let rounds = value.clamp(u64::from(ROUNDS_MIN), u64::from(ROUNDS_MAX)) as u32;
                (rounds, true, &r[digits + 1..])
            }
            None => (ROUNDS_DEFAULT, false, rest),
        };
        let salt_full = rest.split('$').next().unwrap_or("");
        let salt: String = salt_full.chars().take(SALT_MAX).collect();
        check_salt(&salt)?;
        Ok(HashSetting {
            rounds,
            rounds_explicit,
            salt,
        })
    }

    /// Round count (after clamping).
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// The salt as used (at most 16 characters).
    pub fn salt(&self) -> &str {
        &self.salt
    }

    /// Whether the output carries `rounds=N$`.
    pub fn rounds_explicit(&self) -> bool {
        self.rounds_explicit
    }

    /// Starts the computation for `password` under this setting.
    pub fn start(&self, password: &[u8]) -> Sha512CryptState {
        Sha512CryptState::new(password, self.salt.as_bytes(), self.rounds)
    }

    /// Hashes `password` to completion on the calling thread (all rounds in one go).
    pub fn hash(&self, password: &[u8]) -> PasswordHash {
        PasswordHash {
            setting: self.clone(),
            digest: self.start(password).finish(),
        }
    }
}

/// A stored SHA-512-crypt hash: setting plus the decoded 64-byte digest.
///
/// `Display` writes back exactly the string it was parsed from.
#[derive(Debug, Clone)]
pub struct PasswordHash {
    setting: HashSetting,
    digest: CryptDigest,
}

impl PasswordHash {
    /// Assembles a hash from a setting and a digest (e.g. a dummy hash with a random digest).
    pub fn new(setting: HashSetting, digest: CryptDigest) -> Self {
        PasswordHash { setting, digest }
    }

    /// Parses `$6$[rounds=N$]SALT$HASH` as written by libxcrypt, glibc, `mkpasswd -m sha-512`
    /// or `openssl passwd -6`.
    ///
    /// Stricter than [`HashSetting::parse`]: the round count must be canonical (no leading
    /// zero, within 1000..=999999999), the salt at most 16 characters, and the hash exactly
    /// 86 characters encoding 64 bytes — so re-encoding gives back the same string.
    ///
    /// # Errors
    /// A [`HashFormatError`] saying which part is wrong.
    pub fn parse(text: &str) -> Result<Self, HashFormatError> {
        let rest = text
            .strip_prefix(PREFIX)
            .ok_or(HashFormatError::NotSha512Crypt)?;
        let (rounds, rounds_explicit, rest) = match rest.strip_prefix(ROUNDS_PREFIX) {
            Some(r) => {
                let (num, after) = r.split_once('$').ok_or(HashFormatError::BadRounds)?;
                if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(HashFormatError::BadRounds);
                }
                let canonical = match num.parse::<u32>() {
                    Ok(n) if !num.starts_with('0') && (ROUNDS_MIN..=ROUNDS_MAX).contains(&n) => {
                        Some(n)
                    }
                    _ => None,
                };
                let n = canonical
                    .ok_or_else(|| HashFormatError::NonCanonicalRounds(num.to_string()))?;
                (n, true, after)
            }
            None => (ROUNDS_DEFAULT, false, rest),
        };
        let (salt, hash) = rest.split_once('$').ok_or(HashFormatError::MissingHash)?;
        check_salt(salt)?;
        if salt.len() > SALT_MAX {
            return Err(HashFormatError::SaltTooLong);
        }
        let digest = CryptDigest::from_bytes(decode_digest(hash.as_bytes())?);
        Ok(PasswordHash {
            setting: HashSetting {
                rounds,
                rounds_explicit,
                salt: salt.to_string(),
            },
            digest,
        })
    }

    /// The setting part (rounds, salt).
    pub fn setting(&self) -> &HashSetting {
        &self.setting
    }

    /// Round count.
    pub fn rounds(&self) -> u32 {
        self.setting.rounds
    }

    /// The decoded 64-byte digest.
    pub fn digest(&self) -> &CryptDigest {
        &self.digest
    }

    /// Starts hashing a candidate password under this hash's setting (for resumable use).
    pub fn start(&self, password: &[u8]) -> Sha512CryptState {
        self.setting.start(password)
    }

    /// Compares a finished candidate digest with the stored one in constant time.
    pub fn matches(&self, candidate: &CryptDigest) -> bool {
        self.digest.ct_eq(candidate)
    }

    /// Hashes `password` to completion on this thread and compares in constant time.
    pub fn verify(&self, password: &[u8]) -> bool {
        self.matches(&self.start(password).finish())
    }
}

impl fmt::Display for PasswordHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::with_capacity(PREFIX.len() + 17 + 1 + SALT_MAX + 1 + ENCODED_LEN);
        s.push_str(PREFIX);
        if self.setting.rounds_explicit {
            s.push_str(ROUNDS_PREFIX);
            s.push_str(&self.setting.rounds.to_string());
            s.push('$');
        }
        s.push_str(&self.setting.salt);
        s.push('$');
        encode_digest(self.digest.as_bytes(), &mut s);
        f.write_str(&s)
    }
}

/// Returns 16 random salt characters from the crypt alphabet (`rand::thread_rng`, a CSPRNG).
pub fn random_salt() -> String {
    let mut rng = rand::thread_rng();
    (0..SALT_MAX)
        .map(|_| char::from(ALPHABET[rng.gen_range(0..ALPHABET.len())]))
        .collect()
}

/// Hashes `password` with a fresh random 16-character salt and `rounds` (clamped to
/// 1000..=999999999). The result carries `rounds=N$` unless `rounds` is 5000 (the
/// implicit default, as `mkpasswd` writes it).
pub fn hash_password(password: &[u8], rounds: u32) -> String {
    let rounds = rounds.clamp(ROUNDS_MIN, ROUNDS_MAX);
    let setting = HashSetting {
        rounds,
        rounds_explicit: rounds != ROUNDS_DEFAULT,
        salt: random_salt(),
    };
    setting.hash(password).to_string()
}
