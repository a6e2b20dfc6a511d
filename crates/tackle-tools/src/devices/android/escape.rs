//! What the device's shell and `input text` do to an argument, and how to survive both.
//!
//! `adb shell ARGS…` joins its arguments with spaces and hands the line to the device's shell
//! (`sh -c`), which splits and expands it again. `input text` then turns `%s` into a space. A
//! typed text must therefore be written so that, after the device shell has parsed it, exactly
//! one word remains, and so that `input text`'s decoding gives back the original.

use tackle_protocol::ToolError;

/// How one character is written for the device shell (after the `%s` step).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    /// As it is: no shell gives it a meaning inside a word.
    Plain,
    /// With a backslash before it: the shell would otherwise read it as syntax.
    Backslash,
    /// Inside single quotes: a backslash cannot protect it (a backslash-newline is a line
    /// continuation and disappears), but single quotes keep every byte but `'` literally.
    Quoted,
}

/// ASCII characters that stay plain. Everything else that is ASCII punctuation gets a
/// backslash, so a character this table forgot is escaped, never interpreted.
const PLAIN_PUNCTUATION: &[char] = &['_', '-', '.', ',', '/', ':', '@', '+', '%'];

fn how(c: char) -> Write {
    if c.is_ascii_alphanumeric() || PLAIN_PUNCTUATION.contains(&c) {
        Write::Plain
    } else if c.is_ascii_control() {
        Write::Quoted
    } else if c.is_ascii() {
        // Space is turned into `%s` before this table is asked; every other printable ASCII
        // character left here is shell punctuation.
        Write::Backslash
    } else {
        // Non-ASCII bytes are never syntax to the device shell.
        Write::Plain
    }
}

/// The words to pass to `adb shell input text` one command each, so that the device types
/// exactly `text`.
///
/// `input text` reads every `%s` as a space and has no escape for a literal `%s`; where the
/// text holds `%` right before `s` it is split between them into two commands.
pub(crate) fn input_text_words(text: &str) -> Result<Vec<String>, ToolError> {
    if text.is_empty() {
        return Err(ToolError::invalid_arguments("`text` is empty"));
    }
    if text.contains('\0') {
        return Err(ToolError::invalid_arguments(
            "`text` holds a NUL character, which no command line can carry",
        ));
    }
    let mut words = Vec::new();
    let mut current = String::new();
    let mut prev = None;
    for c in text.chars() {
        if c == 's' && prev == Some('%') {
            words.push(std::mem::take(&mut current));
        }
        if c == ' ' {
            current.push_str("%s");
        } else {
            write_char(&mut current, c);
        }
        prev = Some(c);
    }
    words.push(current);
    Ok(words)
}

fn write_char(out: &mut String, c: char) {
    match how(c) {
        Write::Plain => out.push(c),
        Write::Backslash => {
            out.push('\\');
            out.push(c);
        }
        Write::Quoted => {
            out.push('\'');
            out.push(c);
            out.push('\'');
        }
    }
}

/// One word for the device shell, whatever it holds: in single quotes, each `'` written as
/// `'\''`. For arguments `input text` does not decode (URLs, clipboard text).
pub(crate) fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Characters that make a `shell` line mean more than one plain command, or that hide its
/// words from the checks below (quotes and backslashes can spell `rm` as `r''m`).
const SHELL_BLOCKED_CHARS: &[(char, &str)] = &[
    (';', "`;` (a second command)"),
    ('|', "`|` (a pipe)"),
    ('`', "a backtick (command substitution)"),
    ('$', "`$` (expansion or substitution)"),
    ('&', "`&` (background or a second command)"),
    ('\n', "a newline (a second command)"),
    ('\r', "a carriage return"),
    ('\\', "a backslash (it can hide what a word says)"),
    ('\'', "a quote (it can hide what a word says)"),
    ('"', "a quote (it can hide what a word says)"),
    ('(', "`(` (a subshell)"),
    (')', "`)` (a subshell)"),
    ('<', "a redirection"),
    ('>', "a redirection"),
    ('\0', "a NUL character"),
];

/// Words that, anywhere in a `shell` line, refuse it: they restart, erase or reset the device.
const SHELL_BLOCKED_WORDS: &[&str] = &[
    "reboot",
    "shutdown",
    "wipe",
    "format",
    "mkfs",
    "master_clear",
    "factory",
    "recovery",
    "fastboot",
];

