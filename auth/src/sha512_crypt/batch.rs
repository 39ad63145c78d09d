//! Up to eight SHA-512-crypt computations in lock-step on the multi-buffer SHA-512 kernel.
//!
//! Step 21's round `i` hashes one of eight message layouts chosen by `i % 2`, `i % 3` and
//! `i % 7` only, so computations with the same round count pick the same layout in every
//! round, whatever their passwords and salts: lane `l` of the kernel carries computation
//! `l`, and one kernel call per 128-byte block advances them all. Lengths differ between
//! lanes, so a layout can be one block long in one lane and two (or more, for long
//! passwords) in another: the kernel runs the longest lane's block count and a lane whose
//! message has ended is masked out of the later blocks (its chaining value is kept).
//!
//! What one lane costs depends only on the block counts of the batch, that is on the
//! lengths of the batch's passwords and salts, never on their bytes: no branch and no
//! memory index depends on a password byte.

use zeroize::Zeroize;

use crate::sha512_lanes::{Kernel, LaneBlock, LaneState, IV, MAX_LANES};

use super::schedule::RoundSchedule;
use super::state::{padded_message, CryptDigest, Prepared};

/// One of step 21's eight layouts for every lane, as message words with a 64-byte hole
/// for C (Drepper, 2008, step 21, laid out as in [`super::Sha512CryptState`]).
struct LaneLayout {
    /// `blocks[b].0[j][lane]`: word `j` of block `b` of the lane's padded message; as many
    /// blocks as the longest lane needs.
    blocks: Vec<LaneBlock>,
    /// `masks[b]`: the lanes whose message has a block `b`.
    masks: Vec<u8>,
    /// Byte offset of the hole for C in each lane's message.
    c_offsets: [usize; MAX_LANES],
}

impl LaneLayout {
    fn new(messages: &[(Vec<u8>, usize)]) -> Self {
        let nblocks = messages
            .iter()
            .map(|(m, _)| m.len() / 128)
            .max()
            .unwrap_or(0);
        let mut blocks = vec![LaneBlock::ZERO; nblocks];
        let mut masks = vec![0u8; nblocks];
        let mut c_offsets = [0; MAX_LANES];
        for (lane, (msg, c_offset)) in messages.iter().enumerate() {
            c_offsets[lane] = *c_offset;
            for (b, block) in msg.chunks_exact(128).enumerate() {
                masks[b] |= 1 << lane;
                for (j, word) in block.chunks_exact(8).enumerate() {
                    let mut be = [0u8; 8];
                    be.copy_from_slice(word);
                    blocks[b].0[j][lane] = u64::from_be_bytes(be);
                    be.zeroize();
                }
            }
        }
        LaneLayout {
            blocks,
            masks,
            c_offsets,
        }
    }

    /// Writes each lane's C (its chaining value words, i.e. the digest bytes read
    /// big-endian) into the lane's hole, which may start at any byte.
    #[inline]
    fn insert_c(&mut self, c: &LaneState, lanes: usize) {
        for lane in 0..lanes {
            let offset = self.c_offsets[lane];
            let (first, shift) = (offset / 8, (offset % 8) as u32 * 8);
            let blocks = &mut self.blocks;
            if shift == 0 {
                for w in 0..8 {
                    *word(blocks, first + w, lane) = c.0[w][lane];
                }
            } else {
                // The hole covers the low bytes of `first`, whole words, and the high bytes
                // of `first + 8`; the bytes around it belong to the message.
                let keep_high = !(u64::MAX >> shift);
                let w0 = word(blocks, first, lane);
                *w0 = (*w0 & keep_high) | (c.0[0][lane] >> shift);
                for w in 1..8 {
                    *word(blocks, first + w, lane) =
                        (c.0[w - 1][lane] << (64 - shift)) | (c.0[w][lane] >> shift);
                }
                let w8 = word(blocks, first + 8, lane);
                *w8 = (c.0[7][lane] << (64 - shift)) | (*w8 & !keep_high);
            }
        }
    }
}

/// Word `g` of a lane's message (counted across blocks).
#[inline]
fn word(blocks: &mut [LaneBlock], g: usize, lane: usize) -> &mut u64 {
    &mut blocks[g / 16].0[g % 16][lane]
}

impl Drop for LaneLayout {
    fn drop(&mut self) {
        self.blocks.zeroize();
    }
}

/// Up to [`MAX_LANES`] SHA-512-crypt computations with one round count, run in lock-step:
/// prepared by [`new`](Self::new), advanced by [`run_rounds`](Self::run_rounds), completed
/// by [`finish`](Self::finish). Digests equal [`super::Sha512CryptState`]'s (and so
/// glibc's and libxcrypt's) byte for byte. Every buffer holding password-derived bytes is
/// wiped on drop.
pub struct Sha512CryptBatch {
    kernel: Kernel,
    lanes: usize,
    /// The eight round layouts, indexed like [`super::Sha512CryptState`]'s.
    layouts: Vec<LaneLayout>,
    /// The running digests C, one per lane (A before round 0).
    c: LaneState,
    schedule: RoundSchedule,
}

