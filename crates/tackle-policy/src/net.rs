//! The URL and IP guard: is a model-supplied URL a destination the network grant allows?
//!
//! [`check_url`] parses with the `url` crate (WHATWG rules, which turn every IPv4 spelling —
//! `2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1` — into one address), then refuses non-HTTP
//! schemes, URLs with user info, private and internal destinations (unless `allow_private`),
//! and anything outside the grant's endpoints. Names are checked here; the host resolves
//! them once and passes every resolved address through [`check_ip`] before connecting.
//!
//! URLs with user info (`http://user:pass@host/`) are always refused: they hide the real host
//! from a reader (`http://good.com@127.0.0.1/` goes to 127.0.0.1) and put credentials in logs.
//! So is any `@` before the first `/` (`http://a.com\@127.0.0.1/`, `http://a.com?@b/`),
//! which other parsers read as user info. Also refused before any lookup: control characters
//! (the parser drops tabs and newlines silently), empty labels, port 0, names known to resolve
//! to loopback, and names that spell a blocked address (`127.0.0.1.nip.io`,
//! `app-10-0-0-1.sslip.io`), which wildcard DNS services resolve to that address.
//!
//! ```
//! use tackle_policy::net::check_url;
//! use tackle_protocol::NetworkGrant;
//! let open = NetworkGrant::default();
//! assert!(check_url("GET", "https://example.com/", &open).is_ok());
//! assert!(check_url("GET", "http://0x7f000001/", &open).is_err());
//! assert!(check_url("GET", "http://127.0.0.1.nip.io/", &open).is_err());
//! ```

use percent_encoding::percent_decode_str;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use tackle_protocol::{Decision, Endpoint, NetworkGrant};
use url::{Host, Url};

/// A URL that passed the guard, with the destination the host must connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedUrl {
    /// The parsed URL, normalised by the `url` crate; this is what the host must request.
    pub url: Url,
    /// The host as it must be resolved: a lowercase domain without trailing dot, or an IP.
    pub host: String,
    /// The port to connect to: the explicit one, else the scheme's default (80 if unknown).
    pub port: u16,
    /// Set when the URL names an IP address directly (nothing to resolve).
    pub ip: Option<IpAddr>,
}

const RULE_PRIVATE: &str = "grants.network.allow_private";
const RULE_ENDPOINTS: &str = "grants.network.endpoints";
const RULE_URL: &str = "grants.network";

/// Checks a URL (and method) against a network grant.
pub fn check_url(method: &str, url: &str, grant: &NetworkGrant) -> Result<CheckedUrl, Decision> {
    let shown = tackle_protocol::text::preview(url, 200);
    if !is_token(method) {
        return Err(Decision::deny(
            RULE_URL,
            format!(
                "`{shown}` is denied: `{}` is not an HTTP method",
                tackle_protocol::text::preview(method, 40)
            ),
        ));
    }
    check_raw(url, &shown)?;
    let parsed = Url::parse(url).map_err(|e| {
        Decision::deny(
            RULE_URL,
            format!("`{shown}` is denied: it is not a valid URL ({e})"),
        )
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Decision::deny(
            RULE_URL,
            format!(
                "`{shown}` is denied: the scheme `{}` is not allowed; only http and https are",
                parsed.scheme()
            ),
        ));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(user_info_denial(&shown));
    }
    let (host, ip) = host_of(&parsed, &shown)?;
    let port = parsed.port_or_known_default().unwrap_or(80);
    if port == 0 {
        return Err(Decision::deny(
            RULE_URL,
            format!("`{shown}` is denied: port 0 is never a valid destination"),
        ));
    }
    match ip {
        Some(ip) => {
            let d = check_ip(ip, grant.allow_private);
            if !d.is_allowed() {
                return Err(Decision::deny(
                    d.rule,
                    format!("`{shown}` is denied: {}", d.why),
                ));
            }
        }
        None => check_name(&host, grant.allow_private, &shown)?,
    }
    check_endpoints(method, &parsed, &host, port, ip, grant, &shown)?;
    Ok(CheckedUrl {
        url: parsed,
        host,
        port,
        ip,
    })
}

