//! Name resolution behind a trait: the system resolver in production, and a static table in
//! front of it that tests use to make names resolve to chosen (private, loopback, mapped)
//! addresses without touching DNS.

use futures::future::BoxFuture;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

/// Resolves a host name to its addresses.
pub trait Resolver: Send + Sync + 'static {
    fn resolve<'a>(&'a self, host: &'a str) -> BoxFuture<'a, std::io::Result<Vec<IpAddr>>>;
}

/// The operating system's resolver (`tokio::net::lookup_host`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> BoxFuture<'a, std::io::Result<Vec<IpAddr>>> {
        Box::pin(async move {
            let addresses = tokio::net::lookup_host((host, 443)).await?;
            let mut unique: Vec<IpAddr> = Vec::new();
            for address in addresses.map(|socket| socket.ip()) {
                if !unique.contains(&address) {
                    unique.push(address);
                }
            }
            Ok(unique)
        })
    }
}

/// A fixed table of names (tests only), falling back to another resolver for other names.
pub struct StaticResolver {
    table: HashMap<String, Vec<IpAddr>>,
    fallback: Arc<dyn Resolver>,
}

impl StaticResolver {
    /// Answers the names of `table` (case-insensitive) from it and every other name from `fallback`.
    pub fn new(table: &HashMap<String, Vec<IpAddr>>, fallback: Arc<dyn Resolver>) -> Self {
        let table = table
            .iter()
            .map(|(name, addresses)| (name.to_ascii_lowercase(), addresses.clone()))
            .collect();
        Self { table, fallback }
    }
}

impl Resolver for StaticResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> BoxFuture<'a, std::io::Result<Vec<IpAddr>>> {
        match self.table.get(&host.to_ascii_lowercase()) {
            Some(addresses) => {
                let addresses = addresses.clone();
                Box::pin(async move { Ok(addresses) })
            }
            None => self.fallback.resolve(host),
        }
    }
}
