//! Adversarial checks of the URL and IP guard beyond the corpus: every blocked IPv4 address
//! must stay blocked in every IPv6 wrapping and every numeric spelling, and no input panics.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use tackle_policy::net::{check_ip, check_url};
use tackle_protocol::NetworkGrant;

const BLOCKED: &[[u8; 4]] = &[
    [127, 0, 0, 1],
    [127, 255, 255, 254],
    [10, 1, 2, 3],
    [172, 16, 0, 1],
    [192, 168, 1, 1],
    [169, 254, 169, 254],
    [100, 100, 100, 200],
    [0, 0, 0, 0],
    [168, 63, 129, 16],
];

/// Every IPv6 form that carries an IPv4 address.
fn wrappings(v4: Ipv4Addr) -> Vec<Ipv6Addr> {
    let n = u32::from(v4);
    let (hi, lo) = ((n >> 16) as u16, (n & 0xffff) as u16);
    vec![
        v4.to_ipv6_mapped(),
        Ipv6Addr::new(0, 0, 0, 0, 0, 0, hi, lo),
        Ipv6Addr::new(0, 0, 0, 0, 0xffff, 0, hi, lo),
        Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, hi, lo),
        Ipv6Addr::new(0x2002, hi, lo, 0, 0, 0, 0, 1),
        Ipv6Addr::new(0x2001, 0, 0x4136, 0xe378, 0x8000, 0x63bf, !hi, !lo),
    ]
}

/// Every numeric spelling the WHATWG parser reads as `v4`.
fn spellings(v4: Ipv4Addr) -> Vec<String> {
    let [a, b, c, d] = v4.octets();
    let n = u32::from(v4);
    vec![
        format!("{a}.{b}.{c}.{d}"),
        format!("{n}"),
        format!("0x{n:x}"),
        format!("0x{n:08X}"),
        format!("0{n:o}"),
        format!("0x{a:x}.0x{b:x}.0x{c:x}.0x{d:x}"),
        format!("0{a:o}.0{b:o}.0{c:o}.0{d:o}"),
        format!(
            "{a}.{}",
            (u32::from(b) << 16) | (u32::from(c) << 8) | u32::from(d)
        ),
        format!("{a}.{b}.{}", (u32::from(c) << 8) | u32::from(d)),
        format!("{a}.{b}.{c}.{d}."),
        format!("000{a:o}.{b}.{c}.0x{d:x}"),
    ]
}

#[test]
fn every_ipv6_wrapping_of_a_blocked_ipv4_address_is_blocked() {
    for octets in BLOCKED {
        let v4 = Ipv4Addr::from(*octets);
        assert!(check_ip(IpAddr::V4(v4), false).is_denied(), "{v4}");
        for v6 in wrappings(v4) {
            assert!(
                check_ip(IpAddr::V6(v6), false).is_denied(),
                "{v6} carries {v4}"
            );
            let url = format!("http://[{v6}]/");
            assert!(
                check_url("GET", &url, &NetworkGrant::default()).is_err(),
                "{url}"
            );
        }
    }
}

#[test]
fn every_numeric_spelling_of_a_blocked_ipv4_address_is_blocked() {
    for octets in BLOCKED {
        let v4 = Ipv4Addr::from(*octets);
        for s in spellings(v4) {
            for url in [format!("http://{s}/"), format!("https://{s}:8443/x")] {
                let got = check_url("GET", &url, &NetworkGrant::default());
                assert!(got.is_err(), "{url} ({v4}) was allowed: {got:?}");
            }
        }
    }
}

#[test]
fn public_addresses_in_the_same_spellings_are_allowed() {
    let v4 = Ipv4Addr::new(93, 184, 216, 34);
    for s in spellings(v4) {
        let url = format!("http://{s}/");
        assert!(
            check_url("GET", &url, &NetworkGrant::default()).is_ok(),
            "{url}"
        );
    }
}

#[test]
fn allow_private_never_opens_the_unspecified_address_in_any_form() {
    let v4 = Ipv4Addr::UNSPECIFIED;
    let grant = NetworkGrant {
        allow_private: true,
        ..NetworkGrant::default()
    };
    for s in spellings(v4) {
        let url = format!("http://{s}/");
        assert!(check_url("GET", &url, &grant).is_err(), "{url}");
    }
    assert!(check_url("GET", "http://[::]/", &grant).is_err());
}

#[test]
fn the_guard_never_panics_on_hostile_text() {
    let pieces = [
        "http://", "[", "]", "::", "%", "%2", "%ff", "@", "\\", "#", "?", ":", "0x", ".", "..",
        "é", "\u{FF0E}", "\u{3002}", "xn--", "-", "\t", "\n", "\0", "65536", "/", ";",
    ];
    let grant = NetworkGrant::default();
    for i in 0..pieces.len() {
        for j in 0..pieces.len() {
            for k in 0..pieces.len() {
                let url = format!("{}{}{}{}", pieces[0], pieces[i], pieces[j], pieces[k]);
                let _ = check_url("GET", &url, &grant);
                let _ = check_url(pieces[i], &url, &grant);
            }
        }
    }
}
