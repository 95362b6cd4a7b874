//! The four mutations run under `platform::idempotency` (the key is bound to the operation, the
//! exact request and the calling API key, so only that key can replay an answer and recover a
//! secret). Their stored answers are sealed with the secrets keyring, because CreateEndpoint and
//! RotateSecret answers carry a plaintext signing secret.

use super::WebhooksService;
use crate::keyring::Keyring;
use platform::error::ApiError;
use platform::idempotency::{Answer, Attempt, Codec, IdempotencyKey, Json};
use platform::principal::Principal;
use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

/// Stored answers as JSON sealed with the keyring, bound to their operation and customer (a
/// sealed answer copied to another key's row does not open). It owns a copy of the keyring, so
/// that the future of a mutation borrows nothing with a lifetime of its own (it must be `Send`).
pub(super) struct Sealed {
    keyring: Keyring,
    context: Vec<u8>,
}

impl<T: Serialize + DeserializeOwned> Codec<T> for Sealed {
    fn encode(&self, answer: &T) -> Result<Vec<u8>, ApiError> {
        let json = Json.encode(answer)?;
        Ok(self.keyring.seal(&json, &self.context).into_bytes())
    }

    fn decode(&self, stored: &[u8]) -> Result<T, ApiError> {
        let sealed = std::str::from_utf8(stored).map_err(ApiError::internal)?;
        let json = self
            .keyring
            .open(sealed, &self.context)
            .map_err(ApiError::internal)?;
        Json.decode(&json)
    }
}

/// The claimed key a mutation runs under.
pub(super) type SealedAttempt<'a> = Attempt<'a, Sealed>;

impl WebhooksService {
    /// Runs `work` for the principal's customer under `key` as `operation`, or replays its
    /// sealed answer; `work` gets the customer and stores its answer with `attempt.complete`.
    pub(super) async fn idempotent<T, W>(
        &self,
        principal: &Principal,
        key: IdempotencyKey,
        operation: &'static str,
        work: W,
    ) -> Answer<T>
    where
        T: Serialize + DeserializeOwned,
        W: AsyncFnOnce(Uuid, &SealedAttempt<'_>) -> Result<T, ApiError>,
    {
        let customer_id = match principal.customer() {
            Ok(customer_id) => customer_id,
            Err(error) => return Answer::fresh(Err(error)),
        };
        let codec = Sealed {
            keyring: self.keyring.clone(),
            context: format!("idempotency:{operation}:{customer_id}").into_bytes(),
        };
        let call = key.call(customer_id, operation);
        self.idempotency
            .run(&self.pool, call, &codec, async |attempt| {
                work(customer_id, attempt).await
            })
            .await
    }
}
