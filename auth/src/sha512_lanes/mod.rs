//! Multi-buffer SHA-512: the compression function (FIPS 180-4, 6.4.2) run over up to
//! [`MAX_LANES`] independent messages at once, one message per 64-bit SIMD lane.
//!
//! SHA-512 is serial within one message but independent across messages, so eight
//! compressions can share the instructions of one: AVX-512F holds eight 64-bit lanes per
//! register, AVX2 four. This is the idea of Intel's multi-buffer SHA-512 in isa-l_crypto
//! (`sha512_mb`), written here for the one caller that needs it: batched SHA-512-crypt
//! ([`crate::sha512_crypt::Sha512CryptBatch`]).
//!
//! Data layout is word-major ("transposed"): `state.0[w][lane]` is word `w` (a…h) of a
//! lane's chaining value, `block.0[j][lane]` is message word `W_j` (already read
//! big-endian). One compression updates every lane whose bit is set in `active` and leaves
//! the others untouched; every kernel computes exactly what `sha2::compress512` computes
//! lane by lane.
//!
//! # Kernels ([`Kernel`])
//!
//! - [`Kernel::Avx512`] (`avx512.rs`, 8 lanes per pass): one row of [`LaneWords`] is one
//!   `__m512i`. The eight working variables and the 16-word message schedule window
//!   (FIPS 180-4, 6.4.2 step 1: `W_t` for `t ≥ 16` from σ0/σ1, computed in place of
//!   `W_{t-16}`) stay in the 32 zmm registers; rotations are `vprorq`, Ch / Maj / the
//!   three-way XORs of the Σ and σ functions one `vpternlogq` each. Inactive lanes are
//!   computed too (on whatever their rows hold) and dropped by the masked feed-forward
//!   addition (`active` is the `k` mask), so they are stored back unchanged.
//! - [`Kernel::Avx2`] (`avx2.rs`, 4 lanes per pass): lanes 0–3 and 4–7 are two passes over
//!   the two 32-byte halves of each row; a half whose four `active` bits are all clear is
//!   skipped. Rotations are shift-left | shift-right; inactive lanes keep their words by a
//!   blend with the old state before the store.
//! - [`Kernel::Scalar`] (`scalar.rs`): `sha2::compress512` per active lane, always
//!   available.
//!
//! Both SIMD kernels share the round structure (`sha512_rounds!` below: the working
//! variables are renamed, not moved, from one round to the next) and the round constants
//! `K` (FIPS 180-4, 4.2.3). [`Kernel::detect`] picks the widest kernel the CPU has at run
//! time (`is_x86_feature_detected!`).
//!
//! # Safety invariants
//!
//! This module holds the only `unsafe` code of the crate; every `unsafe` block names the
//! invariant it relies on:
//!
//! - **CPU features**: the SIMD kernels are `#[target_feature]` functions. They are called
//!   only from [`Kernel::compress`], after `assert!(self.is_available())`, i.e. after
//!   `is_x86_feature_detected!` reported the feature (`avx512f` / `avx2`). Their helpers
//!   (Σ, σ, Ch, Maj, the AVX2 half pass) are safe `#[target_feature]` functions, called
//!   only from functions with the same feature. On other architectures the SIMD kernels
//!   are not compiled and never available.
//! - **Alignment**: the aligned vector loads and stores need 64-byte (AVX-512) or 32-byte
//!   (AVX2) alignment. [`LaneWords`] is `#[repr(C, align(64))]` and each of its rows is
//!   `[u64; 8]` = 64 bytes, so every row starts on a 64-byte boundary and its second half
//!   (lanes 4–7) on a 32-byte one.
//! - **Bounds**: each load or store touches exactly one row (64 bytes) or one half-row (32
//!   bytes at offset 0 or 32) of a borrowed [`LaneWords`]; loops run over the rows
//!   themselves.

