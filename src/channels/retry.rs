//! How every adapter calls its platform: a rate limit (429) waited out for as long as the
//! platform asks, a server error or a network failure tried again with a growing backoff,
//! anything else (a refused token, a bad request) given up at once.

use super::ChannelError;
use serde_json::Value;
use std::future::Future;
use std::time::Duration;

/// Tries of one call that fails with a server error or on the network.
const MAX_FAILURES: u32 = 5;
/// Rate-limit answers one call waits out before it gives up.
const MAX_RATE_LIMITED: u32 = 20;
/// The longest wait a rate limit is trusted for.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// How one try ended, when it did not succeed.
pub enum Attempt {
    /// Worth another try after a backoff (a 5xx, the network).
    Again(String),
    /// Rate-limited: try again after this long.
    RateLimited(Duration),
    Final(ChannelError),
}

/// `what` (a method's name, for the messages) tried by `attempt` until it succeeds, fails
/// for good, or its retries are spent.
pub async fn retried<F, Fut>(
    platform: &str,
    what: &str,
    mut attempt: F,
) -> Result<Value, ChannelError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Value, Attempt>>,
{
    let (mut failures, mut limited) = (0u32, 0u32);
    loop {
        let wait = match attempt().await {
            Ok(result) => return Ok(result),
            Err(Attempt::Final(e)) => return Err(e),
            Err(Attempt::RateLimited(after)) => {
                limited += 1;
                if limited > MAX_RATE_LIMITED {
                    return Err(ChannelError::Failed(format!(
                        "{what}: still rate-limited after {MAX_RATE_LIMITED} waits"
                    )));
                }
                let after = after.min(MAX_RETRY_AFTER);
                tracing::info!("{platform} {what}: rate-limited, retrying in {after:?}");
                after
            }
            Err(Attempt::Again(why)) => {
                failures += 1;
                if failures >= MAX_FAILURES {
                    return Err(ChannelError::Failed(format!(
                        "{what}: {why} ({failures} tries)"
                    )));
                }
                let wait = Duration::from_millis(500 * 2u64.pow(failures - 1));
                tracing::info!("{platform} {what}: {why}; retrying in {wait:?}");
                wait
            }
        };
        tokio::time::sleep(wait).await;
    }
}

/// One try, for a probe that must answer at once (`tackle doctor`): what a retry would wait
/// out is said instead.
pub async fn once<Fut>(attempt: Fut) -> Result<Value, ChannelError>
where
    Fut: Future<Output = Result<Value, Attempt>>,
{
    match attempt.await {
        Ok(v) => Ok(v),
        Err(Attempt::Final(e)) => Err(e),
        Err(Attempt::Again(why)) => Err(ChannelError::Failed(why)),
        Err(Attempt::RateLimited(after)) => Err(ChannelError::Failed(format!(
            "rate-limited for {} s",
            after.as_secs()
        ))),
    }
}