/// An HTTP method is a non-empty token (RFC 9110): no spaces, no line breaks.
fn is_token(m: &str) -> bool {
    !m.is_empty()
        && m.len() <= 32
        && m.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+.^_`|~-".contains(&b))
}

/// Refusals on the raw text, before parsing: URL parsers disagree about these, and the
/// WHATWG parser the guard uses silently drops tabs and line breaks.
fn check_raw(url: &str, shown: &str) -> Result<(), Decision> {
    if url.chars().any(|c| c.is_ascii_control()) {
        return Err(Decision::deny(
            RULE_URL,
            format!("`{shown}` is denied: it contains control characters (tabs, line breaks), which URL parsers silently drop"),
        ));
    }
    // `http://evil.com\@127.0.0.1/` or `http://a.com?@b/`: an `@` before the first `/` is
    // user info to some parsers and part of the path or query to others.
    let after_scheme = url.split_once(':').map(|(_, rest)| rest).unwrap_or("");
    let authority = after_scheme.trim_start_matches(['/', '\\']);
    let authority = authority.split('/').next().unwrap_or("");
    if authority.contains('@') {
        return Err(user_info_denial(shown));
    }
    Ok(())
}

fn user_info_denial(shown: &str) -> Decision {
    Decision::deny(
        RULE_URL,
        format!("`{shown}` is denied: URLs with user info (`user@host`, or an `@` before the first `/`) are refused because they hide the real host; send credentials in a header instead"),
    )
}

/// The host to resolve (lowercase, one trailing dot dropped) and its IP when it is literal.
fn host_of(parsed: &Url, shown: &str) -> Result<(String, Option<IpAddr>), Decision> {
    match parsed.host() {
        Some(Host::Domain(d)) => {
            let name = d.strip_suffix('.').unwrap_or(d).to_ascii_lowercase();
            if name.is_empty() || name.split('.').any(str::is_empty) {
                return Err(Decision::deny(
                    RULE_URL,
                    format!("`{shown}` is denied: the host `{d}` has an empty label"),
                ));
            }
            Ok((name, None))
        }
        Some(Host::Ipv4(v4)) => Ok((v4.to_string(), Some(IpAddr::V4(v4)))),
        Some(Host::Ipv6(v6)) => Ok((v6.to_string(), Some(IpAddr::V6(v6)))),
        None => Err(Decision::deny(
            RULE_URL,
            format!("`{shown}` is denied: it names no host"),
        )),
    }
}

/// Names refused before any lookup: internal names, and names that spell a blocked address
/// (`127.0.0.1.nip.io`), which wildcard DNS services resolve to that address.
fn check_name(host: &str, allow_private: bool, shown: &str) -> Result<(), Decision> {
    if let Some(kind) = internal_name(host) {
        if !allow_private {
            return Err(Decision::deny(
                RULE_PRIVATE,
                format!("`{shown}` is denied: `{host}` is {kind}, a private destination; set allow_private: true in the network grant to reach it"),
            ));
        }
    }
    for ip in ips_spelled_in(host) {
        let d = check_ip(ip, allow_private);
        if !d.is_allowed() {
            return Err(Decision::deny(
                d.rule,
                format!("`{shown}` is denied: the name `{host}` spells the address {ip}, where wildcard DNS (nip.io, sslip.io) sends it: {}", d.why),
            ));
        }
    }
    Ok(())
}

/// Wildcard DNS services that also accept hex (`7f000001`) and IPv6 (`--1`) spellings.
const WILDCARD_DNS: &[&str] = &[
    "nip.io",
    "sslip.io",
    "xip.io",
    "traefik.me",
    "ip.addr.tools",
];

