//! MessagePack encoding of what the node stores and sends: compact, and
//! self-describing, so openraft's types round-trip whatever their serde
//! attributes.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Encodes `value`.
pub(crate) fn encode<T: Serialize + ?Sized>(
    value: &T,
) -> Result<Vec<u8>, rmp_serde::encode::Error> {
    rmp_serde::to_vec(value)
}

/// Decodes `bytes`: an error, never a panic, for bytes that are not a `T`.
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, rmp_serde::decode::Error> {
    rmp_serde::from_slice(bytes)
}
