//! Retry timing: exponential backoff with jitter, bounded attempts, `Retry-After` honoured.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime};

/// How often and how patiently a request is retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total tries, the first included. `1` disables retries.
    pub max_attempts: u32,
    /// The wait before the first retry; doubled for each later one.
    pub base_delay: Duration,
    /// The longest wait between tries. A `Retry-After` longer than this ends the retries,
    /// so a call never sleeps for minutes unseen.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// The wait before try number `attempt + 1` (attempt counts from 1), or `None` when the
    /// attempts are used up or the server asked for a longer wait than `max_delay`.
    pub fn delay_after(&self, attempt: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if attempt >= self.max_attempts {
            return None;
        }
        if let Some(wait) = retry_after {
            return (wait <= self.max_delay).then_some(wait);
        }
        let exp = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)));
        let capped = exp.min(self.max_delay);
        // Jitter in [50%, 100%] of the backoff, so clients that failed together spread out.
        let half = capped / 2;
        let nanos = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
        let jitter = if nanos == 0 { 0 } else { random_u64() % nanos };
        Some(half + Duration::from_nanos(jitter))
    }
}

/// Parses `Retry-After`: delta-seconds or an HTTP date (a date in the past means "now").
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Ok(secs) = value.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Duration::try_from_secs_f64(secs).ok();
        }
        return None;
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Randomness for jitter only: the std hasher is randomly keyed per `RandomState`.
fn random_u64() -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_accepts_seconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        // 2015-10-21 07:28:10 GMT is 10 s after `now`.
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }

    #[test]
    fn backoff_doubles_with_jitter_and_stops_at_max_attempts() {
        let p = RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(10),
        };
        for (attempt, full) in [(1, 100), (2, 200), (3, 400)] {
            let d = p.delay_after(attempt, None).expect("retry allowed");
            assert!(
                d >= Duration::from_millis(full / 2) && d <= Duration::from_millis(full),
                "{d:?}"
            );
        }
        assert_eq!(p.delay_after(4, None), None);
    }

    #[test]
    fn a_retry_after_longer_than_max_delay_ends_the_retries() {
        let p = RetryPolicy {
            max_delay: Duration::from_secs(5),
            ..RetryPolicy::default()
        };
        assert_eq!(
            p.delay_after(1, Some(Duration::from_secs(3))),
            Some(Duration::from_secs(3))
        );
        assert_eq!(p.delay_after(1, Some(Duration::from_secs(3600))), None);
    }
}