/// Sixteen rounds of the compression (FIPS 180-4, 6.4.2 step 3) on vectors of lanes, for
/// the SIMD kernels, which run it five times (rounds 0–15, …, 64–79).
///
/// The bracketed identifiers are the eight working variables a…h (mutable locals of one
/// vector type). `$x` names a macro with `$x!(j)` = `W_t + K_t` for the group's round `j`
/// (a literal 0…15, `t` = 16 × group + j); for rounds 16–79 it computes the
/// message-schedule word first (6.4.2 step 1).
///
/// Instead of moving h←g←…←a after every round, the names rotate: the round after
/// `round(a, …, h)` is `round(h, a, …, g)`, and after sixteen rounds the names are back in
/// place. At the invocation site the functions `add`, `ch`, `maj`, `big_sigma0`,
/// `big_sigma1` (FIPS 180-4, 4.1.3) must exist for the kernel's vector type.
#[cfg(target_arch = "x86_64")]
macro_rules! sha512_rounds {
    ([$a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident],
     $x:ident) => {
        sha512_rounds!(@round [$a, $b, $c, $d, $e, $f, $g, $h], $x!(0));
        sha512_rounds!(@round [$h, $a, $b, $c, $d, $e, $f, $g], $x!(1));
        sha512_rounds!(@round [$g, $h, $a, $b, $c, $d, $e, $f], $x!(2));
        sha512_rounds!(@round [$f, $g, $h, $a, $b, $c, $d, $e], $x!(3));
        sha512_rounds!(@round [$e, $f, $g, $h, $a, $b, $c, $d], $x!(4));
        sha512_rounds!(@round [$d, $e, $f, $g, $h, $a, $b, $c], $x!(5));
        sha512_rounds!(@round [$c, $d, $e, $f, $g, $h, $a, $b], $x!(6));
        sha512_rounds!(@round [$b, $c, $d, $e, $f, $g, $h, $a], $x!(7));
        sha512_rounds!(@round [$a, $b, $c, $d, $e, $f, $g, $h], $x!(8));
        sha512_rounds!(@round [$h, $a, $b, $c, $d, $e, $f, $g], $x!(9));
        sha512_rounds!(@round [$g, $h, $a, $b, $c, $d, $e, $f], $x!(10));
        sha512_rounds!(@round [$f, $g, $h, $a, $b, $c, $d, $e], $x!(11));
        sha512_rounds!(@round [$e, $f, $g, $h, $a, $b, $c, $d], $x!(12));
        sha512_rounds!(@round [$d, $e, $f, $g, $h, $a, $b, $c], $x!(13));
        sha512_rounds!(@round [$c, $d, $e, $f, $g, $h, $a, $b], $x!(14));
        sha512_rounds!(@round [$b, $c, $d, $e, $f, $g, $h, $a], $x!(15));
    };
    // T1 = h + Σ1(e) + Ch(e, f, g) + K_t + W_t; T2 = Σ0(a) + Maj(a, b, c);
    // new e = d + T1, new a = T1 + T2 (written into h, which the next round calls a).
    (@round [$a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident],
     $wk:expr) => {
        $h = add(add($h, $wk), add(big_sigma1($e), ch($e, $f, $g)));
        $d = add($d, $h);
        $h = add($h, add(big_sigma0($a), maj($a, $b, $c)));
    };
}

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod scalar;
#[cfg(test)]
mod tests;

