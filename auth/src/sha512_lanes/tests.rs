//! Every available kernel against `sha2::compress512` lane by lane: random states, blocks
//! and active masks (proptest), the FIPS 180-4 "abc" example in every lane, and long chains
//! of compressions against the scalar kernel.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use sha2::digest::generic_array::GenericArray;

use super::{Kernel, LaneBlock, LaneState, LaneWords, IV, MAX_LANES};

/// The kernels this CPU runs; prints the ones it skips.
fn available_kernels() -> Vec<Kernel> {
    Kernel::ALL
        .into_iter()
        .filter(|k| {
            let available = k.is_available();
            if !available {
                eprintln!("{} kernel not available on this CPU: skipped", k.as_str());
            }
            available
        })
        .collect()
}

/// `sha2::compress512` on the active lanes, written independently of the scalar kernel.
fn reference(state: &LaneState, block: &LaneBlock, active: u8) -> LaneState {
    let mut out = *state;
    for lane in (0..MAX_LANES).filter(|l| active & (1 << l) != 0) {
        let mut bytes = [0u8; 128];
        for (j, word) in block.lane(lane).iter().enumerate() {
            bytes[8 * j..8 * j + 8].copy_from_slice(&word.to_be_bytes());
        }
        let mut words = state.lane(lane);
        sha2::compress512(&mut words, &[*GenericArray::from_slice(&bytes)]);
        out.set_lane(lane, &words);
    }
    out
}

fn lane_words<const W: usize>() -> impl Strategy<Value = LaneWords<W>> {
    prop::collection::vec(any::<[u64; MAX_LANES]>(), W).prop_map(|rows| {
        let mut words = LaneWords::<W>::ZERO;
        words.0.copy_from_slice(&rows);
        words
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Active lanes equal `sha2::compress512`; inactive lanes are unchanged.
    #[test]
    fn every_kernel_matches_sha2_per_lane(
        state in lane_words::<8>(),
        block in lane_words::<16>(),
        active in 0..=255u8,
    ) {
        let expected = reference(&state, &block, active);
        for kernel in available_kernels() {
            let mut got = state;
            kernel.compress(&mut got, &block, active);
            for lane in 0..MAX_LANES {
                if active & (1 << lane) != 0 {
                    prop_assert_eq!(got.lane(lane), expected.lane(lane), "{} lane {}", kernel.as_str(), lane);
                } else {
                    prop_assert_eq!(got.lane(lane), state.lane(lane), "{} inactive lane {}", kernel.as_str(), lane);
                }
            }
        }
    }
}

/// SHA-512("abc") (FIPS 180-4 example, one block): every kernel, every lane.
#[test]
fn abc_known_answer_every_kernel_every_lane() {
    // The padded block: "abc", the 1 bit, zeros, and the length 24 bits in W_15.
    let mut words = [0u64; 16];
    words[0] = 0x6162_6380_0000_0000;
    words[15] = 24;
    let block = LaneWords(words.map(|w| [w; MAX_LANES]));
    let expected: [u64; 8] = [
        0xddaf35a193617aba,
        0xcc417349ae204131,
        0x12e6fa4e89a97ea2,
        0x0a9eeee64b55d39a,
        0x2192992a274fc1a8,
        0x36ba3c23a3feebbd,
        0x454d4423643ce80e,
        0x2a9ac94fa54ca49f,
    ];
    for kernel in available_kernels() {
        let mut state = LaneState::splat(&IV);
        kernel.compress(&mut state, &block, 0xFF);
        for lane in 0..MAX_LANES {
            assert_eq!(
                state.lane(lane),
                expected,
                "{} lane {lane}",
                kernel.as_str()
            );
        }
    }
}

/// One lane at a time: the other seven keep the IV.
#[test]
fn single_active_lane_every_kernel() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5ead);
    let mut block = LaneBlock::ZERO;
    block.0.iter_mut().flatten().for_each(|w| *w = rng.gen());
    for kernel in available_kernels() {
        for lane in 0..MAX_LANES {
            let mut state = LaneState::splat(&IV);
            kernel.compress(&mut state, &block, 1 << lane);
            let expected = reference(&LaneState::splat(&IV), &block, 1 << lane);
            assert_eq!(state, expected, "{} lane {lane}", kernel.as_str());
        }
    }
}

/// 1000 compressions in a row (random blocks, random active masks, all lanes active every
/// tenth step) equal the scalar kernel's chain at every step, so errors cannot cancel.
#[test]
fn chained_compressions_match_scalar() {
    for kernel in available_kernels() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(0xc4a1);
        let mut state = LaneState::ZERO;
        state.0.iter_mut().flatten().for_each(|w| *w = rng.gen());
        let mut expected = state;
        for step in 0..1000 {
            let mut block = LaneBlock::ZERO;
            block.0.iter_mut().flatten().for_each(|w| *w = rng.gen());
            let active = if step % 10 == 0 { 0xFF } else { rng.gen() };
            kernel.compress(&mut state, &block, active);
            Kernel::Scalar.compress(&mut expected, &block, active);
            assert_eq!(state, expected, "{} step {step}", kernel.as_str());
        }
    }
}

/// Not a benchmark: a sanity check of the speed of each kernel, all lanes active. Run with
/// `cargo test --release -p shardline-auth -- --ignored kernel_speed --nocapture`.
#[test]
#[ignore]
fn kernel_speed() {
    const COMPRESSIONS: u32 = 1_000_000;
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let mut block = LaneBlock::ZERO;
    block.0.iter_mut().flatten().for_each(|w| *w = rng.gen());
    for kernel in available_kernels() {
        let mut state = LaneState::splat(&IV);
        let start = std::time::Instant::now();
        for _ in 0..COMPRESSIONS {
            kernel.compress(
                std::hint::black_box(&mut state),
                std::hint::black_box(&block),
                0xFF,
            );
        }
        let elapsed = start.elapsed();
        std::hint::black_box(&state);
        let per_compression = elapsed.as_secs_f64() * 1e9 / f64::from(COMPRESSIONS);
        println!(
            "{:>6}: {:8.1} ns per 8-lane compression, {:6.1} ns per compression per lane",
            kernel.as_str(),
            per_compression,
            per_compression / MAX_LANES as f64,
        );
    }
}
