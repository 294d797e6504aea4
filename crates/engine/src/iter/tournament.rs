//! A winner tree: the best of `k` slots, kept current in `O(log k)` after a
//! change to *any* slot.
//!
//! Why not a binary heap or a loser tree: a merge iterated from both ends
//! sometimes changes a slot that is not the one it just took from (the
//! other end drained a source, so the entry this end would take next now
//! sits in the other end's buffer). A heap cannot reposition or remove an
//! arbitrary element without stale entries and cloned keys; a loser tree can
//! only replay the path of the previous winner. A winner tree recomputes any
//! leaf-to-root path from the children, so every change costs `log k`
//! comparisons and the tree holds only slot numbers: keys stay in the slots.

/// How two slots compare; the merge supplies one view per direction.
pub(super) trait Contest {
    /// Whether `slot` has a candidate at all.
    fn present(&self, slot: usize) -> bool;
    /// Whether the candidate of `a` strictly ranks ahead of that of `b`
    /// (both present).
    fn beats(&self, a: usize, b: usize) -> bool;
}

/// The winners of a complete binary tournament over slots `0..k`.
///
/// Node 1 is the root, node `n` has children `2n` and `2n + 1`, and slot `i`
/// is leaf `width + i`. Of two equal candidates the lower slot wins: the left
/// subtree holds the lower slots and a right child must strictly beat it.
#[derive(Debug)]
pub(super) struct WinnerTree {
    /// `nodes[n]`: the winning slot of the subtree at `n` (`None` if no slot
    /// in it is present). `nodes[0]` is unused.
    nodes: Vec<Option<usize>>,
    /// Number of leaves: `k` rounded up to a power of two (at least 1).
    width: usize,
}

impl WinnerTree {
    /// Plays the whole tournament over `slots` slots.
    pub(super) fn build(slots: usize, contest: &impl Contest) -> Self {
        let width = slots.next_power_of_two();
        let mut nodes = vec![None; 2 * width];
        for slot in 0..slots {
            nodes[width + slot] = contest.present(slot).then_some(slot);
        }
        let mut tree = Self { nodes, width };
        for node in (1..width).rev() {
            tree.replay(node, contest);
        }
        tree
    }

    /// The slot whose candidate ranks first, `None` if no slot is present.
    pub(super) fn winner(&self) -> Option<usize> {
        self.nodes[1]
    }

    /// Re-plays the matches on the path of `slot` after its candidate
    /// changed (appeared, disappeared, or was replaced).
    pub(super) fn update(&mut self, slot: usize, contest: &impl Contest) {
        let mut node = self.width + slot;
        self.nodes[node] = contest.present(slot).then_some(slot);
        while node > 1 {
            node /= 2;
            self.replay(node, contest);
        }
    }

    /// Decides inner node `node` from its two children.
    fn replay(&mut self, node: usize, contest: &impl Contest) {
        let (left, right) = (self.nodes[2 * node], self.nodes[2 * node + 1]);
        self.nodes[node] = match (left, right) {
            (Some(l), Some(r)) => Some(if contest.beats(r, l) { r } else { l }),
            (one, None) | (None, one) => one,
        };
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Slots holding optional numbers; smaller wins.
    struct Values(Vec<Option<u8>>);

    impl Contest for Values {
        fn present(&self, slot: usize) -> bool {
            self.0[slot].is_some()
        }
        fn beats(&self, a: usize, b: usize) -> bool {
            self.0[a] < self.0[b]
        }
    }

    /// The lowest slot holding the smallest value.
    fn expected(values: &Values) -> Option<usize> {
        (0..values.0.len())
            .filter_map(|slot| values.0[slot].map(|v| (v, slot)))
            .min()
            .map(|(_, slot)| slot)
    }

    #[test]
    fn no_slots_has_no_winner() {
        assert_eq!(WinnerTree::build(0, &Values(Vec::new())).winner(), None);
    }

    proptest! {
        #[test]
        fn winner_tracks_updates_of_any_slot(
            initial in prop::collection::vec(prop::option::of(0..8u8), 1..12),
            changes in prop::collection::vec((any::<prop::sample::Index>(), prop::option::of(0..8u8)), 0..24),
        ) {
            let mut values = Values(initial);
            let mut tree = WinnerTree::build(values.0.len(), &values);
            prop_assert_eq!(tree.winner(), expected(&values));
            for (index, value) in changes {
                let slot = index.index(values.0.len());
                values.0[slot] = value;
                tree.update(slot, &values);
                prop_assert_eq!(tree.winner(), expected(&values));
            }
        }
    }
}
