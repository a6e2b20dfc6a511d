//! Stripe webhook signatures: `Stripe-Signature: t=TIMESTAMP,v1=HEX[,v1=HEX…][,v0=…]` is an
//! HMAC-SHA256 of `TIMESTAMP.PAYLOAD` under the endpoint's signing secret. Any `v1` may match
//! (several during a secret roll); the comparison is constant-time; a timestamp more than the
//! tolerance away from now is refused, so a captured event cannot be replayed later.

use ring::hmac;

/// Stripe's own libraries' default.
pub(crate) const TOLERANCE_SECS: i64 = 300;

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum WebhookError {
    #[error("the signature header has no `t=` timestamp")]
    NoTimestamp,
    #[error("the signature header has no `v1=` signature")]
    NoSignature,
    #[error("the signature's timestamp is {0} s from now, more than the {TOLERANCE_SECS} s allowed (a replay, or a wrong clock)")]
    Stale(i64),
    #[error("no `v1` signature matches the payload under the configured webhook secret")]
    Mismatch,
}

/// The verified event's timestamp, or why the signature does not hold.
pub(crate) fn verify(
    secret: &str,
    payload: &str,
    header: &str,
    now_secs: i64,
) -> Result<i64, WebhookError> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => timestamp = v.trim().parse::<i64>().ok(),
            Some(("v1", v)) => signatures.extend(hex(v.trim())),
            _ => {}
        }
    }
    let t = timestamp.ok_or(WebhookError::NoTimestamp)?;
    if signatures.is_empty() {
        return Err(WebhookError::NoSignature);
    }
    let skew = now_secs.saturating_sub(t).saturating_abs();
    if skew > TOLERANCE_SECS {
        return Err(WebhookError::Stale(skew));
    }
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let signed = format!("{t}.{payload}");
    // `hmac::verify` compares in constant time; every candidate is tried.
    let matched = signatures.iter().fold(false, |ok, sig| {
        hmac::verify(&key, signed.as_bytes(), sig).is_ok() | ok
    });
    if matched {
        Ok(t)
    } else {
        Err(WebhookError::Mismatch)
    }
}

/// Lower- or upper-case hex to bytes; `None` for anything else (never a match).
fn hex(s: &str) -> Option<Vec<u8>> {
    if s.is_empty() || !s.len().is_multiple_of(2) {
        return None;
    }
    let digit = |b: u8| (b as char).to_digit(16);
    s.as_bytes()
        .chunks(2)
        .map(|p| match p {
            [a, b] => Some((digit(*a)? * 16 + digit(*b)?) as u8),
            _ => None,
        })
        .collect()
}

/// The `v1` signature Stripe would send for `payload` at `t` (tests and examples).
#[cfg(test)]
pub(crate) fn sign(secret: &str, payload: &str, t: i64) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let tag = hmac::sign(&key, format!("{t}.{payload}").as_bytes());
    tag.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_test_secret";
    const PAYLOAD: &str = r#"{"id":"evt_1","type":"payment_intent.succeeded"}"#;

    #[test]
    fn a_fresh_signature_verifies_among_several() {
        let t = 1_700_000_000;
        let good = sign(SECRET, PAYLOAD, t);
        let header = format!("t={t},v1={},v1={good},v0=abc", "00".repeat(32));
        assert_eq!(verify(SECRET, PAYLOAD, &header, t + 10), Ok(t));
        let upper = format!("t={t},v1={}", good.to_ascii_uppercase());
        assert_eq!(verify(SECRET, PAYLOAD, &upper, t), Ok(t));
    }

    #[test]
    fn tampering_staleness_and_missing_parts_are_refused() {
        let t = 1_700_000_000;
        let header = format!("t={t},v1={}", sign(SECRET, PAYLOAD, t));
        assert_eq!(
            verify(SECRET, "{}", &header, t),
            Err(WebhookError::Mismatch)
        );
        assert_eq!(
            verify("whsec_other", PAYLOAD, &header, t),
            Err(WebhookError::Mismatch)
        );
        assert_eq!(
            verify(SECRET, PAYLOAD, &header, t + 301),
            Err(WebhookError::Stale(301))
        );
        assert_eq!(
            verify(SECRET, PAYLOAD, &header, t - 301),
            Err(WebhookError::Stale(301))
        );
        assert!(verify(SECRET, PAYLOAD, &header, t + 300).is_ok());
        assert_eq!(
            verify(SECRET, PAYLOAD, "v1=ab", t),
            Err(WebhookError::NoTimestamp)
        );
        assert_eq!(
            verify(SECRET, PAYLOAD, &format!("t={t},v0=ab"), t),
            Err(WebhookError::NoSignature)
        );
        assert_eq!(
            verify(SECRET, PAYLOAD, &format!("t={t},v1=zz"), t),
            Err(WebhookError::NoSignature)
        );
    }
}
