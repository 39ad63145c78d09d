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
//! Kernels ([`Kernel`]): [`Kernel::Avx512`] (8 lanes per pass), [`Kernel::Avx2`] (4 lanes
//! per pass, two passes for 8), [`Kernel::Scalar`] (`sha2::compress512` per lane, always
//! available). [`Kernel::detect`] picks the widest the CPU has at run time
//! (`is_x86_feature_detected!`). This module holds the only `unsafe` code of the crate;
//! every `unsafe` block states the invariant it relies on.

mod scalar;

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
        match self {
            Kernel::Scalar => scalar::compress(state, block, active),
            Kernel::Avx2 | Kernel::Avx512 => {
                assert!(
                    self.is_available(),
                    "{} kernel not available",
                    self.as_str()
                );
                // SIMD kernels come with the multi-buffer work; until then, the scalar one.
                scalar::compress(state, block, active)
            }
        }
    }
}
