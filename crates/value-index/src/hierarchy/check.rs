//! The structural invariants of a hierarchy, checked in full (for tests).

use std::collections::HashSet;

use super::{Child, Hierarchy, NodeId};
use crate::probes::or_into;

impl Hierarchy {
    /// Walks the whole tree and reports the first broken invariant:
    ///
    /// - every inner node's bits equal the OR of its children's bits;
    /// - no node has more than `order` children, none is empty, and every
    ///   node but the root has at least `ceil(order / 2)`;
    /// - all children of a node are of one kind and all leaves hang at one
    ///   depth;
    /// - parent pointers and the leaf-position map match the tree, every
    ///   leaf is reachable exactly once, and every arena slot is either
    ///   reachable or free;
    /// - for `order ≥ 3` the depth is at most `1 + log_t(n / 2)` with
    ///   `t = ceil(order / 2)` (the B-tree bound). Order 2 allows one-child
    ///   nodes, so removals can leave a tree as deep as it once was; only
    ///   the other invariants hold there.
    ///
    /// Costs a pass over every node: meant for tests, not for the engine.
    pub fn check_invariants(&self) -> Result<(), String> {
        let Some(root) = self.root else {
            return match (self.parent_of.len(), self.nodes.len() - self.free.len()) {
                (0, 0) => Ok(()),
                (leaves, nodes) => Err(format!("no root but {leaves} leaves, {nodes} live nodes")),
            };
        };
        if self.nodes[root].parent.is_some() {
            return Err("the root has a parent".into());
        }
        let mut seen_nodes = HashSet::new();
        let mut seen_leaves = HashSet::new();
        let mut leaf_depth = None;
        let mut stack: Vec<(NodeId, usize)> = vec![(root, 1)];
        while let Some((id, depth)) = stack.pop() {
            if !seen_nodes.insert(id) {
                return Err(format!("node {id} reached twice"));
            }
            let node = &self.nodes[id];
            let fan_out = node.children.len();
            if fan_out == 0 || fan_out > self.order {
                return Err(format!(
                    "node {id} has {fan_out} children, order {}",
                    self.order
                ));
            }
            if Some(id) != self.root && fan_out < self.min_children() {
                return Err(format!("node {id} is underfull: {fan_out} children"));
            }
            let mut or = vec![0; self.words];
            let leaves = node
                .children
                .iter()
                .filter(|c| matches!(c, Child::Leaf(..)))
                .count();
            if leaves != 0 && leaves != fan_out {
                return Err(format!("node {id} mixes leaves and nodes"));
            }
            for child in &node.children {
                or_into(&mut or, self.child_bits(child));
                match child {
                    Child::Leaf(leaf, filter) => {
                        if filter.shape() != self.shape {
                            return Err(format!("leaf {leaf} has shape {:?}", filter.shape()));
                        }
                        if !seen_leaves.insert(*leaf) {
                            return Err(format!("leaf {leaf} reached twice"));
                        }
                        if self.parent_of.get(leaf) != Some(&id) {
                            return Err(format!(
                                "leaf {leaf}: map says {:?}, tree says {id}",
                                self.parent_of.get(leaf)
                            ));
                        }
                        if *leaf_depth.get_or_insert(depth) != depth {
                            return Err(format!(
                                "leaf {leaf} at depth {depth}, others at {leaf_depth:?}"
                            ));
                        }
                    }
                    Child::Node(c) => {
                        if self.nodes[*c].parent != Some(id) {
                            return Err(format!("node {c} does not point back at {id}"));
                        }
                        stack.push((*c, depth + 1));
                    }
                }
            }
            if or != node.bits {
                return Err(format!("node {id} is not the OR of its children"));
            }
        }
        if seen_leaves.len() != self.parent_of.len() {
            return Err(format!(
                "{} leaves mapped, {} reachable",
                self.parent_of.len(),
                seen_leaves.len()
            ));
        }
        if seen_nodes.len() + self.free.len() != self.nodes.len() {
            return Err(format!(
                "{} nodes leaked",
                self.nodes.len() - self.free.len() - seen_nodes.len()
            ));
        }
        let depth = leaf_depth.unwrap_or(0);
        if depth != self.depth() {
            return Err(format!("depth() says {}, leaves at {depth}", self.depth()));
        }
        let t = self.min_children();
        if t >= 2 && depth >= 2 {
            let bound = 1.0 + (self.len() as f64 / 2.0).log(t as f64);
            if depth as f64 > bound + 1e-9 {
                return Err(format!(
                    "depth {depth} over the bound {bound:.2} for {} leaves",
                    self.len()
                ));
            }
        }
        Ok(())
    }
}
