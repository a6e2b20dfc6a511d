//! What the model names that ends up in a provider's URL path or request: each is checked
//! against the provider's own id format, and an emoji is percent-encoded byte by byte, so no
//! `/`, `?`, `#`, `..` or `%2e%2e` can turn a request into another endpoint.

use tackle_protocol::text::preview;
use tackle_protocol::ToolError;

fn bad(what: &str, expected: &str, got: &str) -> ToolError {
    ToolError::invalid_arguments(format!(
        "`{what}` must be {expected}, got `{}`",
        preview(got, 60)
    ))
}

fn all_digits(s: &str, max: usize) -> bool {
    !s.is_empty() && s.len() <= max && s.bytes().all(|b| b.is_ascii_digit())
}

/// A Discord snowflake (channel or message id): decimal digits.
pub(super) fn snowflake<'a>(what: &str, s: &'a str) -> Result<&'a str, ToolError> {
    let s = s.trim();
    if all_digits(s, 20) {
        Ok(s)
    } else {
        Err(bad(what, "a Discord id (digits)", s))
    }
}

/// A Telegram chat: a numeric id (negative for groups and channels) or `@username`.
pub(super) fn telegram_chat(s: &str) -> Result<serde_json::Value, ToolError> {
    let s = s.trim();
    if let Some(name) = s.strip_prefix('@') {
        let ok = (1..=64).contains(&name.len())
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        return if ok {
            Ok(serde_json::Value::String(s.to_string()))
        } else {
            Err(bad(
                "chat_id",
                "a Telegram chat id (digits) or @username",
                s,
            ))
        };
    }
    let digits = s.strip_prefix('-').unwrap_or(s);
    match s.parse::<i64>() {
        Ok(n) if all_digits(digits, 19) => Ok(serde_json::Value::from(n)),
        _ => Err(bad(
            "chat_id",
            "a Telegram chat id (digits) or @username",
            s,
        )),
    }
}

/// A Telegram message id: a positive integer.
pub(super) fn telegram_message(what: &str, s: &str) -> Result<u64, ToolError> {
    let s = s.trim();
    match s.parse::<u64>() {
        Ok(n) if all_digits(s, 19) => Ok(n),
        _ => Err(bad(what, "a Telegram message id (digits)", s)),
    }
}

/// A Slack conversation: an id such as `C0123ABCD` or a name such as `#general`.
pub(super) fn slack_channel(s: &str) -> Result<&str, ToolError> {
    let s = s.trim();
    let name = s.strip_prefix('#').unwrap_or(s);
    let ok = (1..=80).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
    if ok {
        Ok(s)
    } else {
        Err(bad("chat_id", "a Slack channel id or #name", s))
    }
}

/// A Slack message timestamp (`thread_ts`): `1712345678.000100`.
pub(super) fn slack_ts(s: &str) -> Result<&str, ToolError> {
    let s = s.trim();
    match s.split_once('.') {
        Some((a, b)) if all_digits(a, 12) && all_digits(b, 12) => Ok(s),
        _ => Err(bad(
            "reply_to",
            "a Slack message timestamp (1712345678.000100)",
            s,
        )),
    }
}

/// A Matrix id of the given sigil (`!` a room, `$` an event): the sigil, then printable ASCII
/// without spaces, at most 255 bytes (the spec's limit). It is percent-encoded whole before it
/// goes into a path.
fn matrix_id<'a>(
    what: &str,
    sigil: char,
    expected: &str,
    s: &'a str,
) -> Result<&'a str, ToolError> {
    let s = s.trim();
    let ok = s.len() <= 255
        && s.strip_prefix(sigil)
            .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_graphic()));
    if ok {
        Ok(s)
    } else {
        Err(bad(what, expected, s))
    }
}

/// A Matrix room id (`!opaque:server`).
pub(super) fn matrix_room(s: &str) -> Result<&str, ToolError> {
    matrix_id("chat_id", '!', "a Matrix room id (!room:server)", s)
}

