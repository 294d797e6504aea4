//! Sift's `ScalableBloom`: started at n/16 keys so that it grows through
//! several stages, as it would for a set of unknown size.

use super::sift::SiftBuilt;
use super::{Built, Contender, Params};
use crate::filters::keys::KeySet;
use sift_filter::{KeyHash, ScalableBloom};

/// The FPR bound asked for, the 1% the other kinds reach at 10 bits/key.
const TARGET_FPR: f64 = 0.01;
/// The first stage holds `n / 16`: with the default growth of 2 the filter
/// reaches `n` in its fifth stage.
const INITIAL_FRACTION: usize = 16;

/// `ScalableBloom::new(max(1, n/16), 0.01)`, then `insert` per key.
pub struct SiftScalable;

impl Contender for SiftScalable {
    fn name(&self) -> &'static str {
        "sift-scalable"
    }

    fn ours(&self) -> bool {
        true
    }

    fn notes(&self, _: &Params) -> String {
        format!(
            "ScalableBloom::new(n/{INITIAL_FRACTION}, {TARGET_FPR}) (an FPR bound, not a \
             bits/key setting), insert per key"
        )
    }

    fn build(&self, keys: &KeySet, _: &Params) -> anyhow::Result<Box<dyn Built>> {
        let initial = (keys.len() / INITIAL_FRACTION).max(1) as u64;
        let mut filter = ScalableBloom::new(initial, TARGET_FPR)?;
        for key in keys.iter() {
            filter.insert(KeyHash::of(key));
        }
        Ok(SiftBuilt::described(
            filter,
            keys.len(),
            |_, _| None,
            |f| format!("{} stages", f.num_stages()),
        ))
    }
}
