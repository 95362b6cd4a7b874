//! Which IP addresses a webhook may never reach: every address that is not globally routable
//! unicast, judged on the address itself and, for IPv6 forms that embed an IPv4 address
//! (IPv4-mapped, IPv4-compatible, NAT64, 6to4), on the embedded address too.
//!
//! A refusal's message never names the address or its range: a customer registering a name
//! must not learn what it resolves to inside our network. The address and the reason are kept
//! on [`RefusedAddress`] for debug logs.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An address refused by the guard. Its message (for the registration error and the attempt
/// log, both shown to the customer) names neither; log them with [`RefusedAddress::log`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the host resolves to a non-public address")]
pub struct RefusedAddress {
    pub address: IpAddr,
    pub reason: &'static str,
}

impl RefusedAddress {
    /// Logs the refused address and its range at debug level, for operators.
    pub fn log(&self, host: &str) {
        tracing::debug!(host, address = %self.address, reason = self.reason, "webhook target address refused");
    }
}

/// Checks one address. `allow_loopback` (development and tests only) admits plain 127.0.0.0/8
/// and `::1`, never their IPv4-mapped or other embedded forms.
pub fn check_ip(address: IpAddr, allow_loopback: bool) -> Result<(), RefusedAddress> {
    let reason = match address {
        IpAddr::V4(v4) => {
            if allow_loopback && v4.is_loopback() {
                return Ok(());
            }
            v4_refusal(v4)
        }
        IpAddr::V6(v6) => {
            if allow_loopback && v6 == Ipv6Addr::LOCALHOST {
                return Ok(());
            }
            v6_refusal(v6)
        }
    };
    match reason {
        Some(reason) => Err(RefusedAddress { address, reason }),
        None => Ok(()),
    }
}

/// The reason an IPv4 address is not a public unicast address, if it is not.
fn v4_refusal(address: Ipv4Addr) -> Option<&'static str> {
    let reason = match address.octets() {
        [0, ..] => "unspecified or this-network address (0.0.0.0/8)",
        [10, ..] => "private address (10.0.0.0/8)",
        [100, second, ..] if (64..=127).contains(&second) => "shared CGNAT address (100.64.0.0/10)",
        [127, ..] => "loopback address (127.0.0.0/8)",
        [169, 254, ..] => "link-local address (169.254.0.0/16)",
        [172, second, ..] if (16..=31).contains(&second) => "private address (172.16.0.0/12)",
        [192, 0, 0, _] => "IETF protocol assignment (192.0.0.0/24)",
        [192, 88, 99, _] => "6to4 relay anycast address (192.88.99.0/24)",
        [168, 63, 129, 16] => "cloud platform host address (168.63.129.16)",
        [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _] => "documentation address",
        [192, 168, ..] => "private address (192.168.0.0/16)",
        [198, 18 | 19, ..] => "benchmarking address (198.18.0.0/15)",
        [first, ..] if (224..=239).contains(&first) => "multicast address (224.0.0.0/4)",
        [first, ..] if first >= 240 => "reserved or broadcast address (240.0.0.0/4)",
        _ => return None,
    };
    Some(reason)
}

/// The reason an IPv6 address is not a public unicast address, if it is not.
fn v6_refusal(address: Ipv6Addr) -> Option<&'static str> {
    let segments = address.segments();
    if address.is_unspecified() {
        return Some("unspecified address (::)");
    }
    if address == Ipv6Addr::LOCALHOST {
        return Some("loopback address (::1)");
    }
    if let Some(embedded) = address.to_ipv4_mapped() {
        return v4_refusal(embedded).map(|_| "IPv4-mapped form of a refused IPv4 address (::ffff:0:0/96)");
    }
    if segments[..6] == [0; 6] {
        let embedded = embedded_ipv4(segments[6], segments[7]);
        return v4_refusal(embedded).map(|_| "IPv4-compatible form of a refused IPv4 address (::/96)");
    }
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let embedded = embedded_ipv4(segments[6], segments[7]);
        return v4_refusal(embedded).map(|_| "NAT64 form of a refused IPv4 address (64:ff9b::/96)");
    }
    if segments[0] == 0x2002 {
        let embedded = embedded_ipv4(segments[1], segments[2]);
        return v4_refusal(embedded).map(|_| "6to4 form of a refused IPv4 address (2002::/16)");
    }
    let reason = match segments {
        [0x64, 0xff9b, 1, ..] => "local-use NAT64 address (64:ff9b:1::/48)",
        [0x100, 0, 0, 0, ..] => "discard-only address (100::/64)",
        [0x2001, 0, ..] => "Teredo address (2001::/32)",
        [0x2001, second, ..] if second < 0x200 => "IETF protocol assignment (2001::/23)",
        [0x2001, 0xdb8, ..] => "documentation address (2001:db8::/32)",
        [0x3fff, second, ..] if second < 0x1000 => "documentation address (3fff::/20)",
        [first, ..] if first & 0xfe00 == 0xfc00 => "unique local address (fc00::/7)",
        [first, ..] if first & 0xffc0 == 0xfe80 => "link-local address (fe80::/10)",
        [first, ..] if first & 0xffc0 == 0xfec0 => "site-local address (fec0::/10)",
        [first, ..] if first & 0xff00 == 0xff00 => "multicast address (ff00::/8)",
        [first, ..] if first & 0xe000 != 0x2000 => "reserved address (outside 2000::/3)",
        _ => return None,
    };
    Some(reason)
}

