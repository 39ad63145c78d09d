//! The ordered index of a sorted set: a skiplist with spans (Redis 7.0 `t_zset.c` `zskiplist`,
//! after William Pugh's "Skip Lists: A Probabilistic Alternative to Balanced Trees").
//!
//! Nodes live in an arena (`Vec<Node>`) and link to each other by index, so the structure needs
//! no `unsafe`; freed slots are reused. Index 0 is the header, a sentinel with [`MAX_LEVEL`]
//! levels and no element.
//!
//! Invariants (checked by [`SkipList::check`] in tests):
//! - Level 0 links every element in ascending (score, member bytes) order; the order is total
//!   because scores are never NaN and members are unique.
//! - A node of level `h` appears in the lists of levels `0..h`; each level's list is a
//!   sub-sequence of the level below.
//! - `levels[i].span` is the number of level-0 steps from the node to `levels[i].forward`
//!   (when `forward` is [`NIL`]: the number of elements after the node); so the sum of spans along any search path is the rank.
//! - `backward` links level 0 in reverse (the first element's is [`NIL`]); `tail` is the last
//!   element (or [`NIL`]); `level` is the height of the tallest element (at least 1).
//!
//! Costs: insert, delete, rank and select (element at a rank) are O(log n) expected; moving to
//! the next or previous element is O(1).

use bytes::Bytes;
use rand::Rng;
use smallvec::{smallvec, SmallVec};

/// Maximum node height (Redis `ZSKIPLIST_MAXLEVEL`).
pub const MAX_LEVEL: usize = 32;
/// Probability of a node reaching the next level (Redis `ZSKIPLIST_P`).
const P: f64 = 0.25;
/// No node.
pub const NIL: usize = usize::MAX;
/// The header's index.
const HEAD: usize = 0;

#[derive(Debug, Clone, Copy)]
struct Level {
    forward: usize,
    span: usize,
}

#[derive(Debug, Clone)]
struct Node {
    member: Bytes,
    score: f64,
    backward: usize,
    /// Inline up to two levels (94 % of nodes at p = 1/4): a visit then touches one cache line
    /// instead of following a pointer to a separate allocation, as Redis's node keeps its
    /// levels in its own allocation.
    levels: SmallVec<[Level; 2]>,
}

/// An ordered multiset of (score, member) pairs with rank queries; see the module doc. The
/// caller keeps members unique (the sorted set's member → score map does).
#[derive(Debug, Clone)]
pub struct SkipList {
    nodes: Vec<Node>,
    free: Vec<usize>,
    tail: usize,
    len: usize,
    level: usize,
}

