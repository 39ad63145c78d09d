//! The resumable SHA-512-crypt computation (Drepper, 2008, steps 1–21).
//!
//! [`Sha512CryptState::new`] does the fixed-cost preparation (digests A, B, DP, DS and
//! the P and S byte sequences, steps 1–20); [`Sha512CryptState::run_rounds`] advances the
//! step-21 loop by at most a given number of rounds, so a caller can run it all at once,
//! a few rounds between yields, or on another thread; [`Sha512CryptState::finish`] hands
//! out the final digest.
//!
//! Speed: every round hashes one of 8 byte layouts — C or P first, S or not, P or not,
//! P or C last, chosen by `i % 2`, `i % 3`, `i % 7`. All eight messages have a fixed
//! length, so they are laid out once, already SHA-512 padded, in 128-byte blocks with a
//! 64-byte hole for the previous digest C. A round copies C into the hole and runs the
//! SHA-512 compression function over the blocks (`sha2::compress512`): no allocation,
//! no hasher buffering, no length bookkeeping per round.

use sha2::digest::consts::U128;
use sha2::digest::generic_array::GenericArray;
use sha2::{Digest as _, Sha512};
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, ZeroizeOnDrop};

use super::schedule::RoundSchedule;
use crate::sha512_lanes::IV;

/// Rounds when the setting names none (Drepper, 2008: "rounds=" absent ⇒ 5000).
pub const ROUNDS_DEFAULT: u32 = 5000;
/// Smallest round count the spec allows; smaller requests are raised to it.
pub const ROUNDS_MIN: u32 = 1000;
/// Largest round count the spec allows; larger requests are lowered to it.
pub const ROUNDS_MAX: u32 = 999_999_999;
/// Salt characters used at most; a longer salt is cut (spec: 16).
pub const SALT_MAX: usize = 16;

type Block = GenericArray<u8, U128>;

/// The 64-byte result of SHA-512-crypt; wiped from memory when dropped.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct CryptDigest(pub(super) [u8; 64]);

impl CryptDigest {
    /// Wraps 64 raw digest bytes (e.g. decoded from a stored hash).
    pub fn from_bytes(bytes: [u8; 64]) -> Self {
        CryptDigest(bytes)
    }

    /// The raw 64 bytes, in the order of Drepper's step 21 output (before step 22's permutation).
    pub fn as_bytes(&self) -> &[u8; 64] {
        &self.0
    }

    /// Compares with another digest in constant time (`subtle`), so the time taken does not
    /// depend on where the first differing byte is.
    pub fn ct_eq(&self, other: &CryptDigest) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

impl std::fmt::Debug for CryptDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CryptDigest(..)")
    }
}

/// The fixed-cost preparation of one computation (Drepper, 2008, steps 1–20): digest A
/// (the first C) and the P and S byte sequences the rounds hash. Wiped on drop.
pub(super) struct Prepared {
    /// Digest A (steps 1–12), the running digest C before round 0.
    pub(super) a: [u8; 64],
    /// The P sequence (steps 13–16): `len(password)` bytes.
    pub(super) p_seq: Vec<u8>,
    /// The S sequence (steps 17–20): `len(salt)` bytes, salt cut to [`SALT_MAX`].
    pub(super) s_seq: Vec<u8>,
}

impl Prepared {
    /// Steps 1–20 for `password` (any bytes) and `salt` (cut to [`SALT_MAX`] bytes). Costs
    /// five SHA-512 digests plus work linear in the password length (the P sequence hashes
    /// `len²` bytes).
    pub(super) fn new(password: &[u8], salt: &[u8]) -> Self {
        let salt = &salt[..salt.len().min(SALT_MAX)];
        let plen = password.len();

        // Steps 4–8: B = SHA512(P || S || P).
        let mut h = Sha512::new();
        h.update(password);
        h.update(salt);
        h.update(password);
        let mut b: [u8; 64] = h.finalize_reset().into();

        // Steps 1–3, 9–12: A = SHA512(P || S || B for len(P) bytes || per bit of len(P): B or P).
        h.update(password);
        h.update(salt);
        let mut n = plen;
        while n > 64 {
            h.update(b);
            n -= 64;
        }
        h.update(&b[..n]);
        let mut bits = plen;
        while bits > 0 {
            if bits & 1 == 1 {
                h.update(b);
            } else {
                h.update(password);
            }
            bits >>= 1;
        }
        let a: [u8; 64] = h.finalize_reset().into();
        b.zeroize();

        // Steps 13–16: DP = SHA512(P repeated len(P) times); P sequence = DP cycled to len(P).
        for _ in 0..plen {
            h.update(password);
        }
        let mut dp: [u8; 64] = h.finalize_reset().into();
        let p_seq: Vec<u8> = dp.iter().copied().cycle().take(plen).collect();
        dp.zeroize();

        // Steps 17–20: DS = SHA512(S repeated 16 + A[0] times); S sequence = DS cut to len(S).
        for _ in 0..16 + usize::from(a[0]) {
            h.update(salt);
        }
        let mut ds: [u8; 64] = h.finalize_reset().into();
        let s_seq: Vec<u8> = ds[..salt.len()].to_vec();
        ds.zeroize();

        Prepared { a, p_seq, s_seq }
    }