fn embedded_ipv4(high: u16, low: u16) -> Ipv4Addr {
    let [a, b] = high.to_be_bytes();
    let [c, d] = low.to_be_bytes();
    Ipv4Addr::new(a, b, c, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> bool {
        check_ip(text.parse().unwrap(), false).is_err()
    }

    #[test]
    fn every_non_public_ipv4_range_is_refused_at_its_edges() {
        for address in [
            "0.0.0.0",
            "0.255.255.255",
            "10.0.0.0",
            "10.0.0.1",
            "10.255.255.255",
            "100.64.0.0",
            "100.127.255.255",
            "127.0.0.1",
            "127.255.255.254",
            "169.254.0.1",
            "169.254.169.254",
            "172.16.0.0",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.168.0.1",
            "192.168.255.255",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "192.88.99.0",
            "192.88.99.1",
            "192.88.99.255",
            "168.63.129.16",
            "224.0.0.1",
            "239.255.255.255",
            "240.0.0.1",
            "255.255.255.255",
        ] {
            assert!(refused(address), "{address} must be refused");
        }
    }

    #[test]
    fn public_ipv4_addresses_just_outside_the_ranges_pass() {
        for address in [
            "1.1.1.1",
            "8.8.8.8",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "169.253.255.255",
            "169.255.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.167.255.255",
            "192.169.0.0",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
            "192.88.98.255",
            "192.88.100.0",
            "168.63.129.15",
            "168.63.129.17",
        ] {
            assert!(!refused(address), "{address} must pass");
        }
    }

    #[test]
    fn non_public_ipv6_forms_are_refused() {
        for address in [
            "::",
            "::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "ff02::1",
            "ff05::2",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:192.168.1.1",
            "::ffff:0.0.0.0",
            "::127.0.0.1",
            "::10.1.2.3",
            "64:ff9b::a00:1",
            "64:ff9b::7f00:1",
            "64:ff9b:1::1",
            "2002:a00:1::1",
            "2002:7f00:1::",
            "2001:db8::1",
            "2001::1",
            "2001:1::1",
            "2001:2::1",
            "2001:3::1",
            "2001:4:112::1",
            "2001:10::1",
            "2001:20::1",
            "2001:30::1",
            "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff",
            "3fff::1",
            "3fff:fff:ffff::1",
            "2002:c058:6301::1",
            "::ffff:192.88.99.1",
            "::ffff:168.63.129.16",
            "100::1",
            "4000::1",
            "::2",
        ] {
            assert!(refused(address), "{address} must be refused");
        }
    }

    #[test]
    fn public_ipv6_and_embedded_public_ipv4_pass() {
        for address in [
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "2001:200::1",
            "2001:4860:4860::8888",
            "3fff:1000::1",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert!(!refused(address), "{address} must pass");
        }
    }

    #[test]
    fn allowing_loopback_admits_only_plain_loopback() {
        for address in ["127.0.0.1", "127.1.2.3", "::1"] {
            assert!(check_ip(address.parse().unwrap(), true).is_ok(), "{address}");
        }
        for address in [
            "::ffff:127.0.0.1",
            "64:ff9b::7f00:1",
            "::127.0.0.1",
            "10.0.0.1",
            "169.254.169.254",
            "0.0.0.0",
            "::",
            "fe80::1",
        ] {
            assert!(check_ip(address.parse().unwrap(), true).is_err(), "{address}");
        }
    }

    #[test]
    fn the_refusal_message_names_neither_the_address_nor_its_range_which_stay_for_the_log() {
        for (text, range) in [
            ("169.254.169.254", "169.254.0.0/16"),
            ("10.1.2.3", "10.0.0.0/8"),
            ("fd00:ec2::254", "fc00::/7"),
            ("168.63.129.16", "168.63.129.16"),
        ] {
            let error = check_ip(text.parse().unwrap(), false).unwrap_err();
            assert_eq!(error.to_string(), "the host resolves to a non-public address");
            assert_eq!(error.address, text.parse::<IpAddr>().unwrap());
            assert!(error.reason.contains(range), "{}", error.reason);
        }
    }
}