/// IPv4 addresses spelled in a name as four dotted labels (`10.0.0.1.x.io`) or four dashed
/// numbers in a label (`app-10-0-0-1.x.io`); on wildcard services also hex and IPv6 labels.
fn ips_spelled_in(host: &str) -> Vec<IpAddr> {
    let labels: Vec<&str> = host.split('.').collect();
    let mut out: Vec<IpAddr> = labels.windows(4).filter_map(quad).collect();
    for label in &labels {
        let parts: Vec<&str> = label.split('-').collect();
        out.extend(parts.windows(4).filter_map(quad));
    }
    let wildcard = WILDCARD_DNS
        .iter()
        .any(|s| host == *s || host.strip_suffix(s).is_some_and(|p| p.ends_with('.')));
    if wildcard {
        for label in &labels {
            if label.contains("--") {
                if let Ok(v6) = label.replace('-', ":").parse::<Ipv6Addr>() {
                    out.push(IpAddr::V6(v6));
                }
            }
            for part in label.split('-') {
                if part.len() == 8 {
                    if let Ok(n) = u32::from_str_radix(part, 16) {
                        out.push(IpAddr::V4(Ipv4Addr::from(n)));
                    }
                }
            }
        }
    }
    out
}

/// Four decimal octets (`127`, `0`, `0`, `1`) as an address.
fn quad(parts: &[&str]) -> Option<IpAddr> {
    let mut octets = [0u8; 4];
    for (slot, p) in octets.iter_mut().zip(parts) {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *slot = p.parse().ok()?;
    }
    (parts.len() == 4).then_some(IpAddr::V4(Ipv4Addr::from(octets)))
}

/// Checks one address (a URL's literal IP, or each address a name resolved to).
pub fn check_ip(ip: IpAddr, allow_private: bool) -> Decision {
    match classify(ip) {
        None => Decision::allow(RULE_URL, format!("{ip} is a public address")),
        Some(Class::Private(range)) if allow_private => Decision::allow(
            RULE_PRIVATE,
            format!("{ip} is in the {range} range, allowed by allow_private: true"),
        ),
        Some(Class::Private(range)) => Decision::deny(
            RULE_PRIVATE,
            format!("{ip} is in the {range} range, a private destination; set allow_private: true in the network grant to reach it"),
        ),
        Some(Class::Reserved(range)) => Decision::deny(
            RULE_URL,
            format!("{ip} is in the {range} range, which is never a valid destination"),
        ),
    }
}

/// The blocked range `ip` falls in, e.g. `Some("loopback 127.0.0.0/8")`, or `None` if public.
pub fn blocked_range(ip: IpAddr) -> Option<&'static str> {
    match classify(ip)? {
        Class::Private(r) | Class::Reserved(r) => Some(r),
    }
}

/// Private ranges are lifted by `allow_private`; reserved ones never are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Private(&'static str),
    Reserved(&'static str),
}

fn classify(ip: IpAddr) -> Option<Class> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

const V4_RANGES: &[(u32, u8, Class)] = &[
    (
        0x0000_0000,
        8,
        Class::Reserved("\"this network\" 0.0.0.0/8"),
    ),
    (0x0A00_0000, 8, Class::Private("private 10.0.0.0/8")),
    (
        0x6440_0000,
        10,
        Class::Private("carrier-grade NAT 100.64.0.0/10"),
    ),
    (0x7F00_0000, 8, Class::Private("loopback 127.0.0.0/8")),
    (
        0xA9FE_0000,
        16,
        Class::Private("link-local (cloud metadata) 169.254.0.0/16"),
    ),
    (0xAC10_0000, 12, Class::Private("private 172.16.0.0/12")),
    (
        0xC000_0000,
        24,
        Class::Reserved("IETF protocol assignments 192.0.0.0/24"),
    ),
    (
        0xC000_0200,
        24,
        Class::Reserved("documentation 192.0.2.0/24"),
    ),
    (
        0xC058_6300,
        24,
        Class::Reserved("6to4 relay 192.88.99.0/24"),
    ),
    (0xC0A8_0000, 16, Class::Private("private 192.168.0.0/16")),
    (
        0xC612_0000,
        15,
        Class::Private("benchmarking 198.18.0.0/15"),
    ),
    (
        0xC633_6400,
        24,
        Class::Reserved("documentation 198.51.100.0/24"),
    ),
    (
        0xCB00_7100,
        24,
        Class::Reserved("documentation 203.0.113.0/24"),
    ),
    (
        0xA83F_8110,
        32,
        Class::Private("Azure platform (WireServer) 168.63.129.16/32"),
    ),
    (0xE000_0000, 4, Class::Reserved("multicast 224.0.0.0/4")),
    (
        0xFFFF_FFFF,
        32,
        Class::Reserved("broadcast 255.255.255.255/32"),
    ),
    (0xF000_0000, 4, Class::Reserved("reserved 240.0.0.0/4")),
];

