//! The URL and IP guard.
use std::net::IpAddr;
use tackle_protocol::{Decision, NetworkGrant};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedUrl {
    pub url: url::Url,
    pub host: String,
    pub port: u16,
    pub ip: Option<IpAddr>,
}

pub fn check_url(_method: &str, _url: &str, _grant: &NetworkGrant) -> Result<CheckedUrl, Decision> {
    Err(Decision::deny(
        "grants.network",
        "the URL guard is not ready",
    ))
}

pub fn check_ip(_ip: IpAddr, _allow_private: bool) -> Decision {
    Decision::deny("grants.network", "the IP guard is not ready")
}

pub fn blocked_range(_ip: IpAddr) -> Option<&'static str> {
    Some("unchecked")
}
