//! Finding an option in a command's words the way the program's own option parser would, and
//! then some: GNU long options abbreviated to any prefix (`--to-com` is `--to-command`), with
//! `=VALUE` or the next word as the value, short options inside a cluster (`-xvI CMD`,
//! `-ICMD`), options after operands (GNU permutes them), and repeated options (every hit is
//! returned). Errs wide: a prefix shared with another option of the program counts as a hit,
//! since the program either rejects it or takes it as the one that runs something.

use super::words::Word;

/// One occurrence of an option in a command's arguments.
#[derive(Debug, Clone)]
pub(crate) struct Hit {
    /// The option as the table spells it.
    pub opt: &'static str,
    /// Its value: attached, or the next word (`None` when the words end first).
    pub value: Option<Word>,
    /// The word where the option stands (for messages).
    pub written: String,
}

/// How a program spells long options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// GNU getopt_long: `--name[=value]`, abbreviable; `-x` short options, clustered.
    Gnu,
    /// Go's flag package and single-dash long options (`-exec`, `--exec`, `-exec=v`); not
    /// abbreviable, never clustered.
    Single,
}

/// Every occurrence of `opts` in `args` (the words after the program name). Options in
/// `flags` take no value; all others take one. Words after a literal `--` are operands.
pub(crate) fn find(
    args: &[Word],
    opts: &[&'static str],
    flags: &[&'static str],
    style: Style,
) -> Vec<Hit> {
    let mut hits = Vec::new();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        i += 1;
        if !w.dynamic && w.text == "--" {
            break;
        }
        for &opt in opts {
            let takes_value = !flags.contains(&opt);
            let Some(attached) = match_word(opt, w, style) else {
                continue;
            };
            let value = match attached {
                Some(v) => Some(v),
                None if takes_value => args.get(i).cloned(),
                None => None,
            };
            hits.push(Hit {
                opt,
                value,
                written: w.text.clone(),
            });
        }
    }
    hits
}

/// Whether `w` is `opt`; `Some(Some(v))` when a value is attached to it.
fn match_word(opt: &'static str, w: &Word, style: Style) -> Option<Option<Word>> {
    let t = w.text.as_str();
    let attached = |v: &str| {
        Some(Some(Word {
            text: v.to_string(),
            dynamic: w.dynamic,
        }))
    };
    if opt == "+" {
        // `vim +CMD`, `less +CMD`: the word is the value.
        return t
            .strip_prefix('+')
            .filter(|v| !v.is_empty())
            .and_then(attached);
    }
    if let Some(long) = opt.strip_prefix("--") {
        let body = t.strip_prefix("--").filter(|b| !b.is_empty())?;
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (body, None),
        };
        let hit = match style {
            Style::Gnu => long.starts_with(name),
            Style::Single => long == name,
        };
        if !hit {
            return None;
        }
        return match value {
            Some(v) => attached(v),
            None => Some(None),
        };
    }
    let short = opt.strip_prefix('-')?;
    if short.chars().count() > 1 || style == Style::Single {
        // A single-dash long option (`-exec`, `-wrapper`), also as `--exec` for Go.
        let body = t
            .strip_prefix("--")
            .filter(|_| style == Style::Single)
            .or_else(|| t.strip_prefix('-'))?;
        if body == short {
            return Some(None);
        }
        // `-exec=v`, and Java's `-javaagent:v` / `-XX:v`.
        return body
            .strip_prefix(short)
            .and_then(|rest| {
                rest.strip_prefix('=')
                    .or_else(|| rest.strip_prefix(':').filter(|_| style == Style::Single))
            })
            .and_then(attached);
    }
    // A short option: anywhere in a cluster of letters, its value the rest of the word.
    let letter = short.chars().next()?;
    let cluster = t.strip_prefix('-').filter(|c| !c.starts_with('-'))?;
    let at = cluster.find(letter)?;
    let before = cluster.get(..at).unwrap_or("");
    if !before.chars().all(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    let rest = cluster.get(at + letter.len_utf8()..).unwrap_or("");
    if rest.is_empty() {
        Some(None)
    } else {
        attached(rest)
    }
}

/// A word computed at run time that may turn out to be an option (or several words, some of
/// them options): it does not start with a literal character other than `-`.
pub(crate) fn may_be_option(w: &Word) -> bool {
    if !w.dynamic {
        return false;
    }
    // `$$`, `$?`, `$#`, `$!` are numbers.
    if matches!(
        w.text.as_str(),
        "$$" | "$?" | "$#" | "$!" | "\"$$\"" | "\"$?\"" | "\"$#\""
    ) {
        return false;
    }
    let start = w.text.trim_start_matches(['"', '\'']);
    start.starts_with(['$', '`', '*', '?', '[', '{', '-', '~', '@', '!', '+'])
        || w.text.starts_with("$'")
}

/// The first computed word that may be an option, unless it stands after `--` or directly
/// after an option in `valued` (whose value it then is).
pub(crate) fn computed_option<'a>(args: &'a [Word], valued: &[&str]) -> Option<&'a Word> {
    let mut prev: Option<&Word> = None;
    for w in args {
        if !w.dynamic && w.text == "--" {
            return None;
        }
        let is_value = prev.is_some_and(|p| {
            !p.dynamic && p.text.starts_with('-') && valued.iter().any(|v| p.text == *v)
        });
        // `-j"$(nproc)"`, `--jobs=$N`: a value computed for an option that takes one.
        let literal: String = w
            .text
            .chars()
            .take_while(|c| !matches!(c, '$' | '"' | '\'' | '`' | '\\'))
            .collect();
        let attached_value = literal.starts_with('-')
            && valued
                .iter()
                .any(|v| literal == *v || (v.starts_with("--") && literal == format!("{v}=")));
        if may_be_option(w) && !is_value && !attached_value {
            return Some(w);
        }
        prev = Some(w);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Word> {
        line.split_whitespace().map(Word::literal).collect()
    }

    fn values(line: &str, opts: &[&'static str], style: Style) -> Vec<String> {
        find(&words(line), opts, &[], style)
            .into_iter()
            .map(|h| h.value.map(|v| v.text).unwrap_or_default())
            .collect()
    }

    #[test]
    fn long_options_match_any_prefix_and_both_value_forms() {
        let opts = &["--to-command"];
        assert_eq!(values("--to-com=rm -xf a", opts, Style::Gnu), ["rm"]);
        assert_eq!(values("-xf a --to rm", opts, Style::Gnu), ["rm"]);
        assert_eq!(
            values("--to-command rm --to-c=id", opts, Style::Gnu),
            ["rm", "id"]
        );
        assert!(values("--to-stdout -xf a", opts, Style::Gnu).is_empty());
        assert!(values("-- --to-command=rm", opts, Style::Gnu).is_empty());
    }

    #[test]
    fn short_options_are_found_inside_clusters() {
        let opts = &["-I"];
        assert_eq!(values("-xvI rm", opts, Style::Gnu), ["rm"]);
        assert_eq!(values("-cIrm", opts, Style::Gnu), ["rm"]);
        assert!(values("-cf a.tar", opts, Style::Gnu).is_empty());
    }

    #[test]
    fn single_dash_long_options_take_both_dash_forms_but_no_prefix() {
        let opts = &["-exec"];
        assert_eq!(values("-exec=rm", opts, Style::Single), ["rm"]);
        assert_eq!(values("--exec rm", opts, Style::Single), ["rm"]);
        assert!(values("-ex rm", opts, Style::Single).is_empty());
    }

    #[test]
    fn computed_words_may_be_options_unless_they_are_a_value() {
        let w = |t: &str, d: bool| Word {
            text: t.into(),
            dynamic: d,
        };
        let args = [w("-f", false), w("\"$OUT\"", true)];
        assert!(computed_option(&args, &["-f"]).is_none());
        assert!(computed_option(&args, &[]).is_some());
        assert!(computed_option(&[w("./$f", true)], &[]).is_none());
        assert!(computed_option(&[w("--", false), w("$f", true)], &[]).is_none());
    }
}
