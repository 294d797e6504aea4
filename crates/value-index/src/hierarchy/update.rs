//! Incremental updates: each touches the nodes on one root path (and, on
//! a split or merge, one sibling per level), never the whole tree.

use std::sync::Arc;

use sift_filter::StandardBloom;

use super::{Child, Hierarchy, NodeId};
use crate::error::{Error, Result};
use crate::probes::{added_bits, or_into};

impl Hierarchy {
    /// Adds leaf `id` with `filter`; errors (changing nothing) on a shape
    /// mismatch or an id already present.
    ///
    /// Placement follows Bloofi: from the root, descend into the child
    /// whose bits the leaf would change least (fewest newly set bits, then
    /// fewest children), so similar leaves share subtrees and inner nodes
    /// saturate more slowly. The leaf's bits are OR-ed into every node on
    /// the way; a node left with more than `order` children splits in two,
    /// as in a B-tree, possibly up to a new root.
    pub fn insert(&mut self, id: u64, filter: Arc<StandardBloom>) -> Result<()> {
        self.check_leaf_shape(&filter)?;
        if self.contains(id) {
            return Err(Error::DuplicateLeaf(id));
        }
        let Some(mut at) = self.root else {
            let root = self.alloc(None, vec![Child::Leaf(id, filter)]);
            self.adopt(root);
            self.recompute(root);
            self.root = Some(root);
            return Ok(());
        };
        loop {
            or_into(&mut self.nodes[at].bits, filter.words());
            let next = self.nodes[at]
                .children
                .iter()
                .filter_map(|c| match c {
                    Child::Node(n) => Some(*n),
                    Child::Leaf(..) => None,
                })
                .min_by_key(|&n| {
                    let node = &self.nodes[n];
                    (added_bits(&node.bits, filter.words()), node.children.len())
                });
            match next {
                Some(child) => at = child,
                None => break,
            }
        }
        self.nodes[at].children.push(Child::Leaf(id, filter));
        self.parent_of.insert(id, at);
        self.split_if_full(at);
        Ok(())
    }

    /// Removes leaf `id` and returns its filter; `UnknownLeaf` (changing
    /// nothing) if absent.
    ///
    /// The bottom node and then each ancestor recompute their bits from
    /// their children (an OR cannot be undone in place). A non-root node
    /// left with fewer than `ceil(order / 2)` children merges into an
    /// adjacent sibling if both fit in one node, else takes one child from
    /// it; a root with a single inner child hands the root over to it.
    pub fn remove(&mut self, id: u64) -> Result<Arc<StandardBloom>> {
        let Some(bottom) = self.parent_of.remove(&id) else {
            return Err(Error::UnknownLeaf(id));
        };
        let children = &mut self.nodes[bottom].children;
        let pos = children
            .iter()
            .position(|c| matches!(c, Child::Leaf(leaf, _) if *leaf == id));
        let filter = match pos.map(|p| children.remove(p)) {
            Some(Child::Leaf(_, filter)) => filter,
            // `parent_of` and the tree disagree: a bug, reported rather
            // than hidden (check_invariants catches it in tests).
            _ => return Err(Error::UnknownLeaf(id)),
        };
        let mut at = bottom;
        while let Some(parent) = self.nodes[at].parent {
            if self.nodes[at].children.len() < self.min_children() {
                self.rebalance(at, parent);
            } else {
                self.recompute(at);
            }
            at = parent;
        }
        self.settle_root(at);
        Ok(filter)
    }

    /// The fewest children a non-root node keeps: `ceil(order / 2)`, the
    /// B-tree bound that lets an underfull node always merge or borrow.
    pub(crate) fn min_children(&self) -> usize {
        self.order.div_ceil(2)
    }

    /// Splits `id` while it holds more than `order` children, moving the
    /// upper half into a new right sibling; climbs to the parent.
    fn split_if_full(&mut self, mut id: NodeId) {
        while self.nodes[id].children.len() > self.order {
            let len = self.nodes[id].children.len();
            let right = self.nodes[id].children.split_off(len - len / 2);
            let parent = self.nodes[id].parent;
            let sibling = self.alloc(parent, right);
            self.adopt(sibling);
            self.recompute(sibling);
            self.recompute(id);
            match parent {
                None => {
                    let root = self.alloc(None, vec![Child::Node(id), Child::Node(sibling)]);
                    self.adopt(root);
                    self.recompute(root);
                    self.root = Some(root);
                    return;
                }
                Some(p) => {
                    // The parent's bits already hold both halves.
                    let children = &mut self.nodes[p].children;
                    let at = children
                        .iter()
                        .position(|c| matches!(c, Child::Node(n) if *n == id))
                        .map_or(children.len(), |i| i + 1);
                    children.insert(at, Child::Node(sibling));
                    id = p;
                }
            }
        }
    }

    /// Fixes underfull `id` (child of `parent`) by merging it into an
    /// adjacent sibling or taking one child from it; recomputes the bits
    /// of every node whose children changed.
    fn rebalance(&mut self, id: NodeId, parent: NodeId) {
        let siblings = &self.nodes[parent].children;
        let Some(pos) = siblings
            .iter()
            .position(|c| matches!(c, Child::Node(n) if *n == id))
        else {
            return;
        };
        let left = pos.checked_sub(1).and_then(|p| siblings.get(p));
        let right = siblings.get(pos + 1);
        let (sibling, sibling_is_left) = match (left, right) {
            (Some(Child::Node(s)), _) => (*s, true),
            (_, Some(Child::Node(s))) => (*s, false),
            _ => {
                // An only child (possible for order 2, whose bound is one):
                // drop it when empty, otherwise keep it as it is.
                if self.nodes[id].children.is_empty() {
                    self.nodes[parent].children.remove(pos);
                    self.release(id);
                } else {
                    self.recompute(id);
                }
                return;
            }
        };
        let ours = self.nodes[id].children.len();
        if ours + self.nodes[sibling].children.len() <= self.order {
            let moved = std::mem::take(&mut self.nodes[id].children);
            let theirs = &mut self.nodes[sibling].children;
            if sibling_is_left {
                theirs.extend(moved);
            } else {
                theirs.splice(0..0, moved);
            }
            self.adopt(sibling);
            self.recompute(sibling);
            self.nodes[parent].children.remove(pos);
            self.release(id);
        } else {
            let theirs = &mut self.nodes[sibling].children;
            let child = if sibling_is_left {
                theirs.pop()
            } else {
                Some(theirs.remove(0))
            };
            if let Some(child) = child {
                if sibling_is_left {
                    self.nodes[id].children.insert(0, child);
                } else {
                    self.nodes[id].children.push(child);
                }
            }
            self.adopt(id);
            self.recompute(id);
            self.recompute(sibling);
        }
    }

    /// Final step of a removal at the root: recompute it, free it when
    /// empty, and hand the root down while it has a single inner child.
    fn settle_root(&mut self, mut root: NodeId) {
        self.recompute(root);
        loop {
            match self.nodes[root].children.as_slice() {
                [] => {
                    self.release(root);
                    self.root = None;
                    return;
                }
                [Child::Node(only)] => {
                    let only = *only;
                    self.nodes[only].parent = None;
                    self.release(root);
                    self.root = Some(only);
                    root = only;
                }
                _ => return,
            }
        }
    }
}