/// A Matrix event id (`$opaque`), the event a reply answers.
pub(super) fn matrix_event(s: &str) -> Result<&str, ToolError> {
    matrix_id("reply_to", '$', "a Matrix event id ($event)", s)
}

/// One path segment: every byte but letters and digits percent-encoded.
pub(super) fn path_segment(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A Telegram bot token (`123456:ABC-def_…`): it goes into the URL path, so nothing else may.
/// The error never repeats the value.
pub(super) fn telegram_token(name: &str, token: &str) -> Result<(), ToolError> {
    let ok = token.contains(':')
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b':' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(ToolError::failed(format!(
            "channels.{name}.bot_token is not a Telegram bot token (digits, `:`, letters)"
        )))
    }
}

/// A reaction as Discord's path wants it: a Unicode emoji, or a custom one as `name:id`,
/// percent-encoded. ASCII outside `name:id` is refused: no emoji is made of it, and it is
/// what a path trick is made of.
pub(super) fn discord_emoji(s: &str) -> Result<String, ToolError> {
    let s = s.trim();
    let custom = s.split_once(':').is_some_and(|(name, id)| {
        (2..=32).contains(&name.len())
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && all_digits(id, 20)
    });
    let unicode = !s.is_empty()
        && s.chars().count() <= 16
        && s.chars().all(|c| !c.is_ascii() && !c.is_control());
    if !(custom || unicode) {
        return Err(bad(
            "payload.emoji",
            "one emoji (such as 👍) or a custom emoji as name:id",
            s,
        ));
    }
    Ok(s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b == b'_' {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_tricks_are_not_ids() {
        for s in ["../1", "1/2", "1?x=1", "1#x", "%2e%2e", "", "12 3", "１２"] {
            assert!(snowflake("chat_id", s).is_err(), "{s}");
            assert!(telegram_message("reply_to", s).is_err(), "{s}");
        }
        assert_eq!(snowflake("chat_id", " 123 ").ok(), Some("123"));
        for s in ["..", ".", "a/b", "👍/..", "x?y", "%F0", "👍#", "a:1/2"] {
            assert!(discord_emoji(s).is_err(), "{s}");
        }
        assert!(telegram_chat("@chan/../x").is_err());
        assert!(slack_channel("C1/../x").is_err());
        assert!(slack_channel("#").is_err());
        assert_eq!(slack_channel("#ops").ok(), Some("#ops"));
        assert!(slack_ts("1.2/x").is_err());
        for s in ["room:hs", "!", "! r:hs", "$e", "!r\th:hs"] {
            assert!(matrix_room(s).is_err(), "{s}");
        }
        assert_eq!(path_segment("!r:hs/.."), "%21r%3Ahs%2F%2E%2E");
        assert!(matrix_event("$abc/../x").is_ok_and(|e| path_segment(e).contains("%2F")));
    }

    #[test]
    fn emoji_are_encoded_whole() {
        assert_eq!(discord_emoji("👍").ok().as_deref(), Some("%F0%9F%91%8D"));
        assert_eq!(
            discord_emoji("party_blob:123").ok().as_deref(),
            Some("party_blob%3A123")
        );
    }

    #[test]
    fn telegram_chats_are_numbers_or_usernames() {
        assert_eq!(telegram_chat("-1001234").ok(), Some((-1001234).into()));
        assert_eq!(
            telegram_chat("@my_channel").ok(),
            Some("@my_channel".into())
        );
        assert!(telegram_chat("--1").is_err());
        assert!(telegram_chat("+1").is_err());
    }

    #[test]
    fn a_bad_token_is_refused_without_being_repeated() {
        let e = telegram_token("tg", "123:abc/../x").err();
        assert!(e.is_some_and(|e| !e.message.contains("abc")));
        assert!(telegram_token("tg", "123456:ABC-def_9").is_ok());
    }
}
