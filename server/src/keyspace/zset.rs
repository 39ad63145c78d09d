//! The sorted set value (Redis 7.0 `t_zset.c` `zset`): a member → score map for O(1) score
//! lookup next to a [`SkipList`] ordered by (score, member bytes) for O(log n) insert, delete,
//! rank and select. Scores are never NaN (commands refuse them), so the order is total.

use std::collections::HashMap;

use bytes::Bytes;

use super::skiplist::{SkipList, NIL};

/// A sorted set: unique members, each with an `f64` score (never NaN).
#[derive(Debug, Clone, Default)]
pub struct ZSet {
    scores: HashMap<Bytes, f64>,
    list: SkipList,
}

impl PartialEq for ZSet {
    fn eq(&self, other: &Self) -> bool {
        self.scores == other.scores
    }
}

// Scores are never NaN, so `==` on them is an equivalence.
impl Eq for ZSet {}

impl ZSet {
    /// An empty sorted set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// Whether there is no member.
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// The score of `member`.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }

    /// Sets `member`'s score to `score` (not NaN), adding the member if new; returns the old
    /// score. O(log n).
    ///
    /// A score of -0 is stored as 0: Redis keeps small sorted sets as listpacks whose scores
    /// are written by `d2string`, which prints -0 as `0`, so after `ZADD z -0 m` redis-server
    /// 7.0.15 answers `ZSCORE z m` with `0` (the reply of the command itself is not affected).
    pub fn insert(&mut self, member: Bytes, score: f64) -> Option<f64> {
        debug_assert!(!score.is_nan());
        let score = if score == 0.0 { 0.0 } else { score };
        match self.scores.get_mut(&member) {
            Some(old) => {
                let previous = *old;
                if previous != score || previous.to_bits() != score.to_bits() {
                    *old = score;
                    self.list.remove(previous, &member);
                    self.list.insert(score, member);
                }
                Some(previous)
            }
            None => {
                self.scores.insert(member.clone(), score);
                self.list.insert(score, member);
                None
            }
        }
    }

    /// Removes `member`; returns its score. O(log n).
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let score = self.scores.remove(member)?;
        self.list.remove(score, member);
        Some(score)
    }

    /// 0-based rank of `member` in ascending order. O(log n).
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let score = self.score(member)?;
        self.list.rank(score, member).map(|r| r - 1)
    }

    /// The member and score at 0-based `rank` (ascending). O(log n).
    pub fn at(&self, rank: usize) -> Option<(&Bytes, f64)> {
        let x = self.list.at_rank(rank + 1);
        (x != NIL).then(|| (self.list.member(x), self.list.score(x)))
    }

    /// 0-based rank of the first element for which `above_min(score, member)` holds
    /// (monotone along the order). O(log n).
    pub fn first_rank_where(&self, above_min: impl Fn(f64, &[u8]) -> bool) -> Option<usize> {
        self.list.first_where(above_min).map(|(_, r)| r - 1)
    }

    /// 0-based rank of the last element for which `below_max(score, member)` holds
    /// (monotone along the order). O(log n).
    pub fn last_rank_where(&self, below_max: impl Fn(f64, &[u8]) -> bool) -> Option<usize> {
        self.list.last_where(below_max).map(|(_, r)| r - 1)
    }

    /// Elements from 0-based `rank` on, ascending (`rev` false) or descending (`rev` true: from
    /// `rank` down to 0). O(log n) to start, O(1) per element.
    pub fn iter_from(&self, rank: usize, rev: bool) -> Iter<'_> {
        Iter {
            list: &self.list,
            at: self.list.at_rank(rank + 1),
            rev,
        }
    }

    /// Every element in ascending order.
    pub fn iter(&self) -> Iter<'_> {
        self.iter_from(0, false)
    }

    /// Every (member, score) in the map's (arbitrary) order.
    pub fn entries(&self) -> impl Iterator<Item = (&Bytes, f64)> {
        self.scores.iter().map(|(m, s)| (m, *s))
    }
}

/// Iterator over (member, score) in rank order; see [`ZSet::iter_from`].
pub struct Iter<'a> {
    list: &'a SkipList,
    at: usize,
    rev: bool,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a Bytes, f64);

    fn next(&mut self) -> Option<Self::Item> {
        if self.at == NIL {
            return None;
        }
        let x = self.at;
        self.at = if self.rev {
            self.list.prev(x)
        } else {
            self.list.next(x)
        };
        Some((self.list.member(x), self.list.score(x)))
    }
}

impl FromIterator<(Bytes, f64)> for ZSet {
    fn from_iter<I: IntoIterator<Item = (Bytes, f64)>>(items: I) -> Self {
        let mut set = ZSet::new();
        for (member, score) in items {
            set.insert(member, score);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_ranks_and_iteration() {
        let mut z = ZSet::new();
        assert_eq!(z.insert(Bytes::from("b"), 2.0), None);
        assert_eq!(z.insert(Bytes::from("a"), 2.0), None);
        assert_eq!(z.insert(Bytes::from("c"), 1.0), None);
        assert_eq!(z.insert(Bytes::from("c"), 3.0), Some(1.0));
        let order: Vec<_> = z.iter().map(|(m, s)| (m.clone(), s)).collect();
        assert_eq!(
            order,
            vec![
                (Bytes::from("a"), 2.0),
                (Bytes::from("b"), 2.0),
                (Bytes::from("c"), 3.0)
            ]
        );
        assert_eq!(z.rank(b"c"), Some(2));
        assert_eq!(z.at(1).map(|(m, _)| m.clone()), Some(Bytes::from("b")));
        let back: Vec<_> = z.iter_from(1, true).map(|(m, _)| m.clone()).collect();
        assert_eq!(back, vec![Bytes::from("b"), Bytes::from("a")]);
        assert_eq!(z.remove(b"a"), Some(2.0));
        assert_eq!(z.remove(b"a"), None);
        assert_eq!(z.rank(b"b"), Some(0));
        assert_eq!(z.first_rank_where(|s, _| s > 2.0), Some(1));
        assert_eq!(z.last_rank_where(|s, _| s < 2.0), None);
        assert_eq!(z.len(), 2);
    }
}
