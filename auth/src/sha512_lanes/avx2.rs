//! The AVX2 kernel: four lanes per pass, one `__m256i` per half row of [`LaneWords`].
//!
//! Lanes 0–3 are the first 32 bytes of each row, lanes 4–7 the last 32; [`compress`] runs
//! one pass per half that has an active lane. AVX2 has no 64-bit rotate, so ROTR n is
//! `(x >> n) | (x << (64 − n))`. With sixteen ymm registers the message-schedule window
//! does not fit next to a…h; the compiler keeps part of it on the stack. Inactive lanes are
//! computed too and dropped by a blend with the old state before the store.
//!
//! [`LaneWords`]: super::LaneWords

use core::arch::x86_64::{
    __m256i, _mm256_add_epi64, _mm256_and_si256, _mm256_andnot_si256, _mm256_blendv_epi8,
    _mm256_cmpeq_epi64, _mm256_load_si256, _mm256_or_si256, _mm256_set1_epi64x, _mm256_set_epi64x,
    _mm256_setzero_si256, _mm256_slli_epi64, _mm256_srli_epi64, _mm256_store_si256,
    _mm256_xor_si256,
};

use super::{LaneBlock, LaneState, K_ROWS};

/// ROTR n (FIPS 180-4, 2.2.2) of every lane, for a literal `n` in 1…63.
macro_rules! ror {
    ($x:expr, $n:literal) => {{
        let x = $x;
        _mm256_or_si256(
            _mm256_srli_epi64::<$n>(x),
            _mm256_slli_epi64::<{ 64 - $n }>(x),
        )
    }};
}

/// Lane-wise wrapping addition mod 2^64.
#[inline]
#[target_feature(enable = "avx2")]
fn add(x: __m256i, y: __m256i) -> __m256i {
    _mm256_add_epi64(x, y)
}

#[inline]
#[target_feature(enable = "avx2")]
fn xor3(x: __m256i, y: __m256i, z: __m256i) -> __m256i {
    _mm256_xor_si256(_mm256_xor_si256(x, y), z)
}

/// `k` in every lane (a round constant).
#[inline]
#[target_feature(enable = "avx2")]
fn splat(k: u64) -> __m256i {
    _mm256_set1_epi64x(k as i64)
}

/// Ch(x, y, z) = (x ∧ y) ⊕ (¬x ∧ z) (FIPS 180-4, 4.1.3 (4.8)).
#[inline]
#[target_feature(enable = "avx2")]
fn ch(x: __m256i, y: __m256i, z: __m256i) -> __m256i {
    _mm256_xor_si256(_mm256_and_si256(x, y), _mm256_andnot_si256(x, z))
}

/// Maj(x, y, z) (4.9), as ((x ⊕ y) ∧ (y ⊕ z)) ⊕ y: the next round's y ⊕ z is this round's
/// x ⊕ y, which the compiler reuses.
#[inline]
#[target_feature(enable = "avx2")]
fn maj(x: __m256i, y: __m256i, z: __m256i) -> __m256i {
    _mm256_xor_si256(
        _mm256_and_si256(_mm256_xor_si256(x, y), _mm256_xor_si256(y, z)),
        y,
    )
}

/// Σ0(x) = ROTR28 ⊕ ROTR34 ⊕ ROTR39 (4.10).
#[inline]
#[target_feature(enable = "avx2")]
fn big_sigma0(x: __m256i) -> __m256i {
    xor3(ror!(x, 28), ror!(x, 34), ror!(x, 39))
}

/// Σ1(x) = ROTR14 ⊕ ROTR18 ⊕ ROTR41 (4.11).
#[inline]
#[target_feature(enable = "avx2")]
fn big_sigma1(x: __m256i) -> __m256i {
    xor3(ror!(x, 14), ror!(x, 18), ror!(x, 41))
}

/// σ0(x) = ROTR1 ⊕ ROTR8 ⊕ SHR7 (4.12).
#[inline]
#[target_feature(enable = "avx2")]
fn small_sigma0(x: __m256i) -> __m256i {
    xor3(ror!(x, 1), ror!(x, 8), _mm256_srli_epi64::<7>(x))
}

