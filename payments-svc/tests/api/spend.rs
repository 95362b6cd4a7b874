//! Spend envelopes: the running day and month totals on the envelope row stay equal to what the
//! key's active commitments add up to, under concurrent commitments and releases, at the UTC day
//! and month boundaries, when the envelope is set after the key already committed, and when
//! unconfirmed commitments are reaped.

use crate::helpers::{TestApp, code_of, spawn_app};
use chrono::{DateTime, Utc};
use payments_svc::domain::spend::{Caps, SpendKind};
use payments_svc::repo;
use platform::money::Cents;
use proto::payments as pb;
use uuid::Uuid;

const KEY: &str = "key-spender";

impl TestApp {
    pub(crate) async fn set_envelope(
        &self,
        customer: Uuid,
        key_id: &str,
        daily: Option<i64>,
        monthly: Option<i64>,
    ) {
        let request = pb::SetSpendEnvelopeRequest {
            customer_id: customer.to_string(),
            key_id: key_id.to_owned(),
            per_order_cap_cents: None,
            daily_cap_cents: daily,
            monthly_cap_cents: monthly,
        };
        self.client
            .clone()
            .set_spend_envelope(platform::grpc::outgoing(request, &self.admin()))
            .await
            .expect("set the envelope");
    }

    async fn commit_spend(
        &self,
        customer: Uuid,
        key_id: &str,
        subject: &str,
        amount: i64,
    ) -> Result<bool, tonic::Status> {
        let request = pb::CommitSpendRequest {
            key_id: key_id.to_owned(),
            kind: "order".into(),
            subject_id: subject.to_owned(),
            amount_cents: amount,
        };
        Ok(self
            .client
            .clone()
            .commit_spend(platform::tokens::testing::delegated(
                platform::grpc::outgoing(request, &self.service_token(customer)),
                customer,
            ))
            .await?
            .into_inner()
            .already_committed)
    }

    async fn release_spend(&self, customer: Uuid, subject: &str) -> bool {
        let request = pb::ReleaseSpendRequest {
            kind: "order".into(),
            subject_id: subject.to_owned(),
        };
        self.client
            .clone()
            .release_spend(platform::tokens::testing::delegated(
                platform::grpc::outgoing(request, &self.service_token(customer)),
                customer,
            ))
            .await
            .expect("release")
            .into_inner()
            .released
    }

    /// The envelope as staff read it: (spent today, spent this month).
    async fn spent(&self, customer: Uuid, key_id: &str) -> (i64, i64) {
        let request = pb::GetSpendEnvelopeRequest {
            customer_id: Some(customer.to_string()),
            key_id: Some(key_id.to_owned()),
        };
        let envelope = self
            .client
            .clone()
            .get_spend_envelope(platform::grpc::outgoing(request, &self.admin()))
            .await
            .expect("read the envelope")
            .into_inner()
            .envelope
            .unwrap();
        (envelope.spent_today_cents, envelope.spent_this_month_cents)
    }

    /// What the key's active commitments of the current UTC month add up to, summed afresh.
    async fn summed(&self, customer: Uuid, key_id: &str) -> i64 {
        sqlx::query_scalar(
            "SELECT COALESCE(SUM(amount_cents), 0)::bigint FROM payments.spend_commitments \
             WHERE key_id = $1 AND customer_id = $2 AND released_at IS NULL",
        )
        .bind(key_id)
        .bind(customer)
        .fetch_one(&self.pool)
        .await
        .unwrap()
    }
}

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text).unwrap().to_utc()
}

#[tokio::test]
async fn fifty_concurrent_commitments_of_one_key_commit_exactly_up_to_the_daily_cap() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    app.set_envelope(customer, KEY, Some(7 * 1_000 + 500), None).await;
    let subjects: Vec<String> = (0..50).map(|_| Uuid::now_v7().to_string()).collect();
    let attempts = subjects
        .iter()
        .map(|subject| app.commit_spend(customer, KEY, subject, 1_000));
    let answers = futures::future::join_all(attempts).await;
    let committed = answers.iter().filter(|answer| answer.is_ok()).count();
    let refused: Vec<_> = answers
        .iter()
        .filter_map(|answer| answer.as_ref().err())
        .collect();
    assert_eq!(committed, 7, "exactly up to the cap");
    assert_eq!(refused.len(), 43);
    assert!(
        refused
            .iter()
            .all(|status| code_of(status) == "spend_limit_exceeded")
    );
    assert_eq!(app.spent(customer, KEY).await, (7_000, 7_000));
    assert_eq!(
        app.summed(customer, KEY).await,
        7_000,
        "refusals left no commitment"
    );

    // Committing an already committed subject again changes nothing and is not refused.
    let placed = answers
        .iter()
        .position(|answer| answer.is_ok())
        .map(|index| &subjects[index])
        .unwrap();
    assert!(
        app.commit_spend(customer, KEY, placed, 1_000).await.unwrap(),
        "already committed"
    );
    assert_eq!(app.spent(customer, KEY).await, (7_000, 7_000));
}

