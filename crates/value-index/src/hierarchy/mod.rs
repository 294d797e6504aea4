//! Bloofi: a tree of Bloom filters whose inner nodes are the OR of their
//! children (Crainiceanu & Lemire 2015; Macyna & Ordonez use it for
//! non-key search).
//!
//! Shape: a B+-tree of order `d`. Every inner node holds at most `d`
//! children, every node other than the root at least `ceil(d / 2)`, and
//! all leaves hang at the same depth, so the depth is `O(log_d n)` (for
//! `d = 2` the lower bound is one child; see [`Hierarchy::check_invariants`]).
//! A search descends only into children whose bits match: a leaf is
//! returned exactly when its own filter says "maybe", because a matching
//! leaf's every ancestor holds its bits and matches too.
//!
//! Updates touch one root path: `insert` ORs the new leaf into the nodes
//! on its way down and splits a node that overflows; `remove` recomputes
//! the path bottom-up and merges or refills underfull nodes (`update.rs`).

mod check;
mod update;

use std::collections::HashMap;
use std::sync::Arc;

use sift_filter::{BloomShape, KeyHash, StandardBloom};

use crate::error::{Error, Result, check_shape};
use crate::probes::{Probes, count_ones, or_into};
use crate::stats::ProbeStats;

/// Index of a node in the arena.
type NodeId = usize;

/// What an inner node points at. All children of one node are of one kind:
/// leaves for the bottom level, nodes above it.
#[derive(Clone, Debug)]
enum Child {
    /// A leaf: its id and filter.
    Leaf(u64, Arc<StandardBloom>),
    /// An inner node one level down.
    Node(NodeId),
}

/// An inner node: the OR of its children's bits.
#[derive(Clone, Debug, Default)]
struct Node {
    /// `None` for the root (and for free slots).
    parent: Option<NodeId>,
    /// In tree order; at most `order` of them.
    children: Vec<Child>,
    /// `ceil(m / 64)` words: the OR of every child's bits.
    bits: Vec<u64>,
}

/// Per depth of a hierarchy, how many inner nodes it has and how full
/// their bits are: what the planner needs to predict how far a search
/// descends.
#[derive(Clone, Debug, PartialEq)]
pub struct InnerLevel {
    /// Inner nodes at this depth (the root's depth is 0).
    pub nodes: usize,
    /// Mean fraction of set bits over those nodes.
    pub mean_fill: f64,
    /// Mean over those nodes of `fill^k`: the chance that a node matches a
    /// value none of its leaves holds (a false positive that costs a
    /// descent).
    pub mean_match: f64,
}

/// A Bloofi hierarchy over leaf filters of one [`BloomShape`], updated in
/// place (see the module docs for the shape it keeps).
#[derive(Clone, Debug)]
pub struct Hierarchy {
    shape: BloomShape,
    order: usize,
    /// Words per bit array, `ceil(m / 64)`.
    words: usize,
    /// Arena of inner nodes; freed slots are listed in `free`.
    nodes: Vec<Node>,
    free: Vec<NodeId>,
    root: Option<NodeId>,
    /// Leaf id -> the bottom node holding it, for `O(depth)` removal.
    parent_of: HashMap<u64, NodeId>,
}

impl Hierarchy {
    /// An empty hierarchy of order `order` (at least 2) for leaves of
    /// `shape`.
    pub fn new(shape: BloomShape, order: usize) -> Result<Self> {
        check_shape(shape)?;
        if order < 2 {
            return Err(Error::InvalidOrder(order));
        }
        Ok(Self {
            shape,
            order,
            words: shape.bits.div_ceil(64) as usize,
            nodes: Vec::new(),
            free: Vec::new(),
            root: None,
            parent_of: HashMap::new(),
        })
    }

    /// Builds a hierarchy over `leaves` from scratch, bottom-up: leaves in
    /// id order, cut into `ceil(n / d)` groups of near-equal size, and so
    /// on up to one root. Errors on a shape mismatch or a repeated id.
    pub fn build(
        shape: BloomShape,
        order: usize,
        leaves: impl IntoIterator<Item = (u64, Arc<StandardBloom>)>,
    ) -> Result<Self> {
        let mut tree = Self::new(shape, order)?;
        let mut leaves: Vec<(u64, Arc<StandardBloom>)> = leaves.into_iter().collect();
        leaves.sort_unstable_by_key(|(id, _)| *id);
        for pair in leaves.windows(2) {
            if let [(a, _), (b, _)] = pair
                && a == b
            {
                return Err(Error::DuplicateLeaf(*a));
            }
        }
        for (_, filter) in &leaves {
            tree.check_leaf_shape(filter)?;
        }
        let mut level: Vec<Child> = leaves
            .into_iter()
            .map(|(id, filter)| Child::Leaf(id, filter))
            .collect();
        while !level.is_empty() {
            let groups = level.len().div_ceil(order);
            let (base, extra) = (level.len() / groups, level.len() % groups);
            let mut rest = level.into_iter();
            let mut next = Vec::with_capacity(groups);
            for g in 0..groups {
                let children: Vec<Child> =
                    rest.by_ref().take(base + usize::from(g < extra)).collect();
                let node = tree.alloc(None, children);
                tree.adopt(node);
                tree.recompute(node);
                next.push(Child::Node(node));
            }
            if let [Child::Node(root)] = next.as_slice() {
                tree.root = Some(*root);
                break;
            }
            level = next;
        }
        Ok(tree)
    }

    /// The shape every leaf has.
    #[must_use]
    pub fn shape(&self) -> BloomShape {
        self.shape
    }

