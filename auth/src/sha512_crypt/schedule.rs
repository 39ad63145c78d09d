//! Step 21's round counter (Drepper, 2008): which of the eight message layouts round `i`
//! hashes, shared by the one-at-a-time and the batched computation.

use super::state::{ROUNDS_MAX, ROUNDS_MIN};

/// Rounds done out of a total, and the layout of the next round.
///
/// Round `i` hashes layout `(i odd) | (i%3≠0)<<1 | (i%7≠0)<<2` (0–7): C or P first, S or
/// not, P or not, P or C last. The remainders are counted, not divided, per round.
#[derive(Debug, Clone, Copy)]
pub(super) struct RoundSchedule {
    rounds: u32,
    done: u32,
    mod3: u32,
    mod7: u32,
}

impl RoundSchedule {
    /// `rounds` clamped to [`ROUNDS_MIN`]..=[`ROUNDS_MAX`], none done.
    pub(super) fn new(rounds: u32) -> Self {
        RoundSchedule {
            rounds: rounds.clamp(ROUNDS_MIN, ROUNDS_MAX),
            done: 0,
            mod3: 0,
            mod7: 0,
        }
    }

    /// Total rounds, after clamping.
    pub(super) fn rounds(&self) -> u32 {
        self.rounds
    }

    /// Rounds still to run.
    pub(super) fn remaining(&self) -> u32 {
        self.rounds - self.done
    }

    /// Runs at most `max_rounds` rounds, calling `round(layout)` for each in order; returns
    /// `true` once all rounds are done (at once if they already were).
    #[inline]
    pub(super) fn run(&mut self, max_rounds: u32, mut round: impl FnMut(usize)) -> bool {
        let end = self.done.saturating_add(max_rounds).min(self.rounds);
        let (mut i, mut m3, mut m7) = (self.done, self.mod3, self.mod7);
        while i < end {
            round((i & 1) as usize | (usize::from(m3 != 0) << 1) | (usize::from(m7 != 0) << 2));
            i += 1;
            m3 = if m3 == 2 { 0 } else { m3 + 1 };
            m7 = if m7 == 6 { 0 } else { m7 + 1 };
        }
        self.done = i;
        self.mod3 = m3;
        self.mod7 = m7;
        self.done == self.rounds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_follow_i_mod_2_3_7_across_resumes() {
        let mut s = RoundSchedule::new(1000);
        let mut seen = Vec::new();
        for step in [1, 6, 35, 100] {
            assert!(!s.run(step, |k| seen.push(k)));
        }
        assert!(s.run(u32::MAX, |k| seen.push(k)));
        assert_eq!(seen.len(), 1000);
        for (i, k) in seen.into_iter().enumerate() {
            let want = (i % 2) | usize::from(i % 3 != 0) << 1 | usize::from(i % 7 != 0) << 2;
            assert_eq!(k, want, "round {i}");
        }
        assert_eq!((s.rounds(), s.remaining()), (1000, 0));
        assert!(s.run(5, |_| panic!("no round after the last")));
        assert_eq!(RoundSchedule::new(10).rounds(), ROUNDS_MIN);
    }
}
