//! One line per schedule and per fire, shared by `schedule_list` and `tackle schedule list`.

use tackle_store::{FireRecord, FireStatus, Schedule, ScheduleKind};
use time::OffsetDateTime;

/// `- id: expr (disabled) [fired N×] max_fires 3, expires … · target · next … · last … — task`.
pub fn schedule_line(s: &Schedule, last: Option<&FireRecord>) -> String {
    let expr = match s.kind {
        ScheduleKind::Interval => format!("every {} s", s.spec),
        _ => s.spec.clone(),
    };
    let mut line = format!("- {}: {expr}", s.name);
    if !s.enabled {
        line.push_str(" (disabled)");
    }
    line.push_str(&format!(" [fired {}×]", s.fire_count));
    let mut bounds = Vec::new();
    if let Some(m) = s.max_fires {
        bounds.push(format!("max_fires {m}"));
    }
    if let Some(e) = s.expires_at {
        bounds.push(format!("expires {}", stamp(e)));
    }
    if !bounds.is_empty() {
        line.push_str(&format!(" {}", bounds.join(", ")));
    }
    line.push_str(&format!(" · {}", s.target.as_str()));
    // Work planted by another agent runs as `s.agent` with both agents' grants intersected.
    if !s.owner.is_empty() && s.owner != s.agent {
        line.push_str(&format!(" · runs as {}, planted by {}", s.agent, s.owner));
    }
    if let Some(n) = s.next_fire.filter(|_| s.enabled) {
        line.push_str(&format!(" · next {}", stamp(n)));
    }
    if let Some(f) = last {
        line.push_str(&format!(" · last {}", fire_outcome(f)));
    }
    line.push_str(&format!(" — {}", s.message));
    line
}

/// `2026-01-02 09:00:00Z ok (1.2 s)` / `… failed: why`.
pub fn fire_line(f: &FireRecord) -> String {
    format!("{} {}", stamp(f.due), fire_outcome(f))
}

fn fire_outcome(f: &FireRecord) -> String {
    let took = match (f.started, f.finished) {
        (Some(s), Some(e)) => format!(" ({:.1} s)", (e - s).as_seconds_f64()),
        _ => String::new(),
    };
    match f.status {
        FireStatus::Ok => format!("ok{took}"),
        status if f.detail.is_empty() => format!("{}{took}", status.as_str()),
        status => format!("{}: {}{took}", status.as_str(), f.detail),
    }
}

/// `YYYY-MM-DD HH:MM:SSZ`, the form one-shots are listed with after `@`.
pub(crate) fn stamp(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    let fmt = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]Z");
    t.format(&fmt)
        .unwrap_or_else(|_| t.unix_timestamp().to_string())
}
