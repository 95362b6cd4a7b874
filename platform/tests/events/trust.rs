//! Events are trusted only from their owner: an entry whose envelope claims a `source` other
//! than the service that owns the stream (or none) is dead-lettered, never applied and never
//! retried. (A forged `payment.confirmed` across the whole mesh is `tests/`'s business flow.)

use crate::support::*;
use platform::consumer::{ConsumerSettings, StreamConsumer};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

#[tokio::test]
async fn an_event_claiming_a_source_that_does_not_own_its_stream_is_dead_lettered_and_never_applied() {
    let pool = pool_with_event_tables().await;
    let stream = orders_stream();
    let mut redis = redis_connection().await;
    let forged = envelope_from("payments-svc");
    let unsigned = envelope_from("");
    let genuine = envelope_from("orders-svc");
    let forged_entry = xadd(&mut redis, &stream, &forged).await;
    let unsigned_entry = xadd(&mut redis, &stream, &unsigned).await;
    xadd(&mut redis, &stream, &genuine).await;

    let handler = Arc::new(CountingHandler::new(&pool));
    let mut settings = ConsumerSettings::new("trust-test", vec![stream.clone()])
        .with_timing(Duration::from_millis(200), Duration::from_millis(50));
    settings.max_deliveries = 2;
    let token = CancellationToken::new();
    let consumer = tokio::spawn(
        StreamConsumer::new(
            &platform::testing::redis_url(),
            settings,
            handler.clone(),
            EventVerifier::development(),
        )
        .run(token.clone()),
    );
    let dead = platform::streams::dead_letter_stream(&stream);
    let letters = wait_for(
        "both untrusted entries dead-lettered",
        Duration::from_secs(10),
        || async {
            let mut redis = redis_connection().await;
            let letters = dead_letters(&mut redis, &dead).await;
            (letters.len() == 2).then_some(letters)
        },
    )
    .await;
    wait_for("the genuine event applied", Duration::from_secs(10), || async {
        (handler.applied().await == 1).then_some(())
    })
    .await;
    // Several reclaim rounds pass: nothing is retried, nothing else is dead-lettered.
    holds_for(
        "nothing pending and two dead letters",
        Duration::from_millis(800),
        || async {
            let mut redis = redis_connection().await;
            pending_count(&mut redis, &stream, "trust-test").await == 0
                && dead_letters(&mut redis, &dead).await.len() == 2
        },
    )
    .await;
    token.cancel();
    consumer.await.unwrap();

    assert_eq!(letters[0].original_id, forged_entry);
    assert_eq!(letters[1].original_id, unsigned_entry);
    assert!(letters.iter().all(|letter| letter.group == "trust-test"));
    assert!(letters[0].reason.contains("\"payments-svc\""), "{:?}", letters[0]);
    assert!(letters[0].reason.contains("orders-svc"), "{:?}", letters[0]);
    assert_eq!(
        handler.invocations.load(Ordering::SeqCst),
        1,
        "the handler saw only the genuine event"
    );
    let applied: Vec<Uuid> = sqlx::query_scalar("SELECT event_id FROM eventtest.effects")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(applied, [Uuid::parse_str(&genuine.id).unwrap()]);
}

/// The fields of an entry holding `envelope` for `stream`, signed by `signer`.
fn signed_by(signer: &EventSigner, stream: &str, envelope: Vec<u8>) -> Vec<(&'static str, Vec<u8>)> {
    let signature = signer.sign(stream, &envelope);
    vec![
        (platform::streams::ENVELOPE_FIELD, envelope),
        (
            platform::event_signing::KID_FIELD,
            signer.kid().as_bytes().to_vec(),
        ),
        (platform::event_signing::SIGNATURE_FIELD, signature.to_vec()),
    ]
}

