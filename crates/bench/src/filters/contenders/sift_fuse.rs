//! Sift's static XOR-family filters: `Xor8`, `BinaryFuse8` and
//! `BinaryFuse16`, built as a table writer would build them (hashes
//! buffered by the builder, then peeled); a construction failure (the
//! builder would fall back to blocked Bloom) fails the row, so the rows
//! always measure the filter itself.

use super::sift::SiftBuilt;
use super::{Built, Contender, Params};
use crate::filters::keys::KeySet;
use sift_filter::{
    BinaryFuse8, BinaryFuse16, FilterBuilder, KeyHash, Xor8, XorFamily, XorFamilyBuilder,
};

/// One XOR-family row; `T` is the filter type.
pub struct SiftXorFamily<T> {
    name: &'static str,
    filter: std::marker::PhantomData<fn() -> T>,
}

/// `sift-xor8`: `XorBuilder::<u8>`.
pub const XOR8: SiftXorFamily<Xor8> = SiftXorFamily {
    name: "sift-xor8",
    filter: std::marker::PhantomData,
};
/// `sift-bfuse8`: `BinaryFuseBuilder::<u8>`.
pub const BINARY_FUSE8: SiftXorFamily<BinaryFuse8> = SiftXorFamily {
    name: "sift-bfuse8",
    filter: std::marker::PhantomData,
};
/// `sift-bfuse16`: `BinaryFuseBuilder::<u16>`.
pub const BINARY_FUSE16: SiftXorFamily<BinaryFuse16> = SiftXorFamily {
    name: "sift-bfuse16",
    filter: std::marker::PhantomData,
};

impl<T: XorFamily + 'static> Contender for SiftXorFamily<T> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn ours(&self) -> bool {
        true
    }

    fn notes(&self, _: &Params) -> String {
        let kind = match T::KIND {
            sift_filter::FilterKind::Xor => "XorBuilder",
            _ => "BinaryFuseBuilder",
        };
        format!(
            "{kind}::<u{}>::new() + add + build() (buffers 16 B of hash per key, then peels); \
             KeyHash::of per key; a construction failure fails the row; bits/key fixed by design",
            T::FINGERPRINT_BITS
        )
    }

    fn build(&self, keys: &KeySet, _: &Params) -> anyhow::Result<Box<dyn Built>> {
        let mut builder = XorFamilyBuilder::<T>::with_capacity(keys.len());
        for key in keys.iter() {
            builder.add(KeyHash::of(key));
        }
        let filter = builder
            .build()
            .map_err(|e| anyhow::anyhow!("{}: {e}", self.name))?;
        // One in 2^bits fingerprints matches.
        Ok(SiftBuilt::boxed(filter, keys.len(), |f, _| {
            Some(f.estimated_fpr())
        }))
    }
}