    /// The most children an inner node holds.
    #[must_use]
    pub fn order(&self) -> usize {
        self.order
    }

    /// Number of leaves.
    #[must_use]
    pub fn len(&self) -> usize {
        self.parent_of.len()
    }

    /// Whether the hierarchy has no leaf.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.parent_of.is_empty()
    }

    /// Whether leaf `id` is in the hierarchy.
    #[must_use]
    pub fn contains(&self, id: u64) -> bool {
        self.parent_of.contains_key(&id)
    }

    /// Levels of inner nodes between the root and the leaves (0 when
    /// empty, 1 when the root holds the leaves directly).
    #[must_use]
    pub fn depth(&self) -> usize {
        let mut depth = 0;
        let mut at = self.root;
        while let Some(id) = at {
            depth += 1;
            at = match self.nodes[id].children.first() {
                Some(Child::Node(child)) => Some(*child),
                _ => None,
            };
        }
        depth
    }

    /// The root's bits: the OR of every leaf (`None` when empty). Two
    /// hierarchies over the same leaves have equal root bits whatever
    /// their shape.
    #[must_use]
    pub fn root_bits(&self) -> Option<&[u64]> {
        self.root.map(|r| self.nodes[r].bits.as_slice())
    }

    /// The ids of the leaves whose filter may hold `hash`, sorted. Adds
    /// the nodes and leaves it tested to `stats`.
    #[must_use]
    pub fn search(&self, hash: KeyHash, stats: &mut ProbeStats) -> Vec<u64> {
        let mut out = Vec::new();
        self.search_probes(&Probes::new(self.shape, hash), stats, &mut out);
        out.sort_unstable();
        out
    }

    /// Appends the matching leaf ids, in tree order, to `out`.
    pub(crate) fn search_probes(
        &self,
        probes: &Probes,
        stats: &mut ProbeStats,
        out: &mut Vec<u64>,
    ) {
        let Some(root) = self.root else { return };
        let mut stack = vec![root];
        while let Some(id) = stack.pop() {
            let node = &self.nodes[id];
            stats.inner_nodes_probed += 1;
            if !probes.matches(&node.bits) {
                continue;
            }
            for child in &node.children {
                match child {
                    Child::Node(c) => stack.push(*c),
                    Child::Leaf(leaf, filter) => {
                        stats.leaves_probed += 1;
                        if probes.matches(filter.words()) {
                            stats.leaves_positive += 1;
                            out.push(*leaf);
                        }
                    }
                }
            }
        }
    }

    /// Node count, fill and match chance per depth, root first.
    #[must_use]
    pub fn inner_levels(&self) -> Vec<InnerLevel> {
        let k = self.shape.probes as i32;
        let m = self.shape.bits as f64;
        let mut levels = Vec::new();
        let mut level: Vec<NodeId> = self.root.into_iter().collect();
        while !level.is_empty() {
            let fills: Vec<f64> = level
                .iter()
                .map(|&id| count_ones(&self.nodes[id].bits) as f64 / m)
                .collect();
            let n = fills.len() as f64;
            levels.push(InnerLevel {
                nodes: level.len(),
                mean_fill: fills.iter().sum::<f64>() / n,
                mean_match: fills.iter().map(|f| f.powi(k)).sum::<f64>() / n,
            });
            level = level
                .iter()
                .flat_map(|&id| &self.nodes[id].children)
                .filter_map(|c| match c {
                    Child::Node(n) => Some(*n),
                    Child::Leaf(..) => None,
                })
                .collect();
        }
        levels
    }

    /// `ShapeMismatch` unless `filter` has the hierarchy's shape.
    fn check_leaf_shape(&self, filter: &StandardBloom) -> Result<()> {
        if filter.shape() == self.shape {
            Ok(())
        } else {
            Err(Error::ShapeMismatch {
                expected: self.shape,
                found: filter.shape(),
            })
        }
    }

    /// A node holding `children` (back-pointers not yet fixed, bits zero).
    fn alloc(&mut self, parent: Option<NodeId>, children: Vec<Child>) -> NodeId {
        let node = Node {
            parent,
            children,
            bits: vec![0; self.words],
        };
        if let Some(id) = self.free.pop() {
            self.nodes[id] = node;
            id
        } else {
            self.nodes.push(node);
            self.nodes.len() - 1
        }
    }

    /// Returns `id` to the free list, dropping its bits.
    fn release(&mut self, id: NodeId) {
        self.nodes[id] = Node::default();
        self.free.push(id);
    }

    /// Points every child of `id` back at `id`.
    fn adopt(&mut self, id: NodeId) {
        let children = std::mem::take(&mut self.nodes[id].children);
        for child in &children {
            match child {
                Child::Leaf(leaf, _) => {
                    self.parent_of.insert(*leaf, id);
                }
                Child::Node(c) => self.nodes[*c].parent = Some(id),
            }
        }
        self.nodes[id].children = children;
    }

    /// Sets `id`'s bits to the OR of its children's.
    fn recompute(&mut self, id: NodeId) {
        let mut bits = std::mem::take(&mut self.nodes[id].bits);
        bits.clear();
        bits.resize(self.words, 0);
        for child in &self.nodes[id].children {
            or_into(&mut bits, self.child_bits(child));
        }
        self.nodes[id].bits = bits;
    }

    /// A child's bit array.
    fn child_bits<'a>(&'a self, child: &'a Child) -> &'a [u64] {
        match child {
            Child::Leaf(_, filter) => filter.words(),
            Child::Node(c) => &self.nodes[*c].bits,
        }
    }
}

#[cfg(test)]
mod tests;
