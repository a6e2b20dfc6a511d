//! String helpers that never split a UTF-8 character.
//!
//! Every place that shortens text from outside goes through here: text is cut only at char
//! boundaries, through one helper, so no input can make a byte-index slice panic.

/// The longest prefix of `s` that is at most `max_bytes` long and ends on a char boundary.
pub fn truncate_at_char_boundary(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut end = max_bytes;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or("")
}

/// A one-line preview of `s`, at most `max_chars` characters, with `…` when cut.
pub fn preview(s: &str, max_chars: usize) -> String {
    let one_line: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() <= max_chars {
        return one_line;
    }
    let mut out: String = one_line.chars().take(max_chars.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_backs_off_to_a_char_boundary() {
        let s = "aé"; // 'é' is two bytes
        assert_eq!(truncate_at_char_boundary(s, 2), "a");
        assert_eq!(truncate_at_char_boundary(s, 3), "aé");
        assert_eq!(truncate_at_char_boundary(s, 0), "");
    }

    #[test]
    fn preview_marks_cut_text_and_flattens_newlines() {
        assert_eq!(preview("ab\ncd", 10), "ab cd");
        assert_eq!(preview("abcdef", 4), "abc…");
    }
}