#[tokio::test]
async fn concurrent_releases_lower_the_totals_exactly_once_and_a_recommit_raises_them_again() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    app.set_envelope(customer, KEY, Some(10_000), Some(10_000)).await;
    let first = Uuid::now_v7().to_string();
    let second = Uuid::now_v7().to_string();
    assert!(
        !app.commit_spend(customer, KEY, &first, 3_000).await.unwrap(),
        "a fresh commitment"
    );
    assert!(
        !app.commit_spend(customer, KEY, &second, 4_000).await.unwrap(),
        "a fresh commitment"
    );

    // Ten releases of the first subject (a redelivered cancellation, the expiry job) race ten
    // commitments of new subjects.
    let releases = futures::future::join_all((0..10).map(|_| app.release_spend(customer, &first)));
    let commits = futures::future::join_all((0..10).map(|_| async {
        app.commit_spend(customer, KEY, &Uuid::now_v7().to_string(), 100)
            .await
    }));
    let (released, committed) = tokio::join!(releases, commits);
    assert_eq!(released.iter().filter(|released| **released).count(), 1);
    assert!(committed.iter().all(Result::is_ok));
    assert_eq!(app.spent(customer, KEY).await, (5_000, 5_000));
    assert_eq!(app.summed(customer, KEY).await, 5_000);

    // A fresh commitment of the released subject (a fresh checkout link) counts again.
    assert!(
        !app.commit_spend(customer, KEY, &first, 3_000).await.unwrap(),
        "a fresh commitment"
    );
    assert_eq!(app.spent(customer, KEY).await, (8_000, 8_000));
    let over = app
        .commit_spend(customer, KEY, &Uuid::now_v7().to_string(), 2_001)
        .await
        .unwrap_err();
    assert_eq!(code_of(&over), "spend_limit_exceeded");
    assert_eq!(app.summed(customer, KEY).await, 8_000);
}

#[tokio::test]
async fn an_envelope_set_after_the_key_committed_starts_from_its_active_commitments() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    // The test deployment allows keys without an envelope.
    let early = Uuid::now_v7().to_string();
    app.commit_spend(customer, KEY, &early, 2_500).await.unwrap();
    app.commit_spend(customer, KEY, &Uuid::now_v7().to_string(), 1_500)
        .await
        .unwrap();
    app.set_envelope(customer, KEY, Some(5_000), None).await;
    assert_eq!(app.spent(customer, KEY).await, (4_000, 4_000));
    let over = app
        .commit_spend(customer, KEY, &Uuid::now_v7().to_string(), 1_001)
        .await
        .unwrap_err();
    assert_eq!(code_of(&over), "spend_limit_exceeded");
    assert!(app.release_spend(customer, &early).await);
    // Replacing the caps keeps the totals.
    app.set_envelope(customer, KEY, Some(6_000), None).await;
    assert_eq!(app.spent(customer, KEY).await, (1_500, 1_500));
    app.commit_spend(customer, KEY, &Uuid::now_v7().to_string(), 4_500)
        .await
        .unwrap();
    assert_eq!(app.spent(customer, KEY).await, (6_000, 6_000));
}

/// Commits `amount` for a new subject at `now` as the service does (the commitment, then the
/// totals); returns the subject.
async fn commit_at(app: &TestApp, customer: Uuid, amount: i64, now: DateTime<Utc>) -> String {
    let order_id = Uuid::now_v7();
    let subject = order_id.to_string();
    let mut tx = app.pool.begin().await.unwrap();
    let fresh = repo::spend::commit(
        &mut tx,
        customer,
        SpendKind::Order,
        &subject,
        KEY,
        Cents(amount),
        now,
    )
    .await
    .unwrap();
    assert!(fresh);
    repo::spend::adjust_totals(&mut tx, KEY, customer, Cents(amount), now, now)
        .await
        .unwrap()
        .expect("the key has an envelope");
    // Confirmed, as when the order's invoice is issued: the app's reaper of never-placed orders
    // (commitments older than its age, which these back-dated ones are) leaves it alone.
    repo::spend::confirm_order(&mut tx, customer, order_id)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    subject
}

async fn release_at(app: &TestApp, customer: Uuid, subject: &str, now: DateTime<Utc>) -> bool {
    let mut tx = app.pool.begin().await.unwrap();
    let released = repo::spend::release(&mut tx, customer, SpendKind::Order, subject, now)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    released
}

