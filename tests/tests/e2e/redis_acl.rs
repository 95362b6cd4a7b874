//! Redis ACL users of the deployments (`deploy/k8s/overlays/dev/redis-users.acl`, also loaded by
//! `deploy/docker/compose.yaml`): the whole mesh works with each process connected as its own
//! user, Redis refuses each user what is not its own (another domain's stream above all), and
//! the manifests hand every process the password of its own user.

use crate::support::bank_order;
use platform::testing::wait_for;
use redis::AsyncCommands;
use std::collections::BTreeMap;
use std::time::Duration;
use tests::Sandbox;

/// Every process of the mesh, by the name of its Redis user.
const PROCESSES: [&str; 8] = [
    "gateway",
    "identity-svc",
    "catalog-svc",
    "orders-svc",
    "payments-svc",
    "shipping-svc",
    "results-svc",
    "webhooks-svc",
];

fn deploy_file(path: &str) -> String {
    let path = format!("{}/../deploy/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

fn acl_path() -> String {
    format!(
        "{}/../deploy/k8s/overlays/dev/redis-users.acl",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The users of the ACL file that are on, with their plaintext password.
fn acl_passwords() -> BTreeMap<String, String> {
    deploy_file("k8s/overlays/dev/redis-users.acl")
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            (words.next()? == "user").then_some(())?;
            let name = words.next()?.to_owned();
            let words: Vec<&str> = words.collect();
            words.contains(&"on").then_some(())?;
            let password = words.iter().find_map(|word| word.strip_prefix('>'))?;
            Some((name, password.to_owned()))
        })
        .collect()
}

/// Every `redis://user:password@` URL of a text, as (user, password).
fn redis_credentials(text: &str) -> Vec<(String, String)> {
    text.match_indices("redis://")
        .filter_map(|(at, scheme)| {
            let rest = &text[at + scheme.len()..];
            let userinfo = &rest[..rest.find('@')?];
            let (user, password) = userinfo.split_once(':')?;
            // Placeholders such as `<user>:<password>` in comments are not credentials.
            let named = !user.is_empty() && user.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
            named.then(|| (user.to_owned(), password.to_owned()))
        })
        .collect()
}

#[test]
fn the_compose_file_and_the_dev_overlay_give_each_process_the_password_of_its_own_acl_user() {
    let passwords = acl_passwords();
    assert!(!passwords.contains_key("default"), "the default user is off");
    for file in ["docker/compose.yaml", "k8s/overlays/dev/kustomization.yaml"] {
        let text = deploy_file(file);
        assert!(
            !text.contains("redis://redis:"),
            "{file}: a Redis URL without a user"
        );
        let credentials = redis_credentials(&text);
        let users: Vec<&str> = credentials.iter().map(|(user, _)| user.as_str()).collect();
        assert_eq!(users, PROCESSES, "{file}: one URL per process, in order");
        for (user, password) in &credentials {
            assert_eq!(passwords.get(user), Some(password), "{file}: password of {user}");
        }
    }
    for process in PROCESSES {
        let manifest = deploy_file(&format!("k8s/base/{process}.yaml"));
        let reference = format!("name: lab-redis-users\n                  key: {process}\n");
        assert!(manifest.contains(&reference), "{process} reads its own Redis URL");
    }
}

/// A memory-only Redis of this test that loads the ACL file, killed when dropped.
struct AclRedis {
    child: std::process::Child,
    port: u16,
}

impl AclRedis {
    async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .args(["--appendonly", "no", "--aclfile", &acl_path()])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server must be installed (the README's test command installs it)");
        let redis = Self { child, port };
        let operator = redis.url("operator");
        wait_for("the ACL Redis to answer", Duration::from_secs(10), || {
            let operator = operator.clone();
            async move {
                let client = redis::Client::open(operator).ok()?;
                let mut connection = client.get_multiplexed_async_connection().await.ok()?;
                redis::cmd("PING")
                    .query_async::<String>(&mut connection)
                    .await
                    .ok()
            }
        })
        .await;
        redis
    }

    fn url(&self, user: &str) -> String {
        let password = &acl_passwords()[user];
        format!("redis://{user}:{password}@127.0.0.1:{}", self.port)
    }

    async fn connect(&self, user: &str) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url(user))
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }
}