impl Default for SkipList {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether (s1, m1) sorts before (s2, m2).
fn before(s1: f64, m1: &[u8], s2: f64, m2: &[u8]) -> bool {
    s1 < s2 || (s1 == s2 && m1 < m2)
}

fn random_level() -> usize {
    let mut rng = rand::thread_rng();
    let mut level = 1;
    while level < MAX_LEVEL && rng.gen::<f64>() < P {
        level += 1;
    }
    level
}

impl SkipList {
    /// An empty list.
    pub fn new() -> Self {
        let head = Node {
            member: Bytes::new(),
            score: 0.0,
            backward: NIL,
            levels: smallvec![
                Level {
                    forward: NIL,
                    span: 0
                };
                MAX_LEVEL
            ],
        };
        SkipList {
            nodes: vec![head],
            free: Vec::new(),
            tail: NIL,
            len: 0,
            level: 1,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The member of node `x`.
    pub fn member(&self, x: usize) -> &Bytes {
        &self.nodes[x].member
    }

    /// The score of node `x`.
    pub fn score(&self, x: usize) -> f64 {
        self.nodes[x].score
    }

    /// The node after `x`, or [`NIL`].
    pub fn next(&self, x: usize) -> usize {
        self.nodes[x].levels[0].forward
    }

    /// The node before `x`, or [`NIL`].
    pub fn prev(&self, x: usize) -> usize {
        self.nodes[x].backward
    }

    fn forward(&self, x: usize, i: usize) -> usize {
        self.nodes[x].levels[i].forward
    }

    fn span(&self, x: usize, i: usize) -> usize {
        self.nodes[x].levels[i].span
    }

    /// Inserts (score, member); the member must not be in the list (Redis `zslInsert`).
    pub fn insert(&mut self, score: f64, member: Bytes) {
        let mut update = [HEAD; MAX_LEVEL];
        let mut rank = [0usize; MAX_LEVEL];
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            rank[i] = if i == self.level - 1 { 0 } else { rank[i + 1] };
            loop {
                let f = self.forward(x, i);
                if f == NIL || !before(self.nodes[f].score, &self.nodes[f].member, score, &member) {
                    break;
                }
                rank[i] += self.span(x, i);
                x = f;
            }
            update[i] = x;
        }
        let height = random_level();
        if height > self.level {
            for i in self.level..height {
                rank[i] = 0;
                update[i] = HEAD;
                self.nodes[HEAD].levels[i].span = self.len;
            }
            self.level = height;
        }
        let node = Node {
            member,
            score,
            backward: if update[0] == HEAD { NIL } else { update[0] },
            levels: smallvec![
                Level {
                    forward: NIL,
                    span: 0
                };
                height
            ],
        };
        let new = match self.free.pop() {
            Some(slot) => {
                self.nodes[slot] = node;
                slot
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        };
        for i in 0..height {
            let prev = update[i];
            let prev_level = self.nodes[prev].levels[i];
            let before_new = rank[0] - rank[i];
            self.nodes[new].levels[i] = Level {
                forward: prev_level.forward,
                span: prev_level.span - before_new,
            };
            self.nodes[prev].levels[i] = Level {
                forward: new,
                span: before_new + 1,
            };
        }
        for (i, &prev) in update.iter().enumerate().take(self.level).skip(height) {
            self.nodes[prev].levels[i].span += 1;
        }
        let next = self.next(new);
        if next == NIL {
            self.tail = new;
        } else {
            self.nodes[next].backward = new;
        }
        self.len += 1;
    }

    /// Removes (score, member); whether it was there (Redis `zslDelete`).
    pub fn remove(&mut self, score: f64, member: &[u8]) -> bool {
        let mut update = [HEAD; MAX_LEVEL];
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            loop {
                let f = self.forward(x, i);
                if f == NIL || !before(self.nodes[f].score, &self.nodes[f].member, score, member) {
                    break;
                }
                x = f;
            }
            update[i] = x;
        }
        let x = self.next(update[0]);
        if x == NIL || self.nodes[x].score != score || self.nodes[x].member != member {
            return false;
        }
        for (i, &prev) in update.iter().enumerate().take(self.level) {
            if self.forward(prev, i) == x {
                let gone = self.nodes[x].levels[i];
                let level = &mut self.nodes[prev].levels[i];
                level.span = level.span + gone.span - 1;
                level.forward = gone.forward;
            } else {
                self.nodes[prev].levels[i].span -= 1;
            }
        }
        let (next, back) = (self.next(x), self.nodes[x].backward);
        if next == NIL {
            self.tail = back;
        } else {
            self.nodes[next].backward = back;
        }
        while self.level > 1 && self.forward(HEAD, self.level - 1) == NIL {
            self.level -= 1;
        }
        self.len -= 1;
        let node = &mut self.nodes[x];
        node.member = Bytes::new();
        node.levels = SmallVec::new();
        self.free.push(x);
        true
    }

    /// 1-based rank of (score, member), if present (Redis `zslGetRank`).
    pub fn rank(&self, score: f64, member: &[u8]) -> Option<usize> {
        let mut x = HEAD;
        let mut rank = 0;
        for i in (0..self.level).rev() {
            loop {
                let f = self.forward(x, i);
                if f == NIL {
                    break;
                }
                let node = &self.nodes[f];
                if !(before(node.score, &node.member, score, member)
                    || (node.score == score && node.member == member))
                {
                    break;
                }
                rank += self.span(x, i);
                x = f;
            }
            if x != HEAD && self.nodes[x].member == member {
                return Some(rank);
            }
        }
        None
    }

    /// The node at 1-based `rank`, or [`NIL`] (Redis `zslGetElementByRank`).
    pub fn at_rank(&self, rank: usize) -> usize {
        let mut x = HEAD;
        let mut traversed = 0;
        for i in (0..self.level).rev() {
            loop {
                let f = self.forward(x, i);
                if f == NIL || traversed + self.span(x, i) > rank {
                    break;
                }
                traversed += self.span(x, i);
                x = f;
            }
            if traversed == rank {
                return if x == HEAD { NIL } else { x };
            }
        }
        NIL
    }

    /// The first node (lowest) for which `above_min(score, member)` holds, with its 1-based
    /// rank; `above_min` must be monotone along the order (false, ..., false, true, ...).
    pub fn first_where(&self, above_min: impl Fn(f64, &[u8]) -> bool) -> Option<(usize, usize)> {
        let mut x = HEAD;
        let mut traversed = 0;
        for i in (0..self.level).rev() {
            loop {
                let f = self.forward(x, i);
                if f == NIL || above_min(self.nodes[f].score, &self.nodes[f].member) {
                    break;
                }
                traversed += self.span(x, i);
                x = f;
            }
        }
        let x = self.next(x);
        (x != NIL).then_some((x, traversed + 1))
    }

    /// The last node (highest) for which `below_max(score, member)` holds, with its 1-based
    /// rank; `below_max` must be monotone along the order (true, ..., true, false, ...).
    pub fn last_where(&self, below_max: impl Fn(f64, &[u8]) -> bool) -> Option<(usize, usize)> {
        let mut x = HEAD;
        let mut traversed = 0;
        for i in (0..self.level).rev() {
            loop {
                let f = self.forward(x, i);
                if f == NIL || !below_max(self.nodes[f].score, &self.nodes[f].member) {
                    break;
                }
                traversed += self.span(x, i);
                x = f;
            }
        }
        (x != HEAD).then_some((x, traversed))
    }

    /// Checks every invariant of the module doc (tests).
    #[cfg(test)]
    pub fn check(&self) {
        let mut order = Vec::new();
        let mut x = self.next(HEAD);
        let mut back = NIL;
        while x != NIL {
            assert_eq!(self.nodes[x].backward, back);
            order.push(x);
            back = x;
            x = self.next(x);
        }
        assert_eq!(order.len(), self.len);
        assert_eq!(self.tail, back);
        for pair in order.windows(2) {
            let (a, b) = (&self.nodes[pair[0]], &self.nodes[pair[1]]);
            assert!(before(a.score, &a.member, b.score, &b.member));
        }
        let position = |n: usize| -> usize {
            if n == HEAD {
                0
            } else {
                order
                    .iter()
                    .position(|&o| o == n)
                    .map_or(usize::MAX, |p| p + 1)
            }
        };
        for i in 0..MAX_LEVEL {
            let mut x = HEAD;
            loop {
                let f = self.forward(x, i);
                if f == NIL {
                    if i < self.level {
                        assert_eq!(self.span(x, i), self.len - position(x));
                    }
                    break;
                }
                assert!(i < self.level);
                assert_eq!(self.span(x, i), position(f) - position(x));
                x = f;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_remove_rank_select_against_a_sorted_vec() {
        let mut list = SkipList::new();
        let mut model: Vec<(f64, Vec<u8>)> = Vec::new();
        let mut rng = rand::thread_rng();
        for step in 0..3000 {
            let member = format!("m{}", rng.gen_range(0..400)).into_bytes();
            let present = model.iter().position(|(_, m)| *m == member);
            match present {
                Some(p) if step % 3 != 0 => {
                    let (score, _) = model.remove(p);
                    assert!(list.remove(score, &member));
                }
                Some(_) => {}
                None => {
                    let score = f64::from(rng.gen_range(-20..20)) / 2.0;
                    list.insert(score, Bytes::from(member.clone()));
                    model.push((score, member));
                    model.sort_by(|a, b| {
                        a.0.partial_cmp(&b.0)
                            .unwrap_or(std::cmp::Ordering::Equal)
                            .then(a.1.cmp(&b.1))
                    });
                }
            }
            if step % 100 == 0 {
                list.check();
            }
        }
        list.check();
        assert!(!list.remove(1000.0, b"none"));
        for (i, (score, member)) in model.iter().enumerate() {
            assert_eq!(list.rank(*score, member), Some(i + 1));
            let x = list.at_rank(i + 1);
            assert_eq!((list.score(x), &list.member(x)[..]), (*score, &member[..]));
        }
        assert_eq!(list.at_rank(model.len() + 1), NIL);
        assert_eq!(list.at_rank(0), NIL);
        let first = list.first_where(|s, _| s >= 0.0);
        let want = model.iter().position(|(s, _)| *s >= 0.0);
        assert_eq!(first.map(|(_, r)| r - 1), want);
        let last = list.last_where(|s, _| s <= 0.0);
        let want = model.iter().rposition(|(s, _)| *s <= 0.0);
        assert_eq!(last.map(|(_, r)| r - 1), want);
    }
}
