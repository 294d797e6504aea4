//! Sift's `Ribbon`, the static filter of long-lived levels, at a space
//! target and at an FPR target. Built through `RibbonBuilder` as an SSTable
//! writer builds it; a build that falls back to blocked Bloom is an error
//! here, so the rows always measure Ribbon itself.

use super::sift::SiftBuilt;
use super::{Built, Contender, Params};
use crate::filters::keys::KeySet;
use sift_filter::{Filter, FilterBuilder, KeyHash, RibbonBuilder, StaticFilter};

/// What a Ribbon row is sized by.
#[derive(Clone, Copy)]
enum Target {
    /// `RibbonBuilder::new(bits_per_key)`.
    BitsPerKey(f64),
    /// `RibbonBuilder::with_fpr(fpr)`.
    Fpr(f64),
}

/// One Ribbon row.
pub struct SiftRibbon {
    name: &'static str,
    target: Target,
}

impl SiftRibbon {
    /// 7 bits/key: about Bloom's 10 bits/key FPR (~1%) in 30% less space.
    pub const SEVEN_BITS: Self = Self {
        name: "sift-ribbon-7",
        target: Target::BitsPerKey(7.0),
    };
    /// Sized for a 1% FPR.
    pub const ONE_PERCENT: Self = Self {
        name: "sift-ribbon-1pct",
        target: Target::Fpr(0.01),
    };
}

impl Contender for SiftRibbon {
    fn name(&self) -> &'static str {
        self.name
    }

    fn ours(&self) -> bool {
        true
    }

    fn notes(&self, _: &Params) -> String {
        let setting = match self.target {
            Target::BitsPerKey(b) => format!("RibbonBuilder::new({b})"),
            Target::Fpr(p) => format!("RibbonBuilder::with_fpr({p})"),
        };
        format!(
            "{setting} + add + finish (buffers 16 B of hash per key, then bands); \
             KeyHash::of per key; a fallback to Bloom fails the row"
        )
    }

    fn build(&self, keys: &KeySet, _: &Params) -> anyhow::Result<Box<dyn Built>> {
        let mut builder = match self.target {
            Target::BitsPerKey(b) => RibbonBuilder::new(b)?,
            Target::Fpr(p) => RibbonBuilder::with_fpr(p)?,
        };
        for key in keys.iter() {
            builder.add(KeyHash::of(key));
        }
        let StaticFilter::Ribbon(ribbon) = builder.finish() else {
            anyhow::bail!("{} fell back to blocked Bloom", self.name);
        };
        // Ribbon's own model: the mean over blocks of 2^-(result bits).
        Ok(SiftBuilt::boxed(ribbon, keys.len(), |f, _| {
            Some(f.estimated_fpr())
        }))
    }
}