impl Drop for AclRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Asserts that `result` is Redis's ACL refusal.
fn refused<T: std::fmt::Debug>(what: &str, result: redis::RedisResult<T>) {
    match result {
        Err(error) if error.to_string().to_ascii_uppercase().contains("NOPERM") => {}
        other => panic!("{what} must be refused with NOPERM: {other:?}"),
    }
}

#[tokio::test]
async fn the_mesh_works_with_each_process_as_its_own_redis_user_and_redis_refuses_the_rest() {
    let acl = AclRedis::start().await;
    let urls: BTreeMap<&str, String> = PROCESSES.iter().map(|user| (*user, acl.url(user))).collect();
    let sandbox = Sandbox::start_with(|settings| {
        for (process, common) in [
            ("gateway", &mut settings.gateway.common),
            ("identity-svc", &mut settings.identity.common),
            ("catalog-svc", &mut settings.catalog.common),
            ("orders-svc", &mut settings.orders.common),
            ("payments-svc", &mut settings.payments.common),
            ("shipping-svc", &mut settings.shipping.common),
            ("results-svc", &mut settings.results.common),
            ("webhooks-svc", &mut settings.webhooks.common),
        ] {
            common.redis_url = urls[process].clone();
            // The ACL file names the streams of the prefix `lab`.
            common.stream_prefix = "lab".to_owned();
        }
    })
    .await;

    // A bank order paid end to end: every relay, consumer and housekeeping round of the flow.
    let agent = sandbox.customer("Acl Peptides", "all").await;
    let (order_id, invoice, total) = bank_order(&sandbox, &agent, "acl-order-1").await;
    // shipping-svc reads the orders stream and writes its own: the label moves the order.
    crate::support::wait_for_label(&sandbox, &agent, &order_id).await;
    crate::support::record_bank_payment(&sandbox, &invoice, &total, "ACL-1").await;
    wait_for("the order to be paid", Duration::from_secs(30), || async {
        let answer = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
        (answer.body["data"]["order"]["payment"]["status"] == "paid").then_some(())
    })
    .await;
    let mut operator = acl.connect("operator").await;
    wait_for(
        "webhooks-svc to read every event",
        Duration::from_secs(20),
        || async {
            let mut operator = acl.connect("operator").await;
            let groups: redis::streams::StreamInfoGroupsReply =
                operator.xinfo_groups("lab:events:payments").await.ok()?;
            groups
                .groups
                .iter()
                .any(|group| {
                    group.name == "webhooks-svc" && group.entries_read == Some(3) && group.pending == 0
                })
                .then_some(())
        },
    )
    .await;
    // A metrics scrape reads every consumer group's lag and pending entries and the dead-letter
    // streams' lengths, each process as its own user.
    let metrics = reqwest::get(format!(
        "http://{}/metrics",
        sandbox.in_process().metrics_addr.unwrap()
    ))
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    assert!(
        metrics
            .contains("stream_consumer_lag_entries{stream=\"lab:events:payments\",group=\"webhooks-svc\"} 0"),
        "{metrics}"
    );
    assert!(metrics.contains("stream_dead_letter_entries{stream=\"lab:events:orders:dead\"} 0"));
    sandbox.stop().await;

    // Nothing any process did (the scrape's reads included) was refused (redis-rs's CLIENT SETINFO, sent on Redis 7.2+ and
    // ignored when refused, is the one command no user is granted).
    let log: Vec<redis::Value> = redis::cmd("ACL")
        .arg("LOG")
        .query_async(&mut operator)
        .await
        .unwrap();
    let denials: Vec<String> = log
        .iter()
        .map(|entry| format!("{entry:?}"))
        .filter(|entry| !entry.contains("setinfo"))
        .collect();
    assert!(denials.is_empty(), "the mesh hit ACL refusals: {denials:#?}");

    // And what is not a process's own is refused.
    let mut payments = acl.connect("payments-svc").await;
    refused(
        "payments-svc writing the orders stream",
        payments
            .xadd::<_, _, _, _, String>("lab:events:orders", "*", &[("envelope", "forged")])
            .await,
    );
    refused(
        "payments-svc writing its own consumed stream's neighbour's dead letters",
        payments
            .xadd::<_, _, _, _, String>("lab:events:payments:dead", "*", &[("x", "1")])
            .await,
    );
    refused(
        "payments-svc reading a stream it does not consume",
        payments.xlen::<_, u64>("lab:events:catalog").await,
    );
    refused(
        "payments-svc flushing",
        redis::cmd("FLUSHALL").query_async::<()>(&mut payments).await,
    );
    let mut orders = acl.connect("orders-svc").await;
    refused(
        "orders-svc writing the payments stream",
        orders
            .xadd::<_, _, _, _, String>("lab:events:payments", "*", &[("envelope", "forged")])
            .await,
    );
    refused(
        "orders-svc deleting another stream",
        orders.del::<_, i64>("lab:events:payments").await,
    );
    // Services and the gateway read the staff-token revocations identity-svc writes, and cannot
    // write them; identity-svc's announcements live under its own `lab:identity:`.
    let staff_revocations = platform::tokens::revocations::key("lab");
    let key_revocations = platform::streams::key_revocation_channel("lab");
    let mut gateway = acl.connect("gateway").await;
    for (process, connection) in [("orders-svc", &mut orders), ("the gateway", &mut gateway)] {
        let _: std::collections::HashMap<String, String> =
            connection.hgetall(&staff_revocations).await.unwrap();
        refused(
            &format!("{process} writing a staff-token revocation"),
            connection
                .hset::<_, _, _, i64>(&staff_revocations, "operator:x", "1")
                .await,
        );
        refused(
            &format!("{process} publishing a staff-token revocation"),
            connection
                .publish::<_, _, i64>(&staff_revocations, "operator:x 1")
                .await,
        );
    }
    refused(
        "the gateway writing a stream",
        gateway
            .xadd::<_, _, _, _, String>("lab:events:orders", "*", &[("x", "1")])
            .await,
    );
    refused(
        "the gateway using a key outside its own",
        gateway.set::<_, _, ()>("lab:other", "1").await,
    );
    let (): () = gateway.set("lab:gateway:probe", "1").await.unwrap();
    refused(
        "the gateway announcing a key revocation",
        gateway.publish::<_, _, i64>(&key_revocations, "key-id").await,
    );
    let mut identity = acl.connect("identity-svc").await;
    let _: i64 = identity.publish(&key_revocations, "key-id").await.unwrap();
    let _: i64 = identity
        .hset(&staff_revocations, "operator:x", "1")
        .await
        .unwrap();
    let _: i64 = identity
        .publish(&staff_revocations, "operator:x 1")
        .await
        .unwrap();
    refused(
        "identity-svc using a key outside its own",
        identity.set::<_, _, ()>("lab:gateway:probe", "1").await,
    );
    let mut webhooks = acl.connect("webhooks-svc").await;
    refused(
        "webhooks-svc writing a domain stream",
        webhooks
            .xadd::<_, _, _, _, String>("lab:events:results", "*", &[("x", "1")])
            .await,
    );
    let anonymous = redis::Client::open(format!("redis://127.0.0.1:{}", acl.port)).unwrap();
    let mut anonymous = anonymous.get_multiplexed_async_connection().await.unwrap();
    let ping = redis::cmd("PING").query_async::<String>(&mut anonymous).await;
    assert!(
        ping.as_ref()
            .is_err_and(|error| error.to_string().contains("NOAUTH")),
        "a connection without a user is refused: {ping:?}"
    );
}