/// Refuse a `shell` line unless it is plainly one harmless command. Anything the check cannot
/// read with certainty is refused, not passed.
pub(crate) fn check_shell_command(command: &str) -> Result<(), ToolError> {
    let refuse = |why: String| {
        Err(ToolError::new(
            tackle_protocol::ErrorKind::Denied,
            format!("the android `shell` action refuses this command: {why}"),
        ))
    };
    if command.trim().is_empty() {
        return Err(ToolError::invalid_arguments("`command` is empty"));
    }
    if let Some((_, why)) = SHELL_BLOCKED_CHARS
        .iter()
        .find(|(c, _)| command.contains(*c))
    {
        return refuse(format!("it holds {why}"));
    }
    if let Some(c) = command.chars().find(|c| c.is_control() && *c != '\t') {
        return refuse(format!("it holds the control character {:?}", c));
    }
    let lower = command.to_lowercase();
    if let Some(word) = SHELL_BLOCKED_WORDS.iter().find(|w| lower.contains(*w)) {
        return refuse(format!("it names `{word}`"));
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    for (i, word) in words.iter().enumerate() {
        let program = word.rsplit('/').next().unwrap_or(word);
        if program != "rm" {
            continue;
        }
        let recursive = words.iter().skip(i + 1).any(|a| {
            a.starts_with("--recursive")
                || (a.starts_with('-') && !a.starts_with("--") && a.contains(['r', 'R']))
        });
        if recursive {
            return refuse("it removes recursively (`rm -r`)".to_string());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Android's `input text` does to its argument (InputShellCommand.sendText): a `%`
    /// followed by `s` becomes a space.
    pub(crate) fn input_decode(arg: &str) -> String {
        let mut out: Vec<char> = arg.chars().collect();
        let mut escape = false;
        let mut i = 0;
        while i < out.len() {
            if escape {
                escape = false;
                if out.get(i) == Some(&'s') {
                    out[i] = ' ';
                    out.remove(i - 1);
                    i -= 1;
                }
            }
            if out.get(i) == Some(&'%') {
                escape = true;
            }
            i += 1;
        }
        out.into_iter().collect()
    }

    /// The device shell's view of `adb shell input text WORD`, run by a real POSIX shell:
    /// the words it hands to `input`.
    fn device_words(word: &str) -> Vec<String> {
        let line = format!("printf '%s\\0' {word}");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&line)
            .output()
            .unwrap_or_else(|e| panic!("sh: {e}"));
        assert!(out.status.success(), "sh failed on {line:?}");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut words: Vec<String> = text.split('\0').map(str::to_string).collect();
        words.pop();
        words
    }

    pub(crate) fn corpus() -> Vec<String> {
        let mut texts: Vec<String> = [
            "hello world",
            "a;b",
            "a|b",
            "a&b",
            "a&&b",
            "a||b",
            "$(id)",
            "`id`",
            "${HOME}",
            "$HOME",
            "$0",
            "'single'",
            "\"double\"",
            "it's",
            "back\\slash",
            "\\",
            "\\\\n",
            "trail\\",
            "line1\nline2",
            "\n",
            "tab\there",
            "cr\rlf",
            "<in",
            ">out",
            "2>&1",
            "(sub)",
            "{a,b}",
            "[ab]*",
            "*",
            "?",
            "!",
            "!!",
            "~",
            "~root",
            "#comment",
            "a #b",
            "a=b",
            "x=1 y",
            "^caret",
            "%",
            "%s",
            "%%",
            "%%s",
            "100%",
            "50% off",
            "%s%s",
            "% s",
            "s%",
            "  leading",
            "trailing  ",
            "   ",
            "-n",
            "--help",
            "-e x",
            "émoji 😀 日本語",
            "ü'ö\"ä",
            "\u{7f}del",
            "\u{1b}[31mred",
            "a\u{2028}b",
            "=",
            "@user:pass/path,+-._",
        ]
        .into_iter()
        .map(str::to_string)
        .collect();
        // Every printable ASCII character on its own and between letters.
        for b in 0x20u8..0x7f {
            let c = char::from(b);
            texts.push(c.to_string());
            texts.push(format!("a{c}b"));
        }
        texts
    }

    #[test]
    fn every_text_reaches_input_as_one_word_that_decodes_to_itself() {
        for text in corpus() {
            let words = input_text_words(&text).unwrap_or_else(|e| panic!("{text:?}: {e:?}"));
            let mut typed = String::new();
            for word in &words {
                let seen = device_words(word);
                assert_eq!(seen.len(), 1, "{text:?} → {word:?} split into {seen:?}");
                typed.push_str(&input_decode(&seen[0]));
            }
            assert_eq!(typed, text, "via {words:?}");
        }
    }

    #[test]
    fn a_literal_percent_s_is_split_so_input_cannot_turn_it_into_a_space() {
        assert_eq!(
            input_text_words("100%s"),
            Ok(vec!["100%".to_string(), "s".to_string()])
        );
        assert_eq!(input_text_words("a b"), Ok(vec!["a%sb".to_string()]));
        assert_eq!(input_text_words("a;b"), Ok(vec!["a\\;b".to_string()]));
        assert_eq!(input_text_words("a\nb"), Ok(vec!["a'\n'b".to_string()]));
    }

    #[test]
    fn empty_and_nul_texts_are_refused() {
        assert!(input_text_words("").is_err());
        assert!(input_text_words("a\0b").is_err());
    }

    #[test]
    fn quoted_words_survive_the_device_shell() {
        for text in corpus() {
            assert_eq!(device_words(&shell_quote(&text)), vec![text.clone()]);
        }
    }

    #[test]
    fn shell_lines_that_chain_substitute_or_destroy_are_refused() {
        for bad in [
            "ls; id",
            "ls | sh",
            "echo `id`",
            "echo $HOME",
            "sleep 1 &",
            "ls\nid",
            "ls\rid",
            "rm -r /sdcard",
            "rm -rf /sdcard",
            "rm -fr x",
            "rm -f -R x",
            "/system/bin/rm -r x",
            "rm --recursive x",
            "reboot",
            "svc power reboot",
            "REBOOT",
            "wipe data",
            "format /data",
            "mkfs.ext4 /dev/x",
            "am broadcast -a android.intent.action.MASTER_CLEAR",
            "r\\m -r x",
            "r''m -r x",
            "echo \"x\"",
            "cat < /x",
            "echo > /x",
            "(id)",
            "",
            "  ",
            "ls\0",
            "ls \u{1b}",
        ] {
            assert!(check_shell_command(bad).is_err(), "{bad:?} passed");
        }
        for good in [
            "ls /sdcard",
            "getprop ro.product.model",
            "rm /sdcard/one.txt",
            "pm list packages",
            "dumpsys battery",
        ] {
            assert_eq!(check_shell_command(good), Ok(()), "{good:?}");
        }
    }
}