    /// The parts of step 21's message layout `k` = `(i odd) | (i%3≠0)<<1 | (i%7≠0)<<2`
    /// for round `i`, in order; `None` marks the previous digest C:
    /// `(C or P) || [S if i%3≠0] || [P if i%7≠0] || (P or C)`.
    pub(super) fn round_parts(&self, k: u8) -> Vec<Option<&[u8]>> {
        let (odd, with_s, with_p) = (k & 1 != 0, k & 2 != 0, k & 4 != 0);
        let (p, s) = (Some(self.p_seq.as_slice()), Some(self.s_seq.as_slice()));
        let mut parts = Vec::with_capacity(4);
        parts.push(if odd { p } else { None });
        if with_s {
            parts.push(s);
        }
        if with_p {
            parts.push(p);
        }
        parts.push(if odd { None } else { p });
        parts
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        self.a.zeroize();
        self.p_seq.zeroize();
        self.s_seq.zeroize();
    }
}

/// The message of `parts` (`None` = a 64-byte hole for C) with SHA-512 padding (FIPS
/// 180-4, 5.1.2), and the byte offset of the hole. The length is a multiple of 128.
pub(super) fn padded_message(parts: &[Option<&[u8]>]) -> (Vec<u8>, usize) {
    let mut msg: Vec<u8> = Vec::new();
    let mut c_offset = 0;
    for part in parts {
        match part {
            Some(bytes) => msg.extend_from_slice(bytes),
            None => {
                c_offset = msg.len();
                msg.extend_from_slice(&[0u8; 64]);
            }
        }
    }
    let bit_len = (msg.len() as u128) * 8;
    msg.push(0x80);
    while msg.len() % 128 != 112 {
        msg.push(0);
    }
    msg.extend_from_slice(&bit_len.to_be_bytes());
    (msg, c_offset)
}

/// One of the eight per-round messages, pre-padded, with a hole for the previous digest.
struct RoundInput {
    blocks: Vec<Block>,
    /// Byte offset of the 64-byte hole for C within the concatenated blocks.
    c_offset: usize,
}

impl RoundInput {
    /// Lays out `parts` (with `None` marking C) and appends SHA-512 padding (FIPS 180-4, 5.1.2).
    fn new(parts: &[Option<&[u8]>]) -> Self {
        let (mut msg, c_offset) = padded_message(parts);
        let blocks = msg.chunks_exact(128).map(Block::clone_from_slice).collect();
        msg.zeroize();
        RoundInput { blocks, c_offset }
    }

    /// Copies C into the hole and hashes the message, returning the new C.
    #[inline]
    fn hash(&mut self, c: &[u8; 64]) -> [u8; 64] {
        let mut pos = self.c_offset;
        let mut src = &c[..];
        while !src.is_empty() {
            let block = &mut self.blocks[pos / 128];
            let start = pos % 128;
            let n = src.len().min(128 - start);
            block[start..start + n].copy_from_slice(&src[..n]);
            src = &src[n..];
            pos += n;
        }
        let mut state = IV;
        // One block per call: given two blocks, sha2 takes its AVX2 two-block path, which was
        // measured slower here than two single-block (AVX) calls (benches/README.md).
        for block in &self.blocks {
            sha2::compress512(&mut state, std::slice::from_ref(block));
        }
        let mut out = [0u8; 64];
        for (chunk, word) in out.chunks_exact_mut(8).zip(state.iter()) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        // `state` is not wiped per round (a volatile wipe costs a few percent of a round):
        // it equals `out`, which becomes C, and C is wiped on drop.
        out
    }
}

impl Drop for RoundInput {
    fn drop(&mut self) {
        for b in &mut self.blocks {
            b.as_mut_slice().zeroize();
        }
    }
}

/// SHA-512-crypt in progress: prepared by [`new`](Self::new), advanced by
/// [`run_rounds`](Self::run_rounds), completed by [`finish`](Self::finish).
/// Every buffer holding password-derived bytes is wiped on drop.
pub struct Sha512CryptState {
    /// The eight round messages, indexed by `(i odd) | (i%3≠0)<<1 | (i%7≠0)<<2`.
    inputs: Vec<RoundInput>,
    /// The running digest C (A before round 0).
    c: [u8; 64],
    schedule: RoundSchedule,
}

impl Sha512CryptState {
    /// Prepares a computation (Drepper, 2008, steps 1–20).
    ///
    /// `password` is any bytes (NUL and 0xFF included); `salt` is cut to [`SALT_MAX`] bytes;
    /// `rounds` is clamped to [`ROUNDS_MIN`]..=[`ROUNDS_MAX`]. Costs five SHA-512 digests
    /// plus work linear in the password length (the P sequence hashes `len²` bytes).
    pub fn new(password: &[u8], salt: &[u8], rounds: u32) -> Self {
        let prepared = Prepared::new(password, salt);
        let inputs = (0..8u8)
            .map(|k| RoundInput::new(&prepared.round_parts(k)))
            .collect();
        Sha512CryptState {
            inputs,
            c: prepared.a,
            schedule: RoundSchedule::new(rounds),
        }
    }

    /// Total rounds of this computation, after clamping.
    pub fn rounds(&self) -> u32 {
        self.schedule.rounds()
    }

    /// Rounds still to run.
    pub fn remaining(&self) -> u32 {
        self.schedule.remaining()
    }

    /// Runs at most `max_rounds` rounds of step 21; returns `true` once all rounds are done.
    /// Calling it again after completion does nothing and returns `true`.
    pub fn run_rounds(&mut self, max_rounds: u32) -> bool {
        let (inputs, c) = (&mut self.inputs, &mut self.c);
        self.schedule.run(max_rounds, |k| *c = inputs[k].hash(c))
    }

    /// Runs any remaining rounds and returns the final digest (step 21's last C).
    pub fn finish(mut self) -> CryptDigest {
        self.run_rounds(u32::MAX);
        CryptDigest(self.c)
    }
}

impl Drop for Sha512CryptState {
    fn drop(&mut self) {
        self.c.zeroize();
    }
}
