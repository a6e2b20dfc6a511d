//! How deep the shell parsers could recurse on a text, counted before they see it: a hostile
//! line must not exhaust the stack of the thread that checks it.

/// Recursion the parsers get within the 2 MiB stack of a runtime worker thread. Measured on
/// such a thread: an optimised build's tokenizer still read 1 200 levels of `$( ')' `, its word
/// parser overflowed between 800 and 1 600 levels of `$(`; an unoptimised build (the tests')
/// overflowed in the tokenizer between 150 and 300 levels, so it stops sooner.
#[cfg(not(debug_assertions))]
pub(crate) const MAX_POSSIBLE_NESTING: usize = 400;
#[cfg(debug_assertions)]
pub(crate) const MAX_POSSIBLE_NESTING: usize = 96;

/// An open bracket or double quote, and whether something inside it may hide its closer.
struct Level {
    close: char,
    tainted: bool,
}

/// The deepest nesting of brackets and double quotes that any reading of `text` could give.
///
/// Counting brackets naively is not enough: a closer inside quotes (`$( ')' $( ')' …`), after
/// a backslash, in a comment, in a here-document body or after a `case` pattern closes nothing
/// for the parsers, so the text nests deeper than the count says. A level in which a quote,
/// backslash, comment, `<` or `case` appears is therefore never closed here: the count may
/// only err high. A closer of the wrong kind closes nothing either.
pub(crate) fn possible_nesting(text: &str) -> usize {
    let mut open: Vec<Level> = Vec::new();
    let mut max = 0;
    let mut prev = '\n';
    for (at, c) in text.char_indices() {
        match c {
            '(' | '{' | '[' => open.push(Level {
                close: closer_of(c),
                tainted: false,
            }),
            ')' | '}' | ']' | '"' => {
                let closes = open.last().is_some_and(|l| l.close == c && !l.tainted);
                if closes {
                    open.pop();
                } else if c == '"' {
                    open.push(Level {
                        close: '"',
                        tainted: false,
                    });
                }
            }
            '\'' | '`' | '\\' | '<' => taint(&mut open),
            '#' if prev.is_whitespace() || matches!(prev, '(' | ';' | '|' | '&') => {
                taint(&mut open)
            }
            'c' if text.get(at..).is_some_and(|r| r.starts_with("case")) => taint(&mut open),
            _ => {}
        }
        max = max.max(open.len());
        prev = c;
    }
    max
}

fn closer_of(open: char) -> char {
    match open {
        '(' => ')',
        '{' => '}',
        _ => ']',
    }
}

fn taint(open: &mut [Level]) {
    if let Some(top) = open.last_mut() {
        top.tainted = true;
    }
}

#[cfg(test)]
mod tests {
    use super::possible_nesting;

    #[test]
    fn plain_brackets_count_their_depth() {
        assert_eq!(possible_nesting("echo $(a $(b) c)"), 2);
        assert_eq!(possible_nesting("x=${a:-${b}} y=$((1 + (2)))"), 3);
        assert_eq!(possible_nesting("echo \"$(ls)\""), 2);
        assert_eq!(possible_nesting("a) b) c)"), 0);
    }

    #[test]
    fn closers_the_parsers_may_not_see_close_nothing() {
        let hidden = [
            "$( ')' ",
            "$( \\) ",
            "$( # )\n",
            "$(cat <<E\n)\nE\n",
            "$(case x in a) ",
            "$( ` ) ` ",
        ];
        for h in hidden {
            assert_eq!(possible_nesting(&h.repeat(10)), 10, "{h:?}");
        }
    }

    #[test]
    fn a_closer_of_another_kind_closes_nothing() {
        assert_eq!(possible_nesting("$( } ] $( } ]"), 2);
        assert_eq!(possible_nesting("${ ) ${ )"), 2);
    }
}