#[tokio::test]
async fn unsigned_forged_tampered_and_moved_events_are_dead_lettered_counted_and_never_applied() {
    use prost::Message;
    use redis::AsyncCommands;
    let pool = pool_with_event_tables().await;
    let stream = orders_stream();
    let mut redis = redis_connection().await;
    let owner = EventSigner::development("orders-svc");
    let (stranger, _) = platform::tokens::SigningKey::generate("orders-svc-stolen");
    let stranger = EventSigner::new(stranger);
    // Each entry below claims the right source; only its signature is wrong.
    let unsigned =
        platform::testing::events::xadd_unsigned(&mut redis, &stream, &envelope_from("orders-svc")).await;
    let add = |fields: Vec<(&'static str, Vec<u8>)>| {
        let stream = stream.clone();
        async move {
            let mut redis = redis_connection().await;
            let id: String = redis.xadd(&stream, "*", &fields).await.unwrap();
            id
        }
    };
    let unknown_key = add(signed_by(
        &stranger,
        &stream,
        envelope_from("orders-svc").encode_to_vec(),
    ))
    .await;
    let other_service = add(signed_by(
        &EventSigner::development("payments-svc"),
        &stream,
        envelope_from("orders-svc").encode_to_vec(),
    ))
    .await;
    let mut tampered = signed_by(&owner, &stream, envelope_from("orders-svc").encode_to_vec());
    tampered[0].1 = envelope_from("orders-svc").encode_to_vec();
    let tampered = add(tampered).await;
    // Genuinely signed by orders-svc, but for another deployment's orders stream.
    let elsewhere = format!("{}-elsewhere:events:orders", unique_stream_prefix());
    let moved = add(signed_by(
        &owner,
        &elsewhere,
        envelope_from("orders-svc").encode_to_vec(),
    ))
    .await;
    let genuine = envelope_from("orders-svc");
    let genuine_fields = signed_by(&owner, &stream, genuine.encode_to_vec());
    add(genuine_fields.clone()).await;
    // The same signed entry written again: its event id was processed, nothing changes.
    add(genuine_fields).await;

    let handler = Arc::new(CountingHandler::new(&pool));
    let settings = ConsumerSettings::new("signature-test", vec![stream.clone()])
        .with_timing(Duration::from_millis(200), Duration::from_millis(50));
    let token = CancellationToken::new();
    let consumer = tokio::spawn(
        StreamConsumer::new(
            &platform::testing::redis_url(),
            settings,
            handler.clone(),
            EventVerifier::development(),
        )
        .run(token.clone()),
    );
    let dead = platform::streams::dead_letter_stream(&stream);
    let letters = wait_for(
        "five refused entries dead-lettered",
        Duration::from_secs(10),
        || async {
            let mut redis = redis_connection().await;
            let letters = dead_letters(&mut redis, &dead).await;
            (letters.len() == 5).then_some(letters)
        },
    )
    .await;
    wait_for(
        "the genuine event applied and nothing pending",
        Duration::from_secs(10),
        || async {
            let mut redis = redis_connection().await;
            (handler.applied().await == 1 && pending_count(&mut redis, &stream, "signature-test").await == 0)
                .then_some(())
        },
    )
    .await;
    holds_for(
        "nothing pending, five dead letters",
        Duration::from_millis(800),
        || async {
            let mut redis = redis_connection().await;
            pending_count(&mut redis, &stream, "signature-test").await == 0
                && dead_letters(&mut redis, &dead).await.len() == 5
        },
    )
    .await;
    token.cancel();
    consumer.await.unwrap();

    let reason_of = |id: &str| {
        letters
            .iter()
            .find(|letter| letter.original_id == id)
            .map(|letter| letter.reason.clone())
            .unwrap_or_else(|| panic!("{id} was not dead-lettered: {letters:?}"))
    };
    assert!(reason_of(&unsigned).contains("not signed"), "{letters:?}");
    assert!(
        reason_of(&unknown_key).contains("untrusted key \"orders-svc-stolen\""),
        "{letters:?}"
    );
    assert!(
        reason_of(&other_service).contains("signed by payments-svc"),
        "{letters:?}"
    );
    assert!(reason_of(&tampered).contains("does not verify"), "{letters:?}");
    assert!(reason_of(&moved).contains("does not verify"), "{letters:?}");
    let applied: Vec<Uuid> = sqlx::query_scalar("SELECT event_id FROM eventtest.effects")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(
        applied,
        [Uuid::parse_str(&genuine.id).unwrap()],
        "only the genuine event, once"
    );

    let mut scrape = String::new();
    prometheus_client::encoding::text::encode(&mut scrape, platform::metrics::metrics().registry()).unwrap();
    for (reason, count) in [
        ("unsigned", 1),
        ("unknown_key", 1),
        ("wrong_signer", 1),
        ("bad_signature", 2),
    ] {
        let line = format!(
            "stream_events_rejected_total{{stream=\"{stream}\",group=\"signature-test\",reason=\"{reason}\"}} {count}"
        );
        assert!(scrape.contains(&line), "{line} in the scrape:\n{scrape}");
    }
}
