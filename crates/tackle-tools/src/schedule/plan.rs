//! When a schedule fires next, and whether a recurring expression may be planted at all.

use super::cron::{CronExpr, Zone};
use tackle_protocol::ToolError;
use tackle_store::ScheduleKind;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The first fire of a `kind`/`spec` schedule strictly after `after`; `None` for a one-shot
/// (its only fire is stored when it is made) or a spec that cannot be read.
pub fn next_fire(
    kind: ScheduleKind,
    spec: &str,
    after: OffsetDateTime,
    zone: Zone,
) -> Option<OffsetDateTime> {
    match kind {
        ScheduleKind::Cron => CronExpr::parse(spec, zone, after)
            .ok()?
            .next_after(after, zone),
        ScheduleKind::Interval => {
            let secs: i64 = spec.trim().parse().ok().filter(|s| *s > 0)?;
            after.checked_add(time::Duration::seconds(secs))
        }
        ScheduleKind::Once => None,
    }
}

/// Parses `expr` and refuses it when two of its fires come closer than `min_interval`.
pub fn check_recurring(
    expr: &str,
    zone: Zone,
    min_interval: std::time::Duration,
    now: OffsetDateTime,
) -> Result<CronExpr, ToolError> {
    let cron = CronExpr::parse(expr, zone, now)
        .map_err(|e| ToolError::invalid_arguments(e.to_string()))?;
    let min = time::Duration::try_from(min_interval).unwrap_or(time::Duration::MAX);
    if let Some(gap) = cron.shortest_gap(now, zone) {
        if gap < min {
            return Err(ToolError::invalid_arguments(format!(
                "cron `{expr}` fires every {} s; the shortest interval allowed is {} s (schedules.min_interval_secs)",
                gap.whole_seconds(),
                min_interval.as_secs()
            )));
        }
    }
    Ok(cron)
}

/// An RFC 3339 instant named by argument `field`.
pub fn parse_time(field: &str, value: &str) -> Result<OffsetDateTime, ToolError> {
    OffsetDateTime::parse(value.trim(), &Rfc3339).map_err(|e| {
        ToolError::invalid_arguments(format!(
            "`{field}`: `{value}` is not an RFC 3339 time ({e}); give one such as 2026-01-02T03:04:05Z"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use time::macros::datetime;

    #[test]
    fn a_cron_faster_than_the_minimum_interval_is_refused() {
        let now = datetime!(2026-01-01 0:00 UTC);
        let e = check_recurring(
            "*/10 * * * * *",
            Zone::default(),
            Duration::from_secs(60),
            now,
        )
        .unwrap_err();
        assert!(e.message.contains("min_interval_secs"), "{}", e.message);
        assert!(
            check_recurring("0 * * * * *", Zone::default(), Duration::from_secs(60), now).is_ok()
        );
        assert!(check_recurring(
            "*/2 * * * * *",
            Zone::default(),
            Duration::from_secs(1),
            now
        )
        .is_ok());
    }

    #[test]
    fn an_interval_fires_its_seconds_later_and_a_once_never_again() {
        let t = datetime!(2026-01-01 0:00 UTC);
        assert_eq!(
            next_fire(ScheduleKind::Interval, "90", t, Zone::default()),
            Some(datetime!(2026-01-01 0:01:30 UTC))
        );
        assert_eq!(
            next_fire(ScheduleKind::Interval, "x", t, Zone::default()),
            None
        );
        assert_eq!(
            next_fire(ScheduleKind::Once, "@…", t, Zone::default()),
            None
        );
    }
}
