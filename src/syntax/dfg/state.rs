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
///
/// Changes are logged only while a branch is open ([`States::open`] .. [`States::close`]):
/// outside every branch nothing will be undone, so a long run of `if`s adding to one name
/// grows its definitions in place instead of copying them at each `if`.
#[derive(Debug, Default)]
pub(super) struct States {
    map: HashMap<Key, Vec<u32>>,
    /// (key, value before the change), oldest first.
    log: Vec<(Key, Option<Vec<u32>>)>,
    /// Open branch constructs.
    open: usize,
}

/// `dst ∪ add` into `dst` (both sorted, without duplicates).
fn union_in_place(dst: &mut Vec<u32>, add: &[u32]) {
    if add.is_empty() {
        return;
    }
    if dst.last().is_none_or(|&l| l < add[0]) {
        dst.extend_from_slice(add);
        return;
    }
    dst.extend_from_slice(add);
    dst.sort_unstable();
    dst.dedup();
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
        if self.open > 0 {
            self.log.push((k, old));
        }
    }

    /// Open a branch construct (its changes are logged until the matching
    /// [`States::close`]); returns a mark.
    pub fn open(&mut self) -> usize {
        self.open += 1;
        self.log.len()
    }

    /// Close the innermost branch construct.
    pub fn close(&mut self) {
        self.open = self.open.saturating_sub(1);
    }

    /// A point to take a diff from, inside an open construct.
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
        // Per key, the branches that changed it (in branch order).
        let mut changed_by: HashMap<Key, Vec<usize>> = HashMap::new();
        for (j, d) in diffs.iter().enumerate() {
            for &k in d.keys() {
                changed_by.entry(k).or_default().push(j);
            }
        }
        let mut keys: Vec<Key> = changed_by
            .keys()
            .copied()
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
            let logging = self.open > 0;
            let mut vals: Vec<u32> = Vec::new();
            let mut with_cur = false;
            // Branches that changed k (sorted indices) contribute their end value.
            let changed: &[usize] = changed_by.get(&k).map_or(&[], Vec::as_slice);
            for &j in changed {
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
                with_cur = true;
            }
            vals.sort_unstable();
            vals.dedup();
            match self.map.get_mut(&k) {
                // Nothing logged: add to the current list in place (usually an append:
                // branch definitions come after the ones before the branch).
                Some(cur) if with_cur && !logging => union_in_place(cur, &vals),
                Some(cur) if with_cur => {
                    let mut all = cur.clone();
                    union_in_place(&mut all, &vals);
                    if all != *cur {
                        updates.push((k, all));
                    }
                }
                Some(cur) => {
                    if *cur != vals && !vals.is_empty() {
                        updates.push((k, vals));
                    }
                }
                None => {
                    if !vals.is_empty() {
                        updates.push((k, vals));
                    }
                }
            }
        }
        for (k, v) in updates {
            self.set(k, v);
        }
        if self.open == 0 {
            // Nothing can be undone any more.
            self.log.clear();
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
        let outer = s.open(); // keeps the merges undoable for this test
        let m = s.open();
        s.set(1, vec![20]);
        s.set(2, vec![21]);
        let d1 = s.take_diff(m);
        assert_eq!(s.get(1), Some(&vec![10]));
        assert_eq!(s.get(2), None);
        s.set(1, vec![30]);
        let d2 = s.take_diff(m);
        // if/else: both ends; key 2 only exists at one end.
        s.close();
        s.merge(&[m, m], vec![d1.clone(), d2], false);
        assert_eq!(s.get(1), Some(&vec![20, 30]));
        assert_eq!(s.get(2), Some(&vec![21]));
        // Undo the merge, then an if without else: the state before is one more end.
        let _ = s.take_diff(m);
        s.merge(&[m], vec![d1], true);
        assert_eq!(s.get(1), Some(&vec![10, 20]));
        let _ = s.take_diff(outer);
        s.close();
        assert_eq!(s.get(1), Some(&vec![10]));
    }

    #[test]
    fn a_branch_started_later_sees_the_changes_before_its_mark() {
        // if c0: x = 20  elif (c1 binds x = 15): x = 30   (no else)
        let mut s = States::default();
        s.set(1, vec![10]);
        let outer = s.open();
        let m0 = s.open();
        s.set(1, vec![20]);
        let d0 = s.take_diff(m0);
        s.set(1, vec![15]); // the elif condition, not undone
        let m1 = s.mark();
        s.set(1, vec![30]);
        let d1 = s.take_diff(m1);
        // Ends: {20}, {30}, and the fall-through state after the last condition {15}.
        s.close();
        s.merge(&[m0, m1], vec![d0.clone(), d1.clone()], true);
        assert_eq!(s.get(1), Some(&vec![15, 20, 30]));
        // Same without the fall-through and with a branch that left x alone: it sees
        // x as it was at its own mark.
        let _ = s.take_diff(m1);
        s.merge(&[m0, m1], vec![Diff::new(), d1], false);
        // branch 0 left x alone at m0 (x = 10); branch 1 ended with 30.
        assert_eq!(s.get(1), Some(&vec![10, 30]));
        let _ = outer;
    }

    #[test]
    fn outside_every_branch_nothing_is_logged() {
        let mut s = States::default();
        for t in 0..1000u32 {
            // `if c: x = t` at top level
            let m = s.open();
            s.set(7, vec![t]);
            let d = s.take_diff(m);
            s.close();
            s.merge(&[m], vec![d], true);
        }
        assert_eq!(s.get(7).map(Vec::len), Some(1000));
        assert_eq!(s.mark(), 0, "no log kept at top level");
    }
}