/// The SHA-512 round constants `K_0…K_79` (FIPS 180-4, 4.2.3: the first 64 bits of the
/// fractional parts of the cube roots of the first 80 primes), shared by the SIMD kernels.
/// Checked by the tests against `sha2::compress512` and the FIPS 180-4 "abc" example.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[rustfmt::skip]
const K: [u64; 80] = [
    0x428a2f98d728ae22, 0x7137449123ef65cd, 0xb5c0fbcfec4d3b2f, 0xe9b5dba58189dbbc,
    0x3956c25bf348b538, 0x59f111f1b605d019, 0x923f82a4af194f9b, 0xab1c5ed5da6d8118,
    0xd807aa98a3030242, 0x12835b0145706fbe, 0x243185be4ee4b28c, 0x550c7dc3d5ffb4e2,
    0x72be5d74f27b896f, 0x80deb1fe3b1696b1, 0x9bdc06a725c71235, 0xc19bf174cf692694,
    0xe49b69c19ef14ad2, 0xefbe4786384f25e3, 0x0fc19dc68b8cd5b5, 0x240ca1cc77ac9c65,
    0x2de92c6f592b0275, 0x4a7484aa6ea6e483, 0x5cb0a9dcbd41fbd4, 0x76f988da831153b5,
    0x983e5152ee66dfab, 0xa831c66d2db43210, 0xb00327c898fb213f, 0xbf597fc7beef0ee4,
    0xc6e00bf33da88fc2, 0xd5a79147930aa725, 0x06ca6351e003826f, 0x142929670a0e6e70,
    0x27b70a8546d22ffc, 0x2e1b21385c26c926, 0x4d2c6dfc5ac42aed, 0x53380d139d95b3df,
    0x650a73548baf63de, 0x766a0abb3c77b2a8, 0x81c2c92e47edaee6, 0x92722c851482353b,
    0xa2bfe8a14cf10364, 0xa81a664bbc423001, 0xc24b8b70d0f89791, 0xc76c51a30654be30,
    0xd192e819d6ef5218, 0xd69906245565a910, 0xf40e35855771202a, 0x106aa07032bbd1b8,
    0x19a4c116b8d2d0c8, 0x1e376c085141ab53, 0x2748774cdf8eeb99, 0x34b0bcb5e19b48a8,
    0x391c0cb3c5c95a63, 0x4ed8aa4ae3418acb, 0x5b9cca4f7763e373, 0x682e6ff3d6b2b8a3,
    0x748f82ee5defb2fc, 0x78a5636f43172f60, 0x84c87814a1f0ab72, 0x8cc702081a6439ec,
    0x90befffa23631e28, 0xa4506cebde82bde9, 0xbef9a3f7b2c67915, 0xc67178f2e372532b,
    0xca273eceea26619c, 0xd186b8c721c0c207, 0xeada7dd6cde0eb1e, 0xf57d4f7fee6ed178,
    0x06f067aa72176fba, 0x0a637dc5a2c898a6, 0x113f9804bef90dae, 0x1b710b35131c471b,
    0x28db77f523047d84, 0x32caab7b40c72493, 0x3c9ebe0a15c9bebc, 0x431d67c49c100d4c,
    0x4cc5d4becb3e42b6, 0x597f299cfc657e2a, 0x5fcb6fab3ad6faec, 0x6c44198c4a475817,
];

/// [`K`] as five groups of sixteen rounds (`K_ROWS[i][j]` = `K[16 i + j]`), so the kernels
/// index a group with constants (no bounds checks in the round loop).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const K_ROWS: [[u64; 16]; 5] = {
    let mut rows = [[0; 16]; 5];
    let mut t = 0;
    while t < 80 {
        rows[t / 16][t % 16] = K[t];
        t += 1;
    }
    rows
};

/// SHA-512 initial hash value H(0) (FIPS 180-4, 5.3.5): words a…h of every message's first
/// chaining value.
pub const IV: [u64; 8] = [
    0x6a09e667f3bcc908,
    0xbb67ae8584caa73b,
    0x3c6ef372fe94f82b,
    0xa54ff53a5f1d36f1,
    0x510e527fade682d1,
    0x9b05688c2b3e6c1f,
    0x1f83d9abfb41bd6b,
    0x5be0cd19137e2179,
];

/// Lanes of the widest kernel (AVX-512F: 8 × 64 bits).
pub const MAX_LANES: usize = 8;

/// `W` 64-bit words for each of [`MAX_LANES`] lanes, word-major (`.0[w][lane]`), aligned to
/// 64 bytes so a row is one AVX-512 register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, zeroize::Zeroize)]
#[repr(C, align(64))]
pub struct LaneWords<const W: usize>(pub [[u64; MAX_LANES]; W]);

