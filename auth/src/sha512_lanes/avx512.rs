//! The AVX-512F kernel: eight lanes per pass, one `__m512i` per row of [`LaneWords`].
//!
//! Rotations are `vprorq` (`_mm512_ror_epi64`); Ch, Maj and the three-way XORs of the Σ/σ
//! functions are one `vpternlogq` each (truth tables 0xCA, 0xE8, 0x96 over the operands'
//! canonical tables 0xF0, 0xCC, 0xAA). The sixteen message words live in a rolling window
//! of registers; all 24 values (a…h, W window) fit in the 32 zmm registers. The feed-forward
//! addition is masked by `active`, so inactive lanes are stored back as they were loaded.
//!
//! [`LaneWords`]: super::LaneWords

use core::arch::x86_64::{
    __m512i, _mm512_add_epi64, _mm512_load_si512, _mm512_mask_add_epi64, _mm512_ror_epi64,
    _mm512_set1_epi64, _mm512_setzero_si512, _mm512_srli_epi64, _mm512_store_si512,
    _mm512_ternarylogic_epi64,
};

use super::{LaneBlock, LaneState, K_ROWS};

/// Truth table of `x ^ y ^ z` for `vpternlogq`.
const XOR3: i32 = 0x96;
/// Truth table of Ch(x, y, z) = (x ∧ y) ⊕ (¬x ∧ z) (FIPS 180-4, 4.1.3).
const CH: i32 = 0xCA;
/// Truth table of Maj(x, y, z) = (x ∧ y) ⊕ (x ∧ z) ⊕ (y ∧ z) (FIPS 180-4, 4.1.3).
const MAJ: i32 = 0xE8;

/// Lane-wise wrapping addition mod 2^64.
#[inline]
#[target_feature(enable = "avx512f")]
fn add(x: __m512i, y: __m512i) -> __m512i {
    _mm512_add_epi64(x, y)
}

/// `k` in every lane (a round constant; compiles to an embedded broadcast).
#[inline]
#[target_feature(enable = "avx512f")]
fn splat(k: u64) -> __m512i {
    _mm512_set1_epi64(k as i64)
}

#[inline]
#[target_feature(enable = "avx512f")]
fn ch(x: __m512i, y: __m512i, z: __m512i) -> __m512i {
    _mm512_ternarylogic_epi64::<CH>(x, y, z)
}

#[inline]
#[target_feature(enable = "avx512f")]
fn maj(x: __m512i, y: __m512i, z: __m512i) -> __m512i {
    _mm512_ternarylogic_epi64::<MAJ>(x, y, z)
}

/// Σ0(x) = ROTR28 ⊕ ROTR34 ⊕ ROTR39 (FIPS 180-4, 4.1.3 (4.10)).
#[inline]
#[target_feature(enable = "avx512f")]
fn big_sigma0(x: __m512i) -> __m512i {
    _mm512_ternarylogic_epi64::<XOR3>(
        _mm512_ror_epi64::<28>(x),
        _mm512_ror_epi64::<34>(x),
        _mm512_ror_epi64::<39>(x),
    )
}

/// Σ1(x) = ROTR14 ⊕ ROTR18 ⊕ ROTR41 (4.11).
#[inline]
#[target_feature(enable = "avx512f")]
fn big_sigma1(x: __m512i) -> __m512i {
    _mm512_ternarylogic_epi64::<XOR3>(
        _mm512_ror_epi64::<14>(x),
        _mm512_ror_epi64::<18>(x),
        _mm512_ror_epi64::<41>(x),
    )
}

/// σ0(x) = ROTR1 ⊕ ROTR8 ⊕ SHR7 (4.12).
#[inline]
#[target_feature(enable = "avx512f")]
fn small_sigma0(x: __m512i) -> __m512i {
    _mm512_ternarylogic_epi64::<XOR3>(
        _mm512_ror_epi64::<1>(x),
        _mm512_ror_epi64::<8>(x),
        _mm512_srli_epi64::<7>(x),
    )
}

/// σ1(x) = ROTR19 ⊕ ROTR61 ⊕ SHR6 (4.13).
#[inline]
#[target_feature(enable = "avx512f")]
fn small_sigma1(x: __m512i) -> __m512i {
    _mm512_ternarylogic_epi64::<XOR3>(
        _mm512_ror_epi64::<19>(x),
        _mm512_ror_epi64::<61>(x),
        _mm512_srli_epi64::<6>(x),
    )
}

/// One compression of all eight lanes; see [`super::Kernel::compress`].
///
/// # Safety
/// The CPU must support AVX-512F ([`super::Kernel::Avx512`] is available).
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn compress(state: &mut LaneState, block: &LaneBlock, active: u8) {
    let mut old = [_mm512_setzero_si512(); 8];
    for (reg, row) in old.iter_mut().zip(&state.0) {
        // SAFETY: `row` is one whole `[u64; 8]` row (64 bytes) of a borrowed `LaneWords`,
        // which is `#[repr(C, align(64))]` with 64-byte rows: in bounds and 64-byte aligned
        // as `_mm512_load_si512` requires.
        *reg = unsafe { _mm512_load_si512(row.as_ptr().cast()) };
    }
    let mut w = [_mm512_setzero_si512(); 16];
    for (reg, row) in w.iter_mut().zip(&block.0) {
        // SAFETY: as above, one whole 64-byte-aligned row of `block`.
        *reg = unsafe { _mm512_load_si512(row.as_ptr().cast()) };
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

    // Step 4: H_i = working variable + H_{i-1}, in active lanes only (the others keep
    // `old`, bit for bit).
    let new = [a, b, c, d, e, f, g, h];
    for (row, (old, new)) in state.0.iter_mut().zip(old.into_iter().zip(new)) {
        let sum = _mm512_mask_add_epi64(old, active, old, new);
        // SAFETY: `row` is one whole 64-byte row of `state` (`#[repr(C, align(64))]`
        // `LaneWords`): in bounds and 64-byte aligned as `_mm512_store_si512` requires.
        unsafe { _mm512_store_si512(row.as_mut_ptr().cast(), sum) };
    }
}