/// σ1(x) = ROTR19 ⊕ ROTR61 ⊕ SHR6 (4.13).
#[inline]
#[target_feature(enable = "avx2")]
fn small_sigma1(x: __m256i) -> __m256i {
    xor3(ror!(x, 19), ror!(x, 61), _mm256_srli_epi64::<6>(x))
}

/// One compression of the active lanes, in up to two passes of four; see
/// [`super::Kernel::compress`].
///
/// # Safety
/// The CPU must support AVX2 ([`super::Kernel::Avx2`] is available).
#[target_feature(enable = "avx2")]
pub(super) unsafe fn compress(state: &mut LaneState, block: &LaneBlock, active: u8) {
    if active & 0x0F != 0 {
        compress_half::<0>(state, block, active & 0x0F);
    }
    if active & 0xF0 != 0 {
        compress_half::<4>(state, block, active >> 4);
    }
}

/// One compression of lanes `LANE0..LANE0 + 4` (`LANE0` is 0 or 4) where bit `i` of
/// `active` (0…15) marks lane `LANE0 + i` active.
#[target_feature(enable = "avx2")]
fn compress_half<const LANE0: usize>(state: &mut LaneState, block: &LaneBlock, active: u8) {
    // The alignment argument of the loads and stores: a half row starts 0 or 32 bytes into
    // a 64-byte-aligned row.
    const { assert!(LANE0 == 0 || LANE0 == 4) };

    let mut old = [_mm256_setzero_si256(); 8];
    for (reg, row) in old.iter_mut().zip(&state.0) {
        // SAFETY: `row[LANE0..]` starts lane LANE0 (0 or 4, asserted at compile time) of a
        // 64-byte row of a `#[repr(C, align(64))]` `LaneWords`, so it holds at least the 4
        // words (32 bytes) read and is 32-byte aligned as `_mm256_load_si256` requires.
        *reg = unsafe { _mm256_load_si256(row[LANE0..].as_ptr().cast()) };
    }
    let mut w = [_mm256_setzero_si256(); 16];
    for (reg, row) in w.iter_mut().zip(&block.0) {
        // SAFETY: as above, lanes LANE0..LANE0 + 4 of one row of `block`: in bounds and
        // 32-byte aligned.
        *reg = unsafe { _mm256_load_si256(row[LANE0..].as_ptr().cast()) };
    }

    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = old;
    // Rounds 0–15: W_t is message word t.
    macro_rules! first {
        ($t:literal) => {
            add(w[$t], splat(K_ROWS[0][$t]))
        };
    }
    sha512_rounds!([a, b, c, d, e, f, g, h], first);
    for kr in &K_ROWS[1..] {
        // Rounds 16–79: W_t = σ1(W_{t-2}) + W_{t-7} + σ0(W_{t-15}) + W_{t-16} (6.4.2 step 1),
        // written over W_{t-16} in the window (index t mod 16).
        macro_rules! next {
            ($t:literal) => {{
                w[$t] = add(
                    add(w[$t], small_sigma0(w[($t + 1) % 16])),
                    add(w[($t + 9) % 16], small_sigma1(w[($t + 14) % 16])),
                );
                add(w[$t], splat(kr[$t]))
            }};
        }
        sha512_rounds!([a, b, c, d, e, f, g, h], next);
    }

    // Step 4: H_i = working variable + H_{i-1} in active lanes; the others keep `old`.
    let lane_bits = _mm256_set_epi64x(8, 4, 2, 1);
    let active_mask = _mm256_cmpeq_epi64(
        _mm256_and_si256(_mm256_set1_epi64x(i64::from(active)), lane_bits),
        lane_bits,
    );
    let new = [a, b, c, d, e, f, g, h];
    for (row, (old, new)) in state.0.iter_mut().zip(old.into_iter().zip(new)) {
        let sum = _mm256_blendv_epi8(old, add(old, new), active_mask);
        // SAFETY: lanes LANE0..LANE0 + 4 (32 bytes) of one 64-byte-aligned row of `state`:
        // in bounds and 32-byte aligned as `_mm256_store_si256` requires.
        unsafe { _mm256_store_si256(row[LANE0..].as_mut_ptr().cast(), sum) };
    }
}
