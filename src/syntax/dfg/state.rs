//! The reaching definitions both data-flow walks thread through the tree: key -> the
//! tokens that may have defined it last, with an undo log, so that branches cost what they
//! change rather than a copy of the whole state (DFG.py copies its `states` dict at every
//! node; a snapshot per branch would make a long snippet quadratic).
//!
//! A branch is walked from a mark, its changes taken as a [`Diff`] (and undone), and the
//! branches' ends merged with [`States::merge`]: per key, the union of the values at each
//! branch's end. Values are sorted token lists without duplicates.

use std::collections::HashMap;

/// A key: the study's token text, or (scope, symbol) for the refined graph.
pub(super) type Key = u64;

/// The changes of one branch: key -> its value at the branch's end.
pub(super) type Diff = HashMap<Key, Vec<u32>>;

/// Key -> definition tokens, with an undo log.
#[derive(Debug, Default)]
pub(super) struct States {
    map: HashMap<Key, Vec<u32>>,
    /// (key, value before the change), oldest first.
    log: Vec<(Key, Option<Vec<u32>>)>,
}

impl States {
    pub fn get(&self, k: Key) -> Option<&Vec<u32>> {
        self.map.get(&k)
    }

    pub fn contains(&self, k: Key) -> bool {
        self.map.contains_key(&k)
    }

    pub fn set(&mut self, k: Key, v: Vec<u32>) {
        let old = self.map.insert(k, v);
        self.log.push((k, old));
    }

    /// A point to take a diff from.
    pub fn mark(&self) -> usize {
        self.log.len()
    }

    /// The changes since `mark` (their current values), undone.
    pub fn take_diff(&mut self, mark: usize) -> Diff {
        let mut diff = Diff::new();
        while self.log.len() > mark {
            let Some((k, old)) = self.log.pop() else {
                break;
            };
            // Newest first: the first time a key comes up, its value is the current one.
            let cur = match old {
                Some(v) => self.map.insert(k, v),
                None => self.map.remove(&k),
            };
            if let Some(cur) = cur {
                diff.entry(k).or_insert(cur);
            }
        }
        diff
    }

    /// Merge branch ends into the current state. Branch j started at `marks[j]` (a mark
    /// not undone since: the state then is the current one minus the changes logged
    /// after it) and changed `diffs[j]`; with `include_current`, the current state is one
    /// more end (a fall-through). Every key changed by a branch or since the first mark
    /// gets the union of its values at the ends. `marks` must not decrease.
    pub fn merge(&mut self, marks: &[usize], diffs: Vec<Diff>, include_current: bool) {
        debug_assert_eq!(marks.len(), diffs.len());
        debug_assert!(marks.windows(2).all(|w| w[0] <= w[1]));
        let Some(&m0) = marks.first() else { return };
        // History since the first mark: per key, (log position, value before) in order.
        let mut hist: HashMap<Key, Vec<usize>> = HashMap::new();
        for (p, (k, _)) in self.log.iter().enumerate().skip(m0) {
            hist.entry(*k).or_default().push(p);
        }
        let mut keys: Vec<Key> = diffs
            .iter()
            .flat_map(|d| d.keys().copied())
            .chain(hist.keys().copied())
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let n = marks.len();
        // Branches whose mark lies in (lo, hi] (positions): index range.
        let range = |lo: Option<usize>, hi: Option<usize>| -> (usize, usize) {
            let a = lo.map_or(0, |lo| marks.partition_point(|&m| m <= lo));
            let b = hi.map_or(n, |hi| marks.partition_point(|&m| m <= hi));
            (a, b)
        };
        let mut updates = Vec::new();
        for k in keys {
            let mut vals: Vec<u32> = Vec::new();
            // Branches that changed k (sorted indices) contribute their end value.
            let changed: Vec<usize> = (0..n).filter(|&j| diffs[j].contains_key(&k)).collect();
            for &j in &changed {
                vals.extend_from_slice(&diffs[j][&k]);
            }
            // The others contribute k's value at their mark.
            let others_in = |(a, b): (usize, usize)| {
                let c = changed.partition_point(|&j| j < b) - changed.partition_point(|&j| j < a);
                c < b - a
            };
            let positions = hist.get(&k).map(Vec::as_slice).unwrap_or(&[]);
            let mut prev: Option<usize> = None;
            for &p in positions {
                // The value before entry p held at marks in (prev, p].
                if others_in(range(prev, Some(p))) {
                    if let Some(old) = &self.log[p].1 {
                        vals.extend_from_slice(old);
                    }
                }
                prev = Some(p);
            }
            if include_current || others_in(range(prev, None)) {
                if let Some(cur) = self.map.get(&k) {
                    vals.extend_from_slice(cur);
                }
            }
            vals.sort_unstable();
            vals.dedup();
            let same = match self.map.get(&k) {
                Some(cur) => *cur == vals,
                None => vals.is_empty(),
            };
            if !same && !vals.is_empty() {
                updates.push((k, vals));
            }
        }
        for (k, v) in updates {
            self.set(k, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branches_merge_to_the_union_of_their_ends() {
        let mut s = States::default();
        s.set(1, vec![10]);
        let m = s.mark();
        s.set(1, vec![20]);
        s.set(2, vec![21]);
        let d1 = s.take_diff(m);
        assert_eq!(s.get(1), Some(&vec![10]));
        assert_eq!(s.get(2), None);
        s.set(1, vec![30]);
        let d2 = s.take_diff(m);
        // if/else: both ends; key 2 only exists at one end.
        s.merge(&[m, m], vec![d1.clone(), d2], false);
        assert_eq!(s.get(1), Some(&vec![20, 30]));
        assert_eq!(s.get(2), Some(&vec![21]));
        // Undo the merge, then an if without else: the state before is one more end.
        let _ = s.take_diff(m);
        s.merge(&[m], vec![d1], true);
        assert_eq!(s.get(1), Some(&vec![10, 20]));
    }

    #[test]
    fn a_branch_started_later_sees_the_changes_before_its_mark() {
        // if c0: x = 20  elif (c1 binds x = 15): x = 30   (no else)
        let mut s = States::default();
        s.set(1, vec![10]);
        let m0 = s.mark();
        s.set(1, vec![20]);
        let d0 = s.take_diff(m0);
        s.set(1, vec![15]); // the elif condition, not undone
        let m1 = s.mark();
        s.set(1, vec![30]);
        let d1 = s.take_diff(m1);
        // Ends: {20}, {30}, and the fall-through state after the last condition {15}.
        s.merge(&[m0, m1], vec![d0.clone(), d1.clone()], true);
        assert_eq!(s.get(1), Some(&vec![15, 20, 30]));
        // Same without the fall-through and with a branch that left x alone: it sees
        // x as it was at its own mark.
        let _ = s.take_diff(m1);
        s.merge(&[m0, m1], vec![Diff::new(), d1], false);
        // branch 0 left x alone at m0 (x = 10); branch 1 ended with 30.
        assert_eq!(s.get(1), Some(&vec![10, 30]));
    }
}
