//! The shared wrapper for Sift's filters: every query hashes the key with
//! `KeyHash::of` and asks `Filter::may_contain`.

use super::{Built, Prehashed, count_hits};
use sift_filter::{Filter, KeyHash};

/// The formula a kind's FPR is checked against, given the built filter and
/// the member count. Evaluated after the timed region.
pub type Formula<F> = fn(&F, u64) -> Option<f64>;

/// Kind-specific state for the notes (stages, load), after the timed region.
pub type Describe<F> = fn(&F) -> String;

/// A built Sift filter.
pub struct SiftBuilt<F> {
    filter: F,
    n: u64,
    formula: Formula<F>,
    describe: Describe<F>,
}

impl<F: Filter + 'static> SiftBuilt<F> {
    /// Wraps `filter`, built from `n` keys.
    pub fn boxed(filter: F, n: usize, formula: Formula<F>) -> Box<dyn Built> {
        Self::described(filter, n, formula, |_| String::new())
    }

    /// As [`boxed`](Self::boxed), with extra state for the notes.
    pub fn described(
        filter: F,
        n: usize,
        formula: Formula<F>,
        describe: Describe<F>,
    ) -> Box<dyn Built> {
        Box::new(Self {
            filter,
            n: n as u64,
            formula,
            describe,
        })
    }
}

impl<F: Filter> Built for SiftBuilt<F> {
    #[inline]
    fn contains(&self, key: &[u8]) -> bool {
        self.filter.may_contain(KeyHash::of(key))
    }

    fn count_prehashed(&self, hashes: &Prehashed) -> Option<u64> {
        Some(count_hits(&hashes.sift, |h| self.filter.may_contain(h)))
    }

    fn size_bytes(&self) -> usize {
        self.filter.size_bytes()
    }

    fn expected_fpr(&self) -> Option<f64> {
        (self.formula)(&self.filter, self.n)
    }

    fn detail(&self) -> String {
        let extra = (self.describe)(&self.filter);
        format!(
            "{extra}{}fill_ratio {:.3}, estimated_fpr {:.3}%",
            if extra.is_empty() { "" } else { ", " },
            self.filter.fill_ratio(),
            self.filter.estimated_fpr() * 100.0
        )
    }
}
