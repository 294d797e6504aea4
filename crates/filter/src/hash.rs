//! The one hash every filter shares.
//!
//! A lookup hashes its key once into a [`KeyHash`] and hands that value to
//! every filter it meets: memtable, each level's table filter, value filters.
//! No filter hashes the key again. Each filter kind derives its probe
//! positions from the two 64-bit halves in its own documented way.

use xxhash_rust::xxh3::xxh3_128;

/// The 128-bit XXH3 hash of a key (`xxh3_128` with the default secret and
/// seed 0), split into two 64-bit halves.
///
/// This value is persisted indirectly: every encoded filter records the
/// probe positions it produced, so the function is pinned by golden
/// vectors and named in each filter's header ([`HashKind::Xxh3_128`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyHash {
    lo: u64,
    hi: u64,
}

impl KeyHash {
    /// Hashes `key`. This is the only place Sift hashes a key for filters.
    #[inline]
    #[must_use]
    pub fn of(key: &[u8]) -> Self {
        let h = xxh3_128(key);
        Self {
            lo: h as u64,
            hi: (h >> 64) as u64,
        }
    }

    /// Rebuilds a hash from halves previously taken with [`lo`](Self::lo)
    /// and [`hi`](Self::hi), e.g. hashes buffered by a table builder.
    #[inline]
    #[must_use]
    pub const fn from_parts(lo: u64, hi: u64) -> Self {
        Self { lo, hi }
    }

    /// The low 64 bits of the XXH3-128 value.
    #[inline]
    #[must_use]
    pub const fn lo(self) -> u64 {
        self.lo
    }

    /// The high 64 bits of the XXH3-128 value.
    #[inline]
    #[must_use]
    pub const fn hi(self) -> u64 {
        self.hi
    }
}

/// The hash function a persisted filter was built with, stored in its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum HashKind {
    /// [`KeyHash::of`]: XXH3-128, seed 0, default secret.
    Xxh3_128 = 1,
}

impl HashKind {
    /// Parses the header byte; `None` for a hash this build does not know.
    #[must_use]
    pub const fn from_u8(byte: u8) -> Option<Self> {
        match byte {
            1 => Some(Self::Xxh3_128),
            _ => None,
        }
    }
}

/// Maps a uniformly distributed `hash` onto `[0, n)` by multiply-shift
/// (Lemire's "fastrange"): one multiplication instead of a division, and it
/// uses the *high* bits of `hash`, so callers must feed it well-mixed bits.
#[inline]
#[must_use]
pub const fn fastrange64(hash: u64, n: u64) -> u64 {
    ((hash as u128 * n as u128) >> 64) as u64
}

/// [`fastrange64`] for 32-bit hashes and ranges.
#[inline]
#[must_use]
pub const fn fastrange32(hash: u32, n: u32) -> u32 {
    ((hash as u64 * n as u64) >> 32) as u32
}

/// A bijective 64-bit mixer (the SplitMix64 / Stafford "variant 13" finalizer).
/// Used where a filter needs more independent-looking bits than the 128 of a
/// [`KeyHash`] provide, e.g. to re-seed after a failed Ribbon build.
#[inline]
#[must_use]
pub const fn mix64(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden vectors: if these change, every persisted filter becomes
    /// unreadable (it would answer wrongly, not just slowly). Never update
    /// them without bumping [`HashKind`].
    #[test]
    fn xxh3_128_golden_vectors() {
        // Values from the reference C implementation (python-xxhash's
        // `xxh3_128_intdigest`), split into low and high halves. The cases
        // cover the 0, 1-3, 4-8, 17-128 and 129-240 byte code paths.
        let long: Vec<u8> = (0..200u8).collect();
        let cases: [(&[u8], u64, u64); 5] = [
            (b"", 0x6001_c324_468d_497f, 0x99aa_06d3_0147_98d8),
            (b"a", 0xe6c6_32b6_1e96_4e1f, 0xa96f_af70_5af1_6834),
            (b"sift", 0x89be_468d_7332_6e5b, 0x699c_1db3_01cb_ad78),
            (
                b"user:0000000000000042",
                0xdcbb_abae_5588_0f44,
                0x9ef7_c6df_669f_2b6d,
            ),
            (&long, 0xdd97_e9af_3609_d9f5, 0xcb03_9531_0643_ba0e),
        ];
        for (key, lo, hi) in cases {
            let h = KeyHash::of(key);
            assert_eq!((h.lo(), h.hi()), (lo, hi), "key of {} bytes", key.len());
        }
    }

    #[test]
    fn fastrange_stays_in_range_and_uses_high_bits() {
        assert_eq!(fastrange64(0, 10), 0);
        assert_eq!(fastrange64(u64::MAX, 10), 9);
        assert_eq!(fastrange64(1 << 63, 10), 5);
        assert_eq!(fastrange32(u32::MAX, 7), 6);
        assert_eq!(fastrange32(1 << 31, 8), 4);
    }

    #[test]
    fn parts_round_trip() {
        let h = KeyHash::of(b"round trip");
        assert_eq!(KeyHash::from_parts(h.lo(), h.hi()), h);
    }

    #[test]
    fn mix64_is_not_identity_and_fixes_zero() {
        assert_eq!(mix64(0), 0);
        assert_ne!(mix64(1), 1);
        assert_eq!(mix64(1), 0x5692_161d_100b_05e5);
    }
}
