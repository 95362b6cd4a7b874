//! Who the client of a request is, for the limits that apply before authentication.
//!
//! The client is the TCP peer address, unless the peer is one of the configured trusted proxies
//! (`GATEWAY_TRUSTED_PROXIES`, e.g. the ingress controller's pod range): then `X-Forwarded-For`
//! is read from the right, skipping trusted proxies, and the first untrusted address is the
//! client. A header sent by anyone else is ignored, so a client cannot pick its own address.
//! IPv6 clients are grouped by /64, the block a single host usually controls.

use http::HeaderMap;
use ipnet::IpNet;
use std::net::{IpAddr, Ipv6Addr};

/// Header written by proxies: `client, proxy1, proxy2`.
pub const X_FORWARDED_FOR: &str = "x-forwarded-for";

/// The client address of a request as the front door determined it (behind trusted proxies),
/// in the request's extensions for the handlers that limit by it (public verification).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

impl ClientAddr {
    /// The address of an optional extension (unspecified without one: the benchmark's router).
    pub fn of(extension: Option<axum::Extension<ClientAddr>>) -> IpAddr {
        extension.map_or(
            IpAddr::V6(Ipv6Addr::UNSPECIFIED),
            |axum::Extension(ClientAddr(address))| address,
        )
    }
}

/// The value of `GATEWAY_TRUSTED_PROXIES` that states explicitly that no proxy stands in front
/// of the gateway (the peer address is the client).
pub const NO_PROXIES: &str = "none";

/// The proxies whose `X-Forwarded-For` is believed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// Parses comma-separated addresses or CIDR ranges (`10.0.0.0/8, 192.0.2.7, fd00::/8`), or
    /// [`NO_PROXIES`].
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut nets = Vec::new();
        if text.trim().eq_ignore_ascii_case(NO_PROXIES) {
            return Ok(Self(nets));
        }
        for item in text.split(',').map(str::trim).filter(|item| !item.is_empty()) {
            let net = match item.parse::<IpNet>() {
                Ok(net) => net,
                Err(_) => item
                    .parse::<IpAddr>()
                    .map(IpNet::from)
                    .map_err(|_| format!("{item:?} is neither an address nor a CIDR range"))?,
            };
            nets.push(net);
        }
        Ok(Self(nets))
    }

    /// True when `address` is a trusted proxy.
    pub fn contains(&self, address: IpAddr) -> bool {
        let address = canonical(address);
        self.0.iter().any(|net| net.contains(&address))
    }

    /// True when no proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The client of a request that arrived from `peer` with `headers`.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let peer = canonical(peer);
        if self.is_empty() || !self.contains(peer) {
            return peer;
        }
        // Every X-Forwarded-For line, in order, as one list; read from the nearest hop back.
        let mut hops: Vec<IpAddr> = Vec::new();
        for value in headers.get_all(X_FORWARDED_FOR) {
            let Ok(text) = value.to_str() else {
                return peer;
            };
            for hop in text.split(',').map(str::trim) {
                match hop.parse::<IpAddr>() {
                    Ok(address) => hops.push(canonical(address)),
                    // A malformed hop cannot be attributed: the last trusted address answers for it.
                    Err(_) => hops.clear(),
                }
            }
        }
        let mut client = peer;
        for hop in hops.into_iter().rev() {
            client = hop;
            if !self.contains(hop) {
                break;
            }
        }
        client
    }
}

/// The key under which a client address is limited: the address itself for IPv4, its /64 for
/// IPv6 (an IPv4-mapped IPv6 address counts as the IPv4 address).
pub fn limit_key(address: IpAddr) -> IpAddr {
    match canonical(address) {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => {
            let segments = v6.segments();
            IpAddr::V6(Ipv6Addr::new(
                segments[0],
                segments[1],
                segments[2],
                segments[3],
                0,
                0,
                0,
                0,
            ))
        }
    }
}

fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn forwarded(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(X_FORWARDED_FOR, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn without_trusted_proxies_the_peer_is_the_client_whatever_the_header_says() {
        let proxies = TrustedProxies::default();
        let headers = forwarded(&["203.0.113.9"]);
        assert_eq!(proxies.client(ip("198.51.100.1"), &headers), ip("198.51.100.1"));
    }

    #[test]
    fn a_trusted_proxy_names_the_client_and_spoofed_hops_on_the_left_are_ignored() {
        let proxies = TrustedProxies::parse("10.0.0.0/8, 192.0.2.7").unwrap();
        let headers = forwarded(&["1.1.1.1, 203.0.113.9", "10.1.2.3"]);
        assert_eq!(proxies.client(ip("192.0.2.7"), &headers), ip("203.0.113.9"));
        // An untrusted peer's header is not believed.
        assert_eq!(proxies.client(ip("198.51.100.1"), &headers), ip("198.51.100.1"));
        // No header from a trusted proxy: the proxy itself is the client.
        assert_eq!(proxies.client(ip("10.9.9.9"), &HeaderMap::new()), ip("10.9.9.9"));
        // A garbage hop cannot be attributed beyond the trusted chain.
        let garbage = forwarded(&["203.0.113.9, not-an-ip"]);
        assert_eq!(proxies.client(ip("10.9.9.9"), &garbage), ip("10.9.9.9"));
    }

    #[test]
    fn proxies_parse_addresses_and_ranges_and_refuse_garbage() {
        let proxies = TrustedProxies::parse(" ::1 , fd00::/8,127.0.0.1").unwrap();
        assert!(proxies.contains(ip("fd12::1")));
        assert!(proxies.contains(ip("::ffff:127.0.0.1")));
        assert!(!proxies.contains(ip("127.0.0.2")));
        assert!(TrustedProxies::parse("").unwrap().is_empty());
        assert!(TrustedProxies::parse("10.0.0.0/33").is_err());
        assert!(TrustedProxies::parse("proxy.example").is_err());
    }

    #[test]
    fn ipv6_clients_are_limited_per_64_and_mapped_ipv4_as_ipv4() {
        assert_eq!(
            limit_key(ip("2001:db8:1:2:aaaa:bbbb:cccc:dddd")),
            ip("2001:db8:1:2::")
        );
        assert_eq!(limit_key(ip("::ffff:192.0.2.1")), ip("192.0.2.1"));
        assert_eq!(limit_key(ip("192.0.2.1")), ip("192.0.2.1"));
    }
}