fn classify_v4(ip: Ipv4Addr) -> Option<Class> {
    let n = u32::from(ip);
    V4_RANGES
        .iter()
        .find(|(net, len, _)| {
            n.checked_shr(32 - u32::from(*len)).unwrap_or(0)
                == net.checked_shr(32 - u32::from(*len)).unwrap_or(0)
        })
        .map(|(_, _, c)| *c)
}

const V6_RANGES: &[(u128, u8, Class)] = &[
    (0, 128, Class::Reserved("unspecified ::/128")),
    (1, 128, Class::Private("loopback ::1/128")),
    (0xfe80 << 112, 10, Class::Private("link-local fe80::/10")),
    (0xfec0 << 112, 10, Class::Private("site-local fec0::/10")),
    (0xfc00 << 112, 7, Class::Private("unique local fc00::/7")),
    (0xff00 << 112, 8, Class::Reserved("multicast ff00::/8")),
    (
        0x2001_0db8 << 96,
        32,
        Class::Reserved("documentation 2001:db8::/32"),
    ),
    (
        0x3fff << 112,
        20,
        Class::Reserved("documentation 3fff::/20"),
    ),
    (0x0100 << 112, 64, Class::Reserved("discard-only 100::/64")),
    (
        0x2001_0010 << 96,
        28,
        Class::Reserved("ORCHID 2001:10::/28"),
    ),
    (
        0x0064_ff9b_0001 << 80,
        48,
        Class::Private("local NAT64 64:ff9b:1::/48"),
    ),
];

fn classify_v6(ip: Ipv6Addr) -> Option<Class> {
    if let Some(v4) = embedded_v4(ip) {
        if let Some(c) = classify_v4(v4) {
            return Some(c);
        }
    }
    let n = u128::from(ip);
    V6_RANGES
        .iter()
        .find(|(net, len, _)| {
            let shift = 128 - u32::from(*len);
            n.checked_shr(shift).unwrap_or(0) == net.checked_shr(shift).unwrap_or(0)
        })
        .map(|(_, _, c)| *c)
}

/// The IPv4 address an IPv6 address carries: mapped, compatible, translated, NAT64, 6to4, Teredo.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let n = u128::from(ip);
    let low32 = Ipv4Addr::from((n & 0xffff_ffff) as u32);
    let top96 = n >> 32;
    if n <= 1 {
        return None; // `::` and `::1` are v6 unspecified and loopback
    }
    match top96 {
        0xffff => return Some(low32),      // ::ffff:a.b.c.d (mapped)
        0 => return Some(low32),           // ::a.b.c.d (compatible)
        0xffff_0000 => return Some(low32), // ::ffff:0:a.b.c.d (translated)
        0x0064_ff9b_0000_0000_0000_0000 => return Some(low32), // 64:ff9b::/96 (NAT64)
        _ => {}
    }
    let segs = ip.segments();
    if segs[0] == 0x2002 {
        let v = (u32::from(segs[1]) << 16) | u32::from(segs[2]);
        return Some(Ipv4Addr::from(v)); // 6to4
    }
    if segs[0] == 0x2001 && segs[1] == 0 {
        return Some(Ipv4Addr::from(!((n & 0xffff_ffff) as u32))); // Teredo client
    }
    None
}