/// The chaining values of up to eight messages: words a…h (FIPS 180-4, 6.4.2 step 2).
pub type LaneState = LaneWords<8>;
/// One 128-byte block of each of up to eight messages, as message words `W_0…W_15`.
pub type LaneBlock = LaneWords<16>;

impl<const W: usize> LaneWords<W> {
    /// All words zero.
    pub const ZERO: Self = LaneWords([[0; MAX_LANES]; W]);

    /// The words of one lane, in order (`W` words).
    pub fn lane(&self, lane: usize) -> [u64; W] {
        std::array::from_fn(|w| self.0[w][lane])
    }

    /// Sets the words of one lane.
    pub fn set_lane(&mut self, lane: usize, words: &[u64; W]) {
        for (row, &word) in self.0.iter_mut().zip(words) {
            row[lane] = word;
        }
    }
}

impl LaneState {
    /// Every lane set to `words` (e.g. the SHA-512 initial hash value).
    pub fn splat(words: &[u64; 8]) -> Self {
        LaneWords(words.map(|w| [w; MAX_LANES]))
    }
}

/// A SHA-512 compression kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// `sha2::compress512` once per active lane (no SIMD across lanes).
    Scalar,
    /// AVX2: four lanes per 256-bit register.
    Avx2,
    /// AVX-512F: eight lanes per 512-bit register.
    Avx512,
}

impl Kernel {
    /// The widest kernel this CPU runs: AVX-512F, else AVX2, else scalar.
    pub fn detect() -> Kernel {
        Kernel::ALL
            .into_iter()
            .rev()
            .find(|k| k.is_available())
            .unwrap_or(Kernel::Scalar)
    }

    /// Every kernel, narrowest first.
    pub const ALL: [Kernel; 3] = [Kernel::Scalar, Kernel::Avx2, Kernel::Avx512];

    /// Whether this CPU can run the kernel (checked at run time).
    pub fn is_available(self) -> bool {
        match self {
            Kernel::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => std::is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => std::is_x86_feature_detected!("avx512f"),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// Lanes hashed for the price of one pass: 8 (AVX-512F), 4 (AVX2), 1 (scalar). This is
    /// the batch size worth forming; every kernel accepts up to [`MAX_LANES`] lanes.
    pub fn lanes(self) -> usize {
        match self {
            Kernel::Scalar => 1,
            Kernel::Avx2 => 4,
            Kernel::Avx512 => 8,
        }
    }

    /// The name used in logs, metrics and benchmarks: `scalar`, `avx2`, `avx512`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kernel::Scalar => "scalar",
            Kernel::Avx2 => "avx2",
            Kernel::Avx512 => "avx512",
        }
    }

    /// One SHA-512 compression (FIPS 180-4, 6.4.2, feed-forward included) of `block` into
    /// `state` for every lane whose bit is set in `active` (bit `i` = lane `i`); the other
    /// lanes of `state` are left as they were.
    ///
    /// # Panics
    /// If the kernel is not available on this CPU ([`is_available`](Self::is_available)).
    pub fn compress(self, state: &mut LaneState, block: &LaneBlock, active: u8) {
        // The safety invariant of the SIMD kernels below: their CPU feature is present.
        assert!(
            self.is_available(),
            "{} kernel not available",
            self.as_str()
        );
        match self {
            Kernel::Scalar => scalar::compress(state, block, active),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `avx2::compress` needs AVX2 (its only precondition; alignment and
            // bounds come from the `LaneWords` types): `is_available` asserted above
            // (`is_x86_feature_detected!("avx2")`).
            Kernel::Avx2 => unsafe { avx2::compress(state, block, active) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `avx512::compress` needs AVX-512F (its only precondition; alignment
            // and bounds come from the `LaneWords` types): `is_available` asserted above
            // (`is_x86_feature_detected!("avx512f")`).
            Kernel::Avx512 => unsafe { avx512::compress(state, block, active) },
            #[cfg(not(target_arch = "x86_64"))]
            Kernel::Avx2 | Kernel::Avx512 => unreachable!("SIMD kernels are x86_64 only"),
        }
    }
}
