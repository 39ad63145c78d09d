//! A shard-local cache of label children keyed by `&'static str`.
//!
//! `MetricVec::with_label_values` hashes the labels and takes a read lock shared by all
//! shards. Hot paths (one counter bump per command) instead scan a short vector of
//! already-resolved children, comparing the `&'static str` by address first and by content
//! second; only the first use of a label value goes to the family. The cache uses a
//! `RefCell`, so it is `Send` but not `Sync`: it belongs to one shard thread.

use std::cell::RefCell;

use prometheus::core::{MetricVec, MetricVecBuilder};

/// Resolves the child for `[shard, value]` in the family the cache was built over.
type Resolve<M> = Box<dyn Fn(&[&str]) -> prometheus::Result<M> + Send>;

/// How a label value is written into the exported label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LabelCase {
    /// Exported as given.
    AsGiven,
    /// Exported in ASCII lowercase (command names: `GET` → `get`).
    Lowercase,
}

/// Children of a `{shard, <label>}` family for one shard.
pub(crate) struct LabelCache<M> {
    resolve: Resolve<M>,
    shard: String,
    case: LabelCase,
    entries: RefCell<Vec<(&'static str, M)>>,
}

impl<M> LabelCache<M> {
    /// A cache over `family`, whose label names must be `[shard, <one more>]`.
    pub(crate) fn new<P>(family: &MetricVec<P>, shard: &str, case: LabelCase) -> Self
    where
        P: MetricVecBuilder<M = M> + 'static,
        M: Send + Sync,
    {
        let family = family.clone();
        Self {
            resolve: Box::new(move |values| family.get_metric_with_label_values(values)),
            shard: shard.to_owned(),
            case,
            entries: RefCell::new(Vec::new()),
        }
    }

    /// Runs `f` on the child for `value`, creating it on first use.
    ///
    /// Returns `None` only if the family rejects the label values (it cannot for families
    /// built by [`crate::Metrics`], which all have exactly two labels) or if `f` re-enters
    /// this cache.
    pub(crate) fn with<R>(&self, value: &'static str, f: impl FnOnce(&M) -> R) -> Option<R> {
        {
            let entries = self.entries.try_borrow().ok()?;
            // Callers pass the same `&'static str` each time: find it by address before
            // comparing any contents.
            if let Some((_, child)) = entries
                .iter()
                .find(|(key, _)| std::ptr::eq(*key, value))
                .or_else(|| entries.iter().find(|(key, _)| *key == value))
            {
                return Some(f(child));
            }
        }
        let child = match self.case {
            LabelCase::AsGiven => (self.resolve)(&[&self.shard, value]),
            LabelCase::Lowercase => (self.resolve)(&[&self.shard, &value.to_ascii_lowercase()]),
        }
        .ok()?;
        let result = f(&child);
        self.entries.try_borrow_mut().ok()?.push((value, child));
        Some(result)
    }

    /// Number of label values resolved so far.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.borrow().len()
    }
}
