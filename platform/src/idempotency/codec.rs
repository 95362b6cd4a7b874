//! How a use case's answer is kept for replays: a [`Codec`] turns the domain answer into the
//! stored bytes and back. [`Json`] is the default; a service whose answers carry secrets wraps
//! it (webhooks-svc seals the JSON with its keyring).

use crate::error::ApiError;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Turns an answer of type `T` into stored bytes and back.
pub trait Codec<T> {
    /// The bytes to store for `answer`.
    fn encode(&self, answer: &T) -> Result<Vec<u8>, ApiError>;
    /// The answer stored as `stored`.
    fn decode(&self, stored: &[u8]) -> Result<T, ApiError>;
}

/// Stores the answer as its JSON (serde). A stored shape must stay readable for as long as
/// replays are kept (24 hours): add fields with defaults, never rename one.
#[derive(Clone, Copy, Debug, Default)]
pub struct Json;

impl<T: Serialize + DeserializeOwned> Codec<T> for Json {
    fn encode(&self, answer: &T) -> Result<Vec<u8>, ApiError> {
        serde_json::to_vec(answer).map_err(ApiError::internal)
    }

    fn decode(&self, stored: &[u8]) -> Result<T, ApiError> {
        serde_json::from_slice(stored).map_err(ApiError::internal)
    }
}
