//! Cron expressions, read by `croner`: six fields `sec min hour dom month dow` with names
//! (`0 0 9 * * Mon-Fri`), five fields taken as seconds = 0, evaluated in one time zone (DST
//! gaps and repeats are the crate's to resolve). Weekday 0 and 7 are Sunday.

use chrono::TimeZone;
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;
use time::OffsetDateTime;

/// The fields of a six-field expression, in order, as an error names them.
const FIELDS: [&str; 6] = [
    "second",
    "minute",
    "hour",
    "day of month",
    "month",
    "day of week",
];

/// Occurrences looked at to find the shortest interval of an expression.
const GAP_SAMPLES: usize = 128;

/// Why an expression was refused; `field` names the part at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cron `{expr}`: {field}: {why}")]
pub struct CronError {
    /// The expression as given.
    pub expr: String,
    /// The field at fault (`minute`, `hour`, …, or `cron` for the whole).
    pub field: &'static str,
    /// What is wrong with it, for people.
    pub why: String,
}

/// A time zone name that is not in the IANA database this build carries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{name}` is not an IANA time zone name (such as UTC or Europe/Berlin)")]
pub struct ZoneError {
    /// The name as given.
    pub name: String,
}

/// The zone cron expressions are read in (`schedules.timezone`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zone(chrono_tz::Tz);

impl Default for Zone {
    fn default() -> Self {
        Zone(chrono_tz::UTC)
    }
}

impl Zone {
    /// An IANA name such as `Europe/Berlin` or `UTC`.
    pub fn parse(name: &str) -> Result<Self, ZoneError> {
        name.trim()
            .parse::<chrono_tz::Tz>()
            .map(Zone)
            .map_err(|_| ZoneError {
                name: name.to_string(),
            })
    }

    /// The IANA name of the zone (`Europe/Paris`, `UTC`).
    pub fn name(&self) -> &'static str {
        self.0.name()
    }
}

/// A parsed expression that fires at least once.
#[derive(Debug, Clone)]
pub struct CronExpr {
    cron: Cron,
    text: String,
}

impl CronExpr {
    /// Parses `text`; `zone` is used only to check that it ever fires after `now`.
    pub fn parse(text: &str, zone: Zone, now: OffsetDateTime) -> Result<Self, CronError> {
        let err = |field: &'static str, why: String| CronError {
            expr: text.to_string(),
            field,
            why,
        };
        let fields: Vec<&str> = text.split_whitespace().collect();
        let six = match fields.len() {
            6 => fields.join(" "),
            5 => format!("0 {}", fields.join(" ")),
            n => {
                return Err(err(
                    "cron",
                    format!("has {n} fields; give 6 (sec min hour dom month dow) or 5 (min hour dom month dow)"),
                ))
            }
        };
        let cron = parser().parse(&six).map_err(|e| {
            let field = faulty_field(&six).unwrap_or("cron");
            err(field, e.to_string())
        })?;
        let expr = CronExpr {
            cron,
            text: text.trim().to_string(),
        };
        if expr.next_after(now, zone).is_none() {
            return Err(err(
                "cron",
                "never fires (no date matches its day, month and weekday fields)".into(),
            ));
        }
        Ok(expr)
    }

    /// The expression's text, as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The first fire strictly after `after`, or `None` if there is none the crate can find.
    pub fn next_after(&self, after: OffsetDateTime, zone: Zone) -> Option<OffsetDateTime> {
        let start = zone.0.timestamp_millis_opt(unix_ms(after)).single()?;
        let next = self.cron.find_next_occurrence(&start, false).ok()?;
        from_unix_ms(next.timestamp_millis())
    }

    /// The shortest time between two consecutive fires seen over the next occurrences after
    /// `from`: what `schedules.min_interval_secs` is checked against.
    pub fn shortest_gap(&self, from: OffsetDateTime, zone: Zone) -> Option<time::Duration> {
        let mut prev = self.next_after(from, zone)?;
        let mut shortest: Option<time::Duration> = None;
        for _ in 0..GAP_SAMPLES {
            let Some(next) = self.next_after(prev, zone) else {
                break;
            };
            let gap = next - prev;
            shortest = Some(shortest.map_or(gap, |s| s.min(gap)));
            prev = next;
        }
        shortest
    }
}

fn parser() -> CronParser {
    CronParser::builder()
        .seconds(Seconds::Required)
        .year(Year::Disallowed)
        .build()
}

/// The first field that fails on its own, every other field a wildcard.
fn faulty_field(six: &str) -> Option<&'static str> {
    let fields: Vec<&str> = six.split_whitespace().collect();
    (0..fields.len().min(FIELDS.len())).find_map(|i| {
        let probe: Vec<&str> = (0..6)
            .map(|j| if j == i { fields[i] } else { "*" })
            .collect();
        parser()
            .parse(&probe.join(" "))
            .is_err()
            .then_some(FIELDS[i])
    })
}

