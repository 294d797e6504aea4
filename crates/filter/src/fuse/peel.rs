//! Construction by peeling (hypergraph 2-core elimination), then
//! assignment in reverse peeling order.
//!
//! Every key is a hyperedge over its three slots. A slot used by exactly
//! one remaining key can be given to that key: its fingerprint can always
//! be made to hold there, whatever the key's two other slots end up
//! holding. Peeling removes such a key and repeats; it succeeds when every
//! key was removed. Assigning in the reverse order then sets each key's
//! slot to `fingerprint ^ (the key's other two slots)`, which are final by
//! then: slots peeled later were assigned earlier, and slots never peeled
//! stay 0.
//!
//! Per slot the peeler keeps the number of keys using it and the XOR of
//! their numbers: where the count is 1, the XOR *is* the key. 12 bytes per
//! slot (with the stack), plus per key 8 for the peeling order and 9 or 10
//! for the placed keys (`placed.rs`): about 31 bytes per key for a binary
//! fuse filter, 33 for XOR.
#![deny(clippy::indexing_slicing)]

use super::fingerprint::Fingerprint;
use super::layout::Layout;

/// The keys using one slot.
#[derive(Clone, Copy, Default)]
struct Slot {
    /// How many remaining keys use the slot.
    count: u32,
    /// XOR of those keys' numbers.
    keys: u32,
}

/// Peels the keys placed at `xs` (key `i` at `xs[i]`; fewer than 2^32
/// keys, at most `layout.slots()` slots below 2^32). Returns `(key, slot)`
/// in peeling order, or `None` if a non-empty 2-core remains, which
/// includes any two keys with the same three slots.
#[expect(
    clippy::indexing_slicing,
    reason = "slot numbers come from layout.positions (< slots, the vector's length); \
              key numbers from XORs of numbers < xs.len() isolated by a count of 1; \
              the stack never holds more than slots.len() entries"
)]
pub(super) fn peel<L: Layout>(layout: &L, xs: &[u64]) -> Option<Vec<(u32, u32)>> {
    if layout.slots() == 0 {
        return xs.is_empty().then(Vec::new);
    }
    let mut slots = vec![Slot::default(); usize::try_from(layout.slots()).ok()?];
    for (key, &x) in xs.iter().enumerate() {
        for p in layout.positions(x) {
            let slot = &mut slots[p];
            slot.count += 1;
            slot.keys ^= key as u32;
        }
    }
    // A sweep from the first slot to the last, peeling each slot whose
    // count is 1 when the sweep reaches it. Peeling a key lowers the counts
    // of its other slots: one that drops to 1 ahead of the sweep is peeled
    // when the sweep gets there; one behind it (or at it) goes on a stack,
    // emptied before the sweep moves on. Every slot that ever holds one
    // key is thus visited, and what remains is the 2-core, whatever the
    // order. For a binary fuse filter, whose keys were placed in order of
    // first slot, this walks the array like a burning fuse: the state in
    // use stays a few segments wide.
    //
    // A slot enters the stack at most once (counts only fall, so each
    // reaches 1 at most once; the sweep's own slot was never pushed), so
    // `slots.len()` entries suffice, and a push is a store plus a
    // conditional increment instead of an unpredictable branch.
    let mut stack = vec![0u32; slots.len()];
    let mut order = Vec::with_capacity(xs.len());
    for sweep in 0..slots.len() {
        if slots[sweep].count != 1 {
            continue;
        }
        stack[0] = sweep as u32;
        let mut top = 1;
        while top > 0 {
            top -= 1;
            let s = stack[top];
            let Slot { count, keys: key } = slots[s as usize];
            // A slot pushed at count 1 may since have lost its key to
            // another slot (count 0).
            if count != 1 {
                continue;
            }
            order.push((key, s));
            for p in layout.positions(xs[key as usize]) {
                let slot = &mut slots[p];
                slot.count -= 1;
                slot.keys ^= key;
                // `top < slots.len()` here: entries never exceed pushes.
                stack[top] = p as u32;
                top += usize::from(slot.count == 1 && p <= sweep);
            }
        }
    }
    (order.len() == xs.len()).then_some(order)
}

/// The fingerprint array for a complete peeling `order` of the keys placed
/// at `xs` with fingerprints `fps` (key `i` at index `i` of both): every
/// key's three slots XOR to its fingerprint.
#[expect(
    clippy::indexing_slicing,
    reason = "keys and slots of `order` come from `peel` over the same layout and keys"
)]
pub(super) fn assign<F: Fingerprint, L: Layout>(
    layout: &L,
    order: &[(u32, u32)],
    xs: &[u64],
    fps: &[F],
) -> Vec<F> {
    let mut fingerprints = vec![F::default(); layout.slots() as usize];
    for &(key, slot) in order.iter().rev() {
        let [a, b, c] = layout.positions(xs[key as usize]);
        // The key's own slot still holds 0, so XOR-ing all three is the
        // XOR of the other two.
        let others = fingerprints[a] ^ fingerprints[b] ^ fingerprints[c];
        fingerprints[slot as usize] = fps[key as usize] ^ others;
    }
    fingerprints
}

#[cfg(test)]
mod tests {
    use super::super::layout::{Blocks, Segments};
    use super::*;
    use crate::hash::{KeyHash, mix64};

    fn xs(n: u64) -> Vec<u64> {
        (0..n).map(|i| mix64(i ^ 0x1234_5678)).collect()
    }

    fn check<L: Layout>(layout: L, n: u64) {
        let xs = xs(n);
        let hashes: Vec<KeyHash> = (0..n).map(|i| KeyHash::from_parts(i, mix64(i))).collect();
        let order = peel(&layout, &xs).unwrap();
        assert_eq!(order.len() as u64, n);
        let own: Vec<u16> = hashes.iter().map(|h| u16::of(h.hi())).collect();
        let fps = assign(&layout, &order, &xs, &own);
        for (x, fp) in xs.iter().zip(own) {
            let [a, b, c] = layout.positions(*x);
            assert_eq!(fps[a] ^ fps[b] ^ fps[c], fp);
        }
    }

    #[test]
    fn peeling_solves_every_key() {
        for n in [1, 2, 10, 1_000, 50_000] {
            check(Blocks::for_keys(n).unwrap(), n);
            check(Segments::for_keys(n).unwrap(), n);
        }
    }

    #[test]
    fn a_repeated_key_or_too_few_slots_cannot_peel() {
        let mut dup = xs(100);
        dup.push(dup[7]);
        assert!(peel(&Segments::for_keys(101).unwrap(), &dup).is_none());
        assert!(peel(&Blocks::for_keys(101).unwrap(), &dup).is_none());
        // 1,000 keys in 48 slots: a 2-core always remains.
        assert!(peel(&Segments::for_keys(10).unwrap(), &xs(1_000)).is_none());
    }

    #[test]
    fn empty_layout_peels_no_keys() {
        assert_eq!(peel(&Segments::empty(), &[]), Some(vec![]));
        let fps: Vec<u8> = assign(&Blocks::empty(), &[], &[], &[]);
        assert!(fps.is_empty());
    }
}