/// Names that only resolve inside a machine or a private network.
fn internal_name(host: &str) -> Option<&'static str> {
    const SUFFIXES: &[(&str, &str)] = &[
        ("localhost", "a loopback name"),
        ("local", "an mDNS (.local) name"),
        ("internal", "an internal (.internal) name"),
        ("home.arpa", "a home network (.home.arpa) name"),
        ("localdomain", "a local domain name"),
        ("lan", "a LAN (.lan) name"),
        ("intranet", "an intranet name"),
        ("corp", "a corporate network (.corp) name"),
        ("localtest.me", "a public name that resolves to loopback"),
        ("lvh.me", "a public name that resolves to loopback"),
        ("vcap.me", "a public name that resolves to loopback"),
        ("lacolhost.com", "a public name that resolves to loopback"),
        ("localho.st", "a public name that resolves to loopback"),
    ];
    if !host.contains('.') {
        return Some("a single-label name, which only resolves on a local network");
    }
    SUFFIXES
        .iter()
        .find(|(s, _)| host == *s || host.strip_suffix(s).is_some_and(|p| p.ends_with('.')))
        .map(|(_, kind)| *kind)
}

fn check_endpoints(
    method: &str,
    url: &Url,
    host: &str,
    port: u16,
    ip: Option<IpAddr>,
    grant: &NetworkGrant,
    shown: &str,
) -> Result<(), Decision> {
    if grant.endpoints.is_empty() {
        return Ok(());
    }
    let hosts: Vec<&Endpoint> = grant
        .endpoints
        .iter()
        .filter(|e| host_matches(&e.host, host, port, ip))
        .collect();
    if hosts.is_empty() {
        let list: Vec<&str> = grant.endpoints.iter().map(|e| e.host.as_str()).collect();
        return Err(Decision::deny(
            RULE_ENDPOINTS,
            format!(
                "`{shown}` is denied: the host `{host}` matches no allowed endpoint ({})",
                list.join(", ")
            ),
        ));
    }
    let segments = path_segments(url.path());
    let on_path: Vec<&&Endpoint> = hosts
        .iter()
        .filter(|e| path_matches(e.path_prefix.as_deref(), segments.as_deref()))
        .collect();
    if on_path.is_empty() {
        return Err(Decision::deny(
            RULE_ENDPOINTS,
            format!("`{shown}` is denied: the path `{}` is outside the allowed path prefixes for `{host}`", url.path()),
        ));
    }
    let method_ok = on_path.iter().any(|e| match &e.methods {
        None => true,
        Some(ms) => ms.iter().any(|m| m.eq_ignore_ascii_case(method.trim())),
    });
    if !method_ok {
        return Err(Decision::deny(
            RULE_ENDPOINTS,
            format!("`{shown}` is denied: the method `{method}` is not allowed for this endpoint"),
        ));
    }
    Ok(())
}

/// `api.github.com` exactly, `*.example.com` for sub-domains only, `*` for any host; an
/// optional `:PORT` pins the port. Unicode names compare in their ASCII (punycode) form.
fn host_matches(pattern: &str, host: &str, port: u16, ip: Option<IpAddr>) -> bool {
    let pattern = pattern.trim().trim_end_matches('.');
    if pattern == "*" {
        return true;
    }
    let (pattern, want_port) = split_port(pattern);
    if want_port.is_some_and(|p| p != port) {
        return false;
    }
    if let Some(suffix) = pattern.strip_prefix("*.") {
        let Some(suffix) = normalize_domain(suffix) else {
            return false;
        };
        return ip.is_none()
            && host
                .strip_suffix(suffix.as_str())
                .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.'));
    }
    let bare = pattern.trim_start_matches('[').trim_end_matches(']');
    if let Ok(v6) = bare.parse::<Ipv6Addr>() {
        return ip == Some(IpAddr::V6(v6));
    }
    match (Host::parse(pattern), ip) {
        (Ok(Host::Ipv4(a)), Some(b)) => IpAddr::V4(a) == b,
        (Ok(Host::Ipv6(a)), Some(b)) => IpAddr::V6(a) == b,
        (Ok(Host::Domain(d)), None) => d.trim_end_matches('.').eq_ignore_ascii_case(host),
        _ => false,
    }
}

