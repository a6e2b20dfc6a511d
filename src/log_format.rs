//! The log lines on stderr. Tackle's own events are printed as tracing formats them (level,
//! message, fields shown with `%`); a library's event is printed as its level and message
//! only, in plain words ([`crate::errors::plain`]): libraries attach their structs as fields
//! with `?` (the MCP SDK's `?message`, `?notification`), which would put Rust debug output on a
//! person's terminal.

use std::fmt;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::{Format, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Events from targets starting with this are Tackle's own.
const OWN: &str = "tackle";

pub struct PlainEvents {
    own: Format<tracing_subscriber::fmt::format::Full, ()>,
}

impl PlainEvents {
    pub fn new(ansi: bool) -> Self {
        Self {
            own: Format::default()
                .without_time()
                .with_target(false)
                .with_ansi(ansi),
        }
    }
}

impl<S, N> FormatEvent<S, N> for PlainEvents
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        if meta.target().starts_with(OWN) {
            return self.own.format_event(ctx, writer, event);
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        writeln!(
            writer,
            "{:>5} {}",
            meta.level(),
            crate::errors::plain(&message.0)
        )
    }
}

/// Keeps an event's `message` and nothing else.
struct Message(String);

impl Visit for Message {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0 = value.to_string();
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // A message is format arguments, whose `Debug` is their text.
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}
