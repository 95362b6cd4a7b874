//! Unit tests of URL shapes and of name vetting through a static resolver.

use super::*;
use std::collections::HashMap;

fn shape_error(text: &str) -> String {
    match WebhookUrl::parse(text) {
        Err(GuardError::Shape(message)) => message.to_owned(),
        other => panic!("{text} should have a shape error, got {other:?}"),
    }
}

fn guard(allow_loopback: bool) -> AddressGuard {
    let mut table: HashMap<String, Vec<IpAddr>> = HashMap::new();
    let mut name = |host: &str, addresses: &[&str]| {
        table.insert(
            host.to_owned(),
            addresses.iter().map(|address| address.parse().unwrap()).collect(),
        );
    };
    name(
        "public.example",
        &["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
    );
    name("private.example", &["10.0.0.1"]);
    name("metadata.example", &["169.254.169.254"]);
    name("v6-loopback.example", &["::1"]);
    name("mapped.example", &["::ffff:127.0.0.1"]);
    name("loopback.example", &["127.0.0.1"]);
    name("mixed.example", &["93.184.215.14", "192.168.1.10"]);
    name("empty.example", &[]);
    let resolver = StaticResolver::new(&table, Arc::new(Unresolvable));
    AddressGuard::new(Arc::new(resolver), allow_loopback)
}

struct Unresolvable;

impl Resolver for Unresolvable {
    fn resolve<'a>(&'a self, host: &'a str) -> futures::future::BoxFuture<'a, std::io::Result<Vec<IpAddr>>> {
        let message = format!("no such host {host}");
        Box::pin(async move { Err(std::io::Error::other(message)) })
    }
}

#[test]
fn only_https_urls_with_a_host_and_without_user_info_are_accepted() {
    assert_eq!(shape_error("http://example.com/hook"), "the url must use https");
    assert_eq!(shape_error("ftp://example.com/hook"), "the url must use https");
    assert_eq!(
        shape_error("https://user:pass@example.com/hook"),
        "the url must not contain user info"
    );
    assert_eq!(
        shape_error("https://user@example.com/hook"),
        "the url must not contain user info"
    );
    assert_eq!(
        shape_error("example.com/hook"),
        "the url is not a valid absolute URL"
    );
    assert_eq!(shape_error(""), "the url is required");
    let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LENGTH));
    assert_eq!(shape_error(&long), "the url must be at most 2048 characters");
    let accepted = WebhookUrl::parse("https://Hooks.Example.com:8443/a?b=c").unwrap();
    assert_eq!(accepted.host(), &UrlHost::Domain("hooks.example.com".to_owned()));
    assert_eq!(accepted.as_str(), "https://hooks.example.com:8443/a?b=c");
}

#[test]
fn odd_spellings_of_ipv4_literals_are_normalized_and_judged() {
    for (text, address) in [
        ("https://2130706433/", "127.0.0.1"),
        ("https://0x7f.1/", "127.0.0.1"),
        ("https://0177.0.0.1/", "127.0.0.1"),
        ("https://[::ffff:7f00:1]/", "::ffff:127.0.0.1"),
        ("https://[0:0:0:0:0:0:0:1]/", "::1"),
    ] {
        let url = WebhookUrl::parse(text).unwrap();
        assert_eq!(url.host(), &UrlHost::Ip(address.parse().unwrap()), "{text}");
    }
}

#[tokio::test]
async fn literal_urls_of_refused_ranges_are_refused() {
    let guard = guard(false);
    for text in [
        "https://127.0.0.1/",
        "https://10.0.0.1/",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]/",
        "https://[::ffff:127.0.0.1]/",
        "https://[fd00::1]/",
        "https://[fe80::1]/",
        "https://100.64.0.1/",
        "https://0.0.0.0/",
        "https://224.0.0.1/",
        "https://255.255.255.255/",
        "https://2130706433/",
    ] {
        let url = WebhookUrl::parse(text).unwrap();
        assert!(
            matches!(guard.vet_url(&url).await, Err(GuardError::Refused(_))),
            "{text} must be refused"
        );
    }
    let public = WebhookUrl::parse("https://93.184.215.14/hook").unwrap();
    guard.vet_url(&public).await.unwrap();
}

#[tokio::test]
async fn names_are_refused_when_any_address_is_refused() {
    let guard = guard(false);
    for host in [
        "private.example",
        "metadata.example",
        "v6-loopback.example",
        "mapped.example",
        "loopback.example",
        "mixed.example",
    ] {
        assert!(
            matches!(guard.vet_host(host).await, Err(GuardError::Refused(_))),
            "{host} must be refused"
        );
    }
    assert_eq!(guard.vet_host("PUBLIC.example").await.unwrap().len(), 2);
    assert!(matches!(
        guard.vet_host("empty.example").await,
        Err(GuardError::NoAddress(_))
    ));
    assert!(matches!(
        guard.vet_host("nowhere.example").await,
        Err(GuardError::Lookup { .. })
    ));
}

#[tokio::test]
async fn allowing_loopback_admits_names_of_plain_loopback_only() {
    let guard = guard(true);
    guard.vet_host("loopback.example").await.unwrap();
    guard.vet_host("v6-loopback.example").await.unwrap();
    for host in [
        "mapped.example",
        "private.example",
        "metadata.example",
        "mixed.example",
    ] {
        assert!(guard.vet_host(host).await.is_err(), "{host} must stay refused");
    }
}

#[tokio::test]
async fn the_client_resolver_pins_the_vetted_addresses_and_refuses_the_others() {
    use reqwest::dns::Resolve;
    let guard = guard(false);
    let addresses: Vec<SocketAddr> = guard
        .resolve("public.example".parse().unwrap())
        .await
        .unwrap()
        .collect();
    assert_eq!(addresses[0], "93.184.215.14:0".parse().unwrap());
    let refused = guard.resolve("metadata.example".parse().unwrap()).await;
    let error = refused.err().expect("refused");
    assert!(error.to_string().contains("non-public address"), "{error}");
    assert!(
        !error.to_string().contains("169.254"),
        "the address is not echoed: {error}"
    );
}
