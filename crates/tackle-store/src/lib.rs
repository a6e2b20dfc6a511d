//! SQLite state store: sessions, memory banks, schedules, audit log