pub(crate) fn unix_ms(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

pub(crate) fn from_unix_ms(ms: i64) -> Option<OffsetDateTime> {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn utc() -> Zone {
        Zone::default()
    }

    fn berlin() -> Zone {
        Zone::parse("Europe/Berlin").unwrap()
    }

    fn next(expr: &str, zone: Zone, after: OffsetDateTime) -> OffsetDateTime {
        CronExpr::parse(expr, zone, after)
            .unwrap()
            .next_after(after, zone)
            .unwrap()
    }

    #[test]
    fn six_fields_with_weekday_names_fire_on_the_next_weekday_morning() {
        // 2026-01-02 is a Friday; the next weekday 09:00 after Friday 10:00 is Monday.
        let t = next("0 0 9 * * Mon-Fri", utc(), datetime!(2026-01-02 10:00 UTC));
        assert_eq!(t, datetime!(2026-01-05 09:00 UTC));
    }

    #[test]
    fn five_fields_are_read_with_seconds_zero() {
        let t = next("30 9 * * *", utc(), datetime!(2026-01-02 10:00 UTC));
        assert_eq!(t, datetime!(2026-01-03 09:30:00 UTC));
    }

    #[test]
    fn seconds_step_fires_every_two_seconds() {
        let t = next("*/2 * * * * *", utc(), datetime!(2026-01-02 10:00:01 UTC));
        assert_eq!(t, datetime!(2026-01-02 10:00:02 UTC));
    }

    #[test]
    fn month_end_rolls_to_the_next_month_that_has_the_day() {
        let t = next("0 0 12 31 * *", utc(), datetime!(2026-01-31 13:00 UTC));
        assert_eq!(t, datetime!(2026-03-31 12:00 UTC));
        let leap = next("0 0 0 29 2 *", utc(), datetime!(2026-03-01 0:00 UTC));
        assert_eq!(leap, datetime!(2028-02-29 0:00 UTC));
    }

    #[test]
    fn local_nine_oclock_stays_nine_oclock_across_the_spring_dst_change() {
        // Berlin leaves CET (+1) for CEST (+2) on 2026-03-29.
        let before = next("0 0 9 * * *", berlin(), datetime!(2026-03-28 09:30 UTC));
        assert_eq!(before, datetime!(2026-03-29 07:00 UTC));
        let winter = next("0 0 9 * * *", berlin(), datetime!(2026-03-27 09:30 UTC));
        assert_eq!(winter, datetime!(2026-03-28 08:00 UTC));
    }

    #[test]
    fn a_time_inside_the_spring_gap_still_fires_that_day() {
        // 02:30 does not exist in Berlin on 2026-03-29; the day still gets one fire.
        let t = next("0 30 2 * * *", berlin(), datetime!(2026-03-28 12:00 UTC));
        assert!(t > datetime!(2026-03-28 12:00 UTC));
        assert!(t < datetime!(2026-03-30 00:00 UTC), "{t}");
    }

    #[test]
    fn a_malformed_field_is_named() {
        let e = CronExpr::parse("0 0 25 * * *", utc(), datetime!(2026-01-01 0:00 UTC)).unwrap_err();
        assert_eq!(e.field, "hour");
        let e =
            CronExpr::parse("0 0 9 * * Funday", utc(), datetime!(2026-01-01 0:00 UTC)).unwrap_err();
        assert_eq!(e.field, "day of week");
        let e = CronExpr::parse("* * *", utc(), datetime!(2026-01-01 0:00 UTC)).unwrap_err();
        assert_eq!(e.field, "cron");
    }

    #[test]
    fn an_expression_that_never_fires_is_refused() {
        let e = CronExpr::parse("0 0 0 30 2 *", utc(), datetime!(2026-01-01 0:00 UTC)).unwrap_err();
        assert_eq!(e.field, "cron");
        assert!(e.why.contains("never fires"), "{e}");
    }

    #[test]
    fn the_shortest_gap_is_the_tightest_pair_of_fires() {
        let from = datetime!(2026-01-01 0:00 UTC);
        let e = CronExpr::parse("0,5 0 9 * * *", utc(), from).unwrap();
        assert_eq!(
            e.shortest_gap(from, utc()),
            Some(time::Duration::seconds(5))
        );
        let e = CronExpr::parse("0 */15 * * * *", utc(), from).unwrap();
        assert_eq!(
            e.shortest_gap(from, utc()),
            Some(time::Duration::minutes(15))
        );
    }

    #[test]
    fn an_unknown_zone_is_refused() {
        assert!(Zone::parse("Mars/Olympus").is_err());
        assert_eq!(Zone::parse("UTC").unwrap().name(), "UTC");
    }
}