/// The totals as of `now`: (today, this month).
async fn totals_at(app: &TestApp, customer: Uuid, now: DateTime<Utc>) -> (i64, i64) {
    let mut conn = app.pool.acquire().await.unwrap();
    let envelope = repo::spend::read_envelope(&mut conn, KEY, customer)
        .await
        .unwrap()
        .unwrap();
    let committed = envelope
        .totals
        .committed_in(&payments_svc::domain::spend::Windows::at(now));
    (committed.today.0, committed.this_month.0)
}

#[tokio::test]
async fn the_totals_start_again_at_each_utc_day_and_month_and_a_release_counts_where_its_commitment_did() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let mut tx = app.pool.begin().await.unwrap();
    let caps = Caps::parse(None, Some(1_000_000), Some(1_000_000)).unwrap();
    repo::spend::upsert_envelope(&mut tx, KEY, customer, &caps, "alice", at("2026-01-31T08:00:00Z"))
        .await
        .unwrap();
    tx.commit().await.unwrap();

    let january = commit_at(&app, customer, 300, at("2026-01-31T23:59:59Z")).await;
    assert_eq!(
        totals_at(&app, customer, at("2026-01-31T23:59:59Z")).await,
        (300, 300)
    );
    // Midnight, and a new month: nothing committed yet in either.
    assert_eq!(
        totals_at(&app, customer, at("2026-02-01T00:00:00Z")).await,
        (0, 0)
    );
    let february = commit_at(&app, customer, 200, at("2026-02-01T00:00:30Z")).await;
    assert_eq!(
        totals_at(&app, customer, at("2026-02-01T00:00:30Z")).await,
        (200, 200)
    );
    // Releasing January's commitment in February leaves February's totals alone.
    assert!(release_at(&app, customer, &january, at("2026-02-01T01:00:00Z")).await);
    assert_eq!(
        totals_at(&app, customer, at("2026-02-01T01:00:00Z")).await,
        (200, 200)
    );
    // A new day of the same month: the day starts again, the month goes on.
    commit_at(&app, customer, 50, at("2026-02-02T09:00:00Z")).await;
    assert_eq!(
        totals_at(&app, customer, at("2026-02-02T09:00:00Z")).await,
        (50, 250)
    );
    // Yesterday's commitment released today lowers the month only.
    assert!(release_at(&app, customer, &february, at("2026-02-02T10:00:00Z")).await);
    assert_eq!(
        totals_at(&app, customer, at("2026-02-02T10:00:00Z")).await,
        (50, 50)
    );
    // A writer whose clock is behind never moves the totals back to an earlier day.
    commit_at(&app, customer, 10, at("2026-02-01T23:59:59Z")).await;
    assert_eq!(
        totals_at(&app, customer, at("2026-02-02T10:00:00Z")).await,
        (50, 60)
    );
}

#[tokio::test]
async fn reaping_unconfirmed_commitments_lowers_the_totals_and_confirmed_ones_stay() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    app.set_envelope(customer, KEY, Some(100_000), None).await;
    let never_placed = Uuid::now_v7();
    let placed = Uuid::now_v7();
    app.commit_spend(customer, KEY, &never_placed.to_string(), 700)
        .await
        .unwrap();
    app.commit_spend(customer, KEY, &placed.to_string(), 900)
        .await
        .unwrap();
    app.create_invoice(customer, crate::helpers::invoice_request_for(placed, 900))
        .await;
    // Add-ons likewise: one never stored, one whose supplementary invoice confirmed it.
    let (lost_addon, invoiced_addon) = (Uuid::now_v7(), Uuid::now_v7());
    let now = platform::time::now();
    let mut tx = app.pool.begin().await.unwrap();
    for addon in [lost_addon, invoiced_addon] {
        assert!(
            repo::spend::commit(
                &mut tx,
                customer,
                SpendKind::Addon,
                &addon.to_string(),
                KEY,
                Cents(300),
                now
            )
            .await
            .unwrap()
        );
        repo::spend::adjust_totals(&mut tx, KEY, customer, Cents(300), now, now)
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    let mut addon_invoice = crate::helpers::invoice_request_for(placed, 300);
    addon_invoice.addon_id = Some(invoiced_addon.to_string());
    app.create_invoice(customer, addon_invoice).await;
    let mut tx = app.pool.begin().await.unwrap();
    let reaped = repo::spend::reap_unconfirmed(&mut tx, now + chrono::Duration::seconds(1), 200, now)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(reaped, 2, "the never-placed order and the never-stored add-on");
    assert_eq!(app.spent(customer, KEY).await, (1_200, 1_200));
    assert_eq!(app.summed(customer, KEY).await, 1_200);
    // A late cancellation of the reaped order changes nothing more.
    assert!(!app.release_spend(customer, &never_placed.to_string()).await);
    assert_eq!(app.spent(customer, KEY).await, (1_200, 1_200));
}
