//! Search methods and the counters every search accumulates.

/// How a search finds the leaves that may hold a value. Every method
/// except [`Scan`](Method::Scan) returns exactly the leaves whose own
/// filter says "maybe"; they differ only in what they probe to get there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// No filter is read: every leaf is a candidate. Cheapest when nearly
    /// every leaf would match anyway.
    Scan,
    /// Each leaf's filter is probed in turn (`n` leaf probes).
    BloomScan,
    /// Descend the Bloofi tree from the root into matching children only.
    Hierarchy,
    /// AND the `k` probed rows of the bit-sliced layout; surviving
    /// columns are the candidates.
    Flat,
}

impl Method {
    /// Every method, in the order the planner breaks ties (cheaper
    /// bookkeeping first among equal estimates).
    pub const ALL: [Self; 4] = [Self::Flat, Self::Hierarchy, Self::BloomScan, Self::Scan];

    /// The methods that probe filters, in the same order.
    pub const PROBES: [Self; 3] = [Self::Flat, Self::Hierarchy, Self::BloomScan];
}

/// Work done by searches, accumulated (`+=`) by every search it is passed
/// to, so one value can sum a batch of queries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbeStats {
    /// Inner hierarchy nodes whose bits were tested.
    pub inner_nodes_probed: u64,
    /// Leaf filters whose bits were tested.
    pub leaves_probed: u64,
    /// Leaves returned as candidates (for `Scan`, every leaf).
    pub leaves_positive: u64,
    /// 64-bit row words ANDed by the bit-sliced layout.
    pub words_anded: u64,
}

impl ProbeStats {
    /// Adds `other`'s counts to `self`.
    pub fn add(&mut self, other: &Self) {
        self.inner_nodes_probed += other.inner_nodes_probed;
        self.leaves_probed += other.leaves_probed;
        self.leaves_positive += other.leaves_positive;
        self.words_anded += other.words_anded;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_sums_every_counter() {
        let mut a = ProbeStats {
            inner_nodes_probed: 1,
            leaves_probed: 2,
            leaves_positive: 3,
            words_anded: 4,
        };
        a.add(&a.clone());
        assert_eq!(
            a,
            ProbeStats {
                inner_nodes_probed: 2,
                leaves_probed: 4,
                leaves_positive: 6,
                words_anded: 8,
            }
        );
    }

    #[test]
    fn all_lists_each_method_once() {
        let mut all = Method::ALL.to_vec();
        all.dedup();
        assert_eq!(all.len(), 4);
    }
}
