//! Key-range pieces of one large compaction (RocksDB's subcompactions):
//! each piece is merged on its own thread into its own output tables, and
//! the pieces' outputs, in key order, are installed as one edit.
//!
//! A piece boundary is a user key: every version of a key falls in one
//! piece, so each piece drops shadowed versions and tombstones exactly as
//! the whole merge would.

/// Keys that cut a compaction's inputs into at most `pieces` pieces of
/// about equal bytes: piece `i` holds the keys from `splits[i - 1]`
/// (included) to `splits[i]` (excluded). `inputs` are the input tables'
/// smallest keys and sizes; the cuts fall on those keys, where the bytes
/// of the tables that start before them pass each share of the total.
/// Strictly increasing, and never the smallest key (which would leave the
/// first piece empty).
pub(crate) fn split_points(inputs: &[(&[u8], u64)], pieces: usize) -> Vec<Vec<u8>> {
    let mut starts: Vec<(&[u8], u64)> = inputs.to_vec();
    starts.sort_unstable();
    let total: u64 = starts.iter().map(|(_, bytes)| bytes).sum();
    let Some(&(first, _)) = starts.first() else {
        return Vec::new();
    };
    let pieces = pieces.max(1) as u64;
    let mut splits: Vec<Vec<u8>> = Vec::new();
    let mut before = 0u64;
    for &(start, bytes) in &starts {
        // The next cut is due once the tables before `start` hold its
        // share of the bytes.
        let due = u128::from(total) * (splits.len() as u128 + 1) / u128::from(pieces);
        let fresh = start != first && splits.last().is_none_or(|last| last.as_slice() < start);
        if fresh && u128::from(before) >= due && (splits.len() as u64) < pieces - 1 {
            splits.push(start.to_vec());
        }
        before += bytes;
    }
    splits
}

/// How many pieces a compaction of `input_bytes` is cut into: none
/// smaller than two output tables, and at most `threads`.
pub(crate) fn piece_count(input_bytes: u64, target_table_bytes: u64, threads: usize) -> usize {
    let by_size = input_bytes / target_table_bytes.saturating_mul(2).max(1);
    (by_size as usize).clamp(1, threads.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_tables_are_cut_into_equal_shares() {
        let inputs: Vec<(&[u8], u64)> = vec![(b"a", 10), (b"c", 10), (b"e", 10), (b"g", 10)];
        assert_eq!(split_points(&inputs, 2), vec![b"e".to_vec()]);
        assert_eq!(
            split_points(&inputs, 4),
            vec![b"c".to_vec(), b"e".to_vec(), b"g".to_vec()]
        );
        // More pieces than tables: at most one cut per table start.
        assert_eq!(split_points(&inputs, 9).len(), 3);
    }

    #[test]
    fn cuts_are_fresh_increasing_keys_never_the_smallest() {
        // Level-0 tables often start at the same key.
        let inputs: Vec<(&[u8], u64)> =
            vec![(b"a", 50), (b"a", 50), (b"b", 1), (b"b", 1), (b"z", 1)];
        let splits = split_points(&inputs, 4);
        assert!(splits.windows(2).all(|w| w[0] < w[1]), "{splits:?}");
        assert!(splits.iter().all(|s| s.as_slice() != b"a"), "{splits:?}");
        assert_eq!(splits, vec![b"b".to_vec(), b"z".to_vec()]);
    }

    #[test]
    fn one_piece_or_no_inputs_means_no_cut() {
        assert!(split_points(&[(b"a", 5), (b"b", 5)], 1).is_empty());
        assert!(split_points(&[], 4).is_empty());
    }

    #[test]
    fn pieces_are_at_least_two_tables_and_at_most_the_threads() {
        assert_eq!(piece_count(100, 64, 8), 1);
        assert_eq!(piece_count(64 * 6, 64, 8), 3);
        assert_eq!(piece_count(64 * 600, 64, 8), 8);
        assert_eq!(piece_count(0, 0, 0), 1);
    }
}
