//! Helpers shared by the statistical and property tests.
#![allow(dead_code, reason = "each test binary uses a different subset")]

use sift_filter::KeyHash;

/// `n` distinct key hashes. Keys are `seed ‖ i` (16 bytes), so two seeds
/// never share a key: members and non-members come from different seeds.
pub fn hashes(seed: u64, n: usize) -> Vec<KeyHash> {
    (0..n as u64).map(|i| key_hash(seed, i)).collect()
}

/// The hash of key `seed ‖ i`.
pub fn key_hash(seed: u64, i: u64) -> KeyHash {
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..].copy_from_slice(&i.to_le_bytes());
    KeyHash::of(&key)
}

/// Standard deviations allowed between a measured rate and its expectation.
/// With fixed seeds every run is identical; 5σ means that a correct filter
/// would fail with probability below 6e-7 if the seeds were changed, while a
/// real regression of a few percent over millions of probes still shows.
pub const Z: f64 = 5.0;

/// Binomial standard deviation of a rate `p` measured over `trials`.
pub fn sigma(p: f64, trials: u64) -> f64 {
    (p * (1.0 - p) / trials as f64).sqrt()
}

/// Asserts that `hits / trials` lies within `Z` binomial standard deviations
/// of `expected`, widened by `model_error · expected` where the formula for
/// `expected` is itself an approximation (say why at the call site).
pub fn assert_rate_near(what: &str, hits: u64, trials: u64, expected: f64, model_error: f64) {
    let measured = hits as f64 / trials as f64;
    let tolerance = Z * sigma(expected, trials) + model_error * expected;
    assert!(
        (measured - expected).abs() <= tolerance,
        "{what}: measured {measured:.6} ({hits}/{trials}), expected {expected:.6} ± {tolerance:.6}"
    );
}

/// Asserts that `hits / trials` is not significantly above `bound`.
pub fn assert_rate_at_most(what: &str, hits: u64, trials: u64, bound: f64) {
    let measured = hits as f64 / trials as f64;
    let tolerance = Z * sigma(bound, trials);
    assert!(
        measured <= bound + tolerance,
        "{what}: measured {measured:.6} ({hits}/{trials}) exceeds {bound:.6} + {tolerance:.6}"
    );
}

/// Counts how many of `probes` a predicate accepts.
pub fn count_hits(probes: &[KeyHash], mut accept: impl FnMut(KeyHash) -> bool) -> u64 {
    probes.iter().filter(|&&h| accept(h)).count() as u64
}

/// Every way of damaging an encoding that a decoder must survive: each
/// truncation, each single-byte flip (all 8 bits, at up to `limit` offsets
/// spread over the input), and appended garbage.
pub fn damaged_variants(bytes: &[u8], limit: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let step = (bytes.len() / limit.max(1)).max(1);
    for cut in (0..bytes.len()).step_by(step) {
        out.push(bytes[..cut].to_vec());
    }
    for at in (0..bytes.len()).step_by(step) {
        for bit in 0..8 {
            let mut b = bytes.to_vec();
            b[at] ^= 1 << bit;
            out.push(b);
        }
    }
    let mut longer = bytes.to_vec();
    longer.extend_from_slice(&[0, 1, 2]);
    out.push(longer);
    out
}