fn split_port(pattern: &str) -> (&str, Option<u16>) {
    if let Some((h, p)) = pattern.rsplit_once(':') {
        if !h.is_empty() && !h.ends_with(':') && (h.starts_with('[') || !h.contains(':')) {
            if let Ok(p) = p.parse() {
                return (h, Some(p));
            }
        }
    }
    (pattern, None)
}

fn normalize_domain(d: &str) -> Option<String> {
    match Host::parse(d) {
        Ok(Host::Domain(d)) => Some(d.trim_end_matches('.').to_ascii_lowercase()),
        _ => None,
    }
}

/// Percent-decoded path segments, or `None` when a segment hides a separator or a dot
/// segment (`%2F`, `%5C`, `..;`) that a server might resolve differently.
fn path_segments(path: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for raw in path.strip_prefix('/').unwrap_or(path).split('/') {
        // Bytes that are not UTF-8 (`%c0%ae`, an overlong `.`) are refused outright.
        let seg = percent_decode_str(raw).decode_utf8().ok()?.into_owned();
        let bare = seg.split(';').next().unwrap_or("");
        if seg.contains(['/', '\\']) || is_dot_segment(bare) || seg.contains('%') && raw != seg {
            return None;
        }
        out.push(seg);
    }
    Some(out)
}

/// `.` and `..`, and look-alikes (`．．` fullwidth, `‥`) that Unicode-normalising servers
/// turn into them.
fn is_dot_segment(seg: &str) -> bool {
    const DOTS: &[char] = &[
        '.', '\u{FF0E}', '\u{3002}', '\u{FE52}', '\u{2024}', '\u{2025}', '\u{FF61}',
    ];
    (1..=2).contains(&seg.chars().count()) && seg.chars().all(|c| DOTS.contains(&c))
}

/// Whole-segment prefix match: `/v1` covers `/v1` and `/v1/x`, not `/v10` or `/v1/../admin`.
fn path_matches(prefix: Option<&str>, segments: Option<&[String]>) -> bool {
    let Some(prefix) = prefix else { return true };
    let Some(segments) = segments else {
        return false;
    };
    let want: Vec<String> = prefix
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    want.len() <= segments.len() && want.iter().zip(segments).all(|(a, b)| a == b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_ipv4_in_every_ipv6_form_is_found() {
        for s in [
            "::ffff:127.0.0.1",
            "::127.0.0.1",
            "64:ff9b::7f00:1",
            "2002:7f00:1::",
            "::ffff:0:7f00:1",
        ] {
            let ip: Ipv6Addr = s.parse().unwrap_or(Ipv6Addr::UNSPECIFIED);
            assert_eq!(embedded_v4(ip), Some(Ipv4Addr::new(127, 0, 0, 1)), "{s}");
        }
    }

    #[test]
    fn blocked_range_names_the_range() {
        assert_eq!(
            blocked_range(
                "127.0.0.1"
                    .parse()
                    .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
            ),
            Some("loopback 127.0.0.0/8")
        );
        assert_eq!(
            blocked_range(IpAddr::V4(Ipv4Addr::new(93, 184, 216, 34))),
            None
        );
    }

    #[test]
    fn private_ranges_open_with_allow_private_but_reserved_ones_never_do() {
        let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
        assert!(check_ip(lo, true).is_allowed());
        assert!(check_ip(lo, false).is_denied());
        assert!(check_ip(IpAddr::V4(Ipv4Addr::UNSPECIFIED), true).is_denied());
    }
}
