//! The scalar kernel: `sha2::compress512` once per active lane.

use sha2::digest::generic_array::GenericArray;

use super::{LaneBlock, LaneState, MAX_LANES};

/// See [`super::Kernel::compress`].
pub(super) fn compress(state: &mut LaneState, block: &LaneBlock, active: u8) {
    let mut bytes = [0u8; 128];
    for lane in (0..MAX_LANES).filter(|l| active & (1 << l) != 0) {
        for (chunk, word) in bytes.chunks_exact_mut(8).zip(block.lane(lane)) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        let mut words = state.lane(lane);
        sha2::compress512(
            &mut words,
            std::slice::from_ref(GenericArray::from_slice(&bytes)),
        );
        state.set_lane(lane, &words);
    }
    zeroize::Zeroize::zeroize(&mut bytes);
}