impl Sha512CryptBatch {
    /// Prepares one computation per `(password, salt)` pair (Drepper, 2008, steps 1–20 for
    /// each), all with `rounds` (clamped to [`super::ROUNDS_MIN`]..=[`super::ROUNDS_MAX`]); salts are cut
    /// to 16 bytes. `kernel` must be available on this CPU ([`Kernel::is_available`]); any
    /// kernel runs any batch size, [`Kernel::lanes`] is the size it runs best.
    ///
    /// # Panics
    /// If `jobs` is empty or longer than [`MAX_LANES`], or `kernel` is not available.
    pub fn new(kernel: Kernel, jobs: &[(&[u8], &[u8])], rounds: u32) -> Self {
        assert!(
            (1..=MAX_LANES).contains(&jobs.len()),
            "a batch holds 1 to {MAX_LANES} computations, not {}",
            jobs.len()
        );
        assert!(
            kernel.is_available(),
            "{} kernel not available",
            kernel.as_str()
        );
        let prepared: Vec<Prepared> = jobs
            .iter()
            .map(|(password, salt)| Prepared::new(password, salt))
            .collect();
        let mut c = LaneState::ZERO;
        for (lane, p) in prepared.iter().enumerate() {
            let mut words = [0u64; 8];
            for (w, chunk) in words.iter_mut().zip(p.a.chunks_exact(8)) {
                let mut be = [0u8; 8];
                be.copy_from_slice(chunk);
                *w = u64::from_be_bytes(be);
            }
            c.set_lane(lane, &words);
            words.zeroize();
        }
        let layouts = (0..8u8)
            .map(|k| {
                let mut messages: Vec<(Vec<u8>, usize)> = prepared
                    .iter()
                    .map(|p| padded_message(&p.round_parts(k)))
                    .collect();
                let layout = LaneLayout::new(&messages);
                for (msg, _) in &mut messages {
                    msg.zeroize();
                }
                layout
            })
            .collect();
        Sha512CryptBatch {
            kernel,
            lanes: jobs.len(),
            layouts,
            c,
            schedule: RoundSchedule::new(rounds),
        }
    }

    /// Computations in the batch (1 to [`MAX_LANES`]).
    pub fn len(&self) -> usize {
        self.lanes
    }

    /// Always `false`: a batch holds at least one computation.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The kernel the batch runs on.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Rounds of every computation, after clamping.
    pub fn rounds(&self) -> u32 {
        self.schedule.rounds()
    }

    /// Rounds still to run.
    pub fn remaining(&self) -> u32 {
        self.schedule.remaining()
    }

    /// Runs at most `max_rounds` rounds of step 21 in every lane; returns `true` once all
    /// rounds are done. Calling it again after completion does nothing and returns `true`.
    pub fn run_rounds(&mut self, max_rounds: u32) -> bool {
        let (kernel, lanes) = (self.kernel, self.lanes);
        let (layouts, c) = (&mut self.layouts, &mut self.c);
        self.schedule.run(max_rounds, |k| {
            let layout = &mut layouts[k];
            layout.insert_c(c, lanes);
            let mut state = LaneState::splat(&IV);
            for (block, &mask) in layout.blocks.iter().zip(&layout.masks) {
                kernel.compress(&mut state, block, mask);
            }
            // `state` is not wiped per round (as in the scalar path): it equals the new C,
            // which is wiped on drop.
            *c = state;
        })
    }

    /// Runs any remaining rounds and returns each computation's final digest (step 21's
    /// last C), in the order of the jobs given to [`new`](Self::new).
    pub fn finish(mut self) -> Vec<CryptDigest> {
        self.run_rounds(u32::MAX);
        (0..self.lanes)
            .map(|lane| {
                let mut bytes = [0u8; 64];
                for (chunk, w) in bytes.chunks_exact_mut(8).zip(self.c.lane(lane)) {
                    chunk.copy_from_slice(&w.to_be_bytes());
                }
                CryptDigest(bytes)
            })
            .collect()
    }
}

impl Drop for Sha512CryptBatch {
    fn drop(&mut self) {
        self.c.zeroize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel calls of one round of each layout: the active-lane mask of each block.
    fn work(batch: &Sha512CryptBatch) -> Vec<Vec<u8>> {
        batch.layouts.iter().map(|l| l.masks.clone()).collect()
    }

    #[test]
    fn work_depends_on_lengths_only() {
        let salt = b"0123456789abcdef".as_slice();
        let a: [(&[u8], &[u8]); 3] = [
            (b"short-pw-12b", salt),
            (b"twenty-byte-password", salt),
            (b"", b"s"),
        ];
        let b: [(&[u8], &[u8]); 3] = [
            (b"ZZZZZZZZZZZZ", salt),
            (
                b"\0\xff\0\xff\0\xff\0\xff\0\xff\0\xff\0\xff\0\xff\0\xff\0\xff",
                salt,
            ),
            (b"", b"t"),
        ];
        let (wa, wb) = (
            work(&Sha512CryptBatch::new(Kernel::Scalar, &a, 1000)),
            work(&Sha512CryptBatch::new(Kernel::Scalar, &b, 1000)),
        );
        assert_eq!(wa, wb, "same lengths, different bytes: same kernel calls");
        // Layout 7 (P, S, P, C): 64 + 2·12 + 16 + 17 padding = 121 bytes for the 12-byte
        // password (one block), 137 for the 20-byte one (two blocks).
        assert_eq!(wa[7], vec![0b111, 0b010]);
        let longer: [(&[u8], &[u8]); 3] = [(&[b'x'; 200], salt), a[1], a[2]];
        let wl = work(&Sha512CryptBatch::new(Kernel::Scalar, &longer, 1000));
        assert_eq!(
            wl[7],
            vec![0b111, 0b011, 0b001, 0b001],
            "a 200-byte password: 4 blocks"
        );
    }
}
