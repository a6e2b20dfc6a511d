//! What the model's arguments ask of git beyond the repository: options that are refused
//! outright, files an option names (`commit -F FILE`), and words that may name a repository
//! git then contacts (`fetch ../other`). Options are found the way git's own parser finds
//! them: long options in any abbreviation and with `=value` or the next word, short options
//! inside clusters (`-aF msg`), and `--`/`--end-of-options` ending them.

use tackle_protocol::ToolError;

/// Whether git reads or writes what an argument names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    Read,
    Write,
}

/// What the arguments need the grants to allow.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct ArgPlan {
    /// Files an option names, and the paths `diff` and `init` take as operands.
    pub files: Vec<(String, Access)>,
    /// Words that may name a repository git contacts: a URL, a path or a remote's name.
    pub repos: Vec<(String, Access)>,
    /// `remote add -f NAME URL`: a remote this very call defines and fetches.
    pub new_remotes: Vec<(String, String)>,
}

/// Per-subcommand knowledge of the options git's parser accepts.
struct Spec {
    /// Short options whose required value is the rest of the word or the next word.
    short_value: &'static str,
    /// Short options whose optional value can only be attached (`-M50%`).
    short_optional: &'static str,
    /// Short options whose required value is a file git reads or writes.
    short_path: &'static [(char, Access)],
    /// Long options (any abbreviation) whose required value is a file.
    long_path: &'static [(&'static str, Access)],
    /// Long options taking a required value from the next word; matched only when written
    /// out in full, so that an abbreviation can never hide an operand from the checks.
    long_value: &'static [&'static str],
    /// Which of `-c`/`-C` are this subcommand's own options (elsewhere they are git's
    /// global options, which are refused).
    own_c: &'static str,
}

const NONE: Spec = Spec {
    short_value: "",
    short_optional: "",
    short_path: &[],
    long_path: &[],
    long_value: &[],
    own_c: "",
};

const PATHSPEC_FILE: &[(&str, Access)] = &[("pathspec-from-file", Access::Read)];

const DIFF_VALUES: &[&str] = &[
    "src-prefix",
    "dst-prefix",
    "line-prefix",
    "word-diff-regex",
    "find-object",
    "anchored",
    "ignore-matching-lines",
    "skip-to",
    "rotate-to",
    "output-indicator-new",
    "output-indicator-old",
    "output-indicator-context",
    "inter-hunk-context",
    "diff-filter",
];

const LOG_VALUES: &[&str] = &[
    "src-prefix",
    "dst-prefix",
    "line-prefix",
    "word-diff-regex",
    "find-object",
    "anchored",
    "ignore-matching-lines",
    "skip-to",
    "rotate-to",
    "max-count",
    "skip",
    "since",
    "after",
    "until",
    "before",
    "author",
    "committer",
    "grep",
    "grep-reflog",
    "exclude",
    "glob",
    "branches",
    "format",
    "pretty",
    "date",
    "encoding",
    "diff-filter",
    "diff-merges",
];

fn spec(action: &str) -> Spec {
    match action {
        "status" => Spec {
            short_optional: "uM",
            ..NONE
        },
        "diff" => Spec {
            short_value: "SGlI",
            short_optional: "UMCBX",
            short_path: &[('O', Access::Read)],
            long_value: DIFF_VALUES,
            own_c: "cC",
            ..NONE
        },
        "log" | "show" => Spec {
            short_value: "SGlInL",
            short_optional: "UMCBX",
            short_path: &[('O', Access::Read)],
            long_value: LOG_VALUES,
            own_c: "cC",
            ..NONE
        },
        "shortlog" => Spec {
            short_optional: "w",
            long_value: LOG_VALUES,
            own_c: "c",
            ..NONE
        },
        "branch" => Spec {
            short_value: "u",
            short_optional: "t",
            long_value: &["set-upstream-to", "sort", "format", "contains", "merged"],
            own_c: "cC",
            ..NONE
        },
        "add" | "reset" | "rm" => Spec {
            long_path: PATHSPEC_FILE,
            ..NONE
        },
        "commit" => Spec {
            short_value: "mcC",
            short_optional: "Su",
            short_path: &[('F', Access::Read), ('t', Access::Read)],
            long_path: &[
                ("file", Access::Read),
                ("template", Access::Read),
                ("pathspec-from-file", Access::Read),
            ],
            long_value: &[
                "message",
                "reedit-message",
                "reuse-message",
                "author",
                "date",
                "fixup",
                "squash",
                "trailer",
                "cleanup",
            ],
            own_c: "cC",
        },
        "checkout" => Spec {
            short_value: "bB",
            short_optional: "t",
            long_path: PATHSPEC_FILE,
            long_value: &["orphan"],
            ..NONE
        },
        "switch" => Spec {
            short_value: "cC",
            short_optional: "t",
            long_value: &["create", "force-create", "orphan"],
            own_c: "cC",
            ..NONE
        },
        "restore" => Spec {
            short_value: "s",
            long_path: PATHSPEC_FILE,
            long_value: &["source"],
            ..NONE
        },
        "stash" => Spec {
            short_value: "m",
            short_path: &[('O', Access::Read)],
            long_path: PATHSPEC_FILE,
            long_value: &["message"],
            ..NONE
        },
        "tag" => Spec {
            short_value: "mu",
            short_path: &[('F', Access::Read)],
            long_path: &[("file", Access::Read)],
            long_value: &["message", "local-user", "sort", "format", "cleanup"],
            ..NONE
        },
        "push" => Spec {
            short_value: "o",
            long_path: &[("repo", Access::Write)],
            long_value: &["push-option"],
            ..NONE
        },
        "pull" => Spec {
            short_value: "sXo",
            short_optional: "rSj",
            long_value: &[
                "strategy",
                "strategy-option",
                "server-option",
                "depth",
                "deepen",
                "shallow-since",
                "shallow-exclude",
                "negotiation-tip",
            ],
            ..NONE
        },
        "fetch" => Spec {
            short_value: "jo",
            long_value: &[
                "server-option",
                "depth",
                "deepen",
                "shallow-since",
                "shallow-exclude",
                "negotiation-tip",
                "refmap",
                "filter",
                "jobs",
                "submodule-prefix",
            ],
            ..NONE
        },
        "clean" => Spec {
            short_value: "e",
            long_value: &["exclude"],
            ..NONE
        },
        "rebase" => Spec {
            short_value: "sXC",
            short_optional: "Sr",
            long_value: &["onto", "strategy", "strategy-option", "whitespace"],
            own_c: "C",
            ..NONE
        },
        "merge" => Spec {
            short_value: "sXm",
            short_optional: "S",
            short_path: &[('F', Access::Read)],
            long_path: &[("file", Access::Read)],
            long_value: &["strategy", "strategy-option", "message", "into-name"],
            ..NONE
        },
        "blame" => Spec {
            short_value: "L",
            short_optional: "CM",
            short_path: &[('S', Access::Read)],
            long_path: &[
                ("contents", Access::Read),
                ("ignore-revs-file", Access::Read),
            ],
            long_value: &["ignore-rev", "date", "abbrev"],
            own_c: "cC",
        },
        "remote" => Spec {
            short_value: "tm",
            long_value: &["track", "master"],
            ..NONE
        },
        "cherry-pick" | "revert" => Spec {
            short_value: "mX",
            short_optional: "S",
            long_value: &["mainline", "strategy", "strategy-option", "cleanup"],
            ..NONE
        },
        "init" => Spec {
            short_value: "b",
            long_path: &[("separate-git-dir", Access::Write)],
            long_value: &["initial-branch", "object-format", "ref-format"],
            ..NONE
        },
        "ls-files" => Spec {
            short_value: "x",
            short_path: &[('X', Access::Read)],
            long_path: &[
                ("exclude-from", Access::Read),
                ("exclude-per-directory", Access::Read),
            ],
            long_value: &["exclude", "with-tree", "format", "abbrev"],
            own_c: "c",
            ..NONE
        },
        "rev-parse" => Spec {
            long_path: &[("resolve-git-dir", Access::Read)],
            ..NONE
        },
        _ => NONE,
    }
}

/// Long options refused for every subcommand, matched in any abbreviation (git accepts any
/// unambiguous prefix, so a prefix of these is refused too), with why.
const REFUSED_LONG: &[(&str, &str)] = &[
    ("exec-path", "it sets where git finds its own programs"),
    (
        "upload-pack",
        "it runs a program as the other end of a fetch",
    ),
    (
        "receive-pack",
        "it runs a program as the other end of a push",
    ),
    ("exec", "it runs a program"),
    ("config", "git config cannot be set from arguments"),
    ("config-env", "git config cannot be set from arguments"),
    (
        "git-dir",
        "the tool always runs git on the workspace's own repository",
    ),
    (
        "work-tree",
        "the tool always runs git on the workspace's own work tree",
    ),
    ("namespace", "it is one of git's global options"),
    ("super-prefix", "it is one of git's global options"),
    (
        "output",
        "it writes a file the tool cannot check; the output comes back without it",
    ),
    ("open-files-in-pager", "it runs a program"),
    ("ext-diff", "it runs an external diff program"),
    ("textconv", "it runs a text-conversion program"),
    (
        "no-index",
        "it compares files outside the repository; use read_file to read files",
    ),
    (
        "help",
        "it opens the manual in a viewer program; use `-h` for the option summary",
    ),
    (
        "recurse-submodules",
        "it runs git inside submodules, whose config this tool does not check",
    ),
    (
        "recurse-submodules-default",
        "it runs git inside submodules, whose config this tool does not check",
    ),
];

/// Real options that are prefixes of a refused one, and so would otherwise look like its
/// abbreviation (`diff --text` is not `--textconv`).
const EXACT_ALLOWED: &[&str] = &["text"];

/// Merge strategies git has built in; any other name runs a program `git-merge-NAME`.
const STRATEGIES: &[&str] = &["ort", "recursive", "resolve", "octopus", "ours", "subtree"];

fn refused(arg: &str, why: &str) -> ToolError {
    ToolError::invalid_arguments(format!("git argument `{arg}` is refused: {why}"))
}

/// Check the arguments and say what they need from the grants.
pub(super) fn analyse(action: &str, args: &[String]) -> Result<ArgPlan, ToolError> {
    let spec = spec(action);
    let mut plan = ArgPlan::default();
    let mut operands: Vec<&str> = Vec::new();
    let mut options_end = false;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        if arg.starts_with("ext::") || arg.starts_with("fd::") {
            return Err(refused(arg, "the ext:: and fd:: transports run programs"));
        }
        if options_end || arg == "-" || !arg.starts_with('-') {
            operands.push(arg);
            continue;
        }
        if arg == "--" || arg == "--end-of-options" {
            options_end = true;
            continue;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            if let Some(why) = refused_long(name) {
                return Err(refused(arg, why));
            }
            if action == "init" && !name.is_empty() && "template".starts_with(name) {
                return Err(refused(
                    arg,
                    "it copies hooks and config from a template directory into the repository",
                ));
            }
            let path = spec
                .long_path
                .iter()
                .find(|(full, _)| full.starts_with(name))
                .map(|(full, access)| (*full, *access));
            if let Some((full, access)) = path {
                let value = match value {
                    Some(v) => Some(v.to_string()),
                    None => {
                        i += 1;
                        args.get(i - 1).cloned()
                    }
                };
                if let Some(v) = value {
                    add_path(&mut plan, action, full, &v, access, arg)?;
                }
                continue;
            }
            let value = match value {
                Some(v) => Some(v.to_string()),
                None if spec.long_value.contains(&name) => {
                    i += 1;
                    args.get(i - 1).cloned()
                }
                None => None,
            };
            let peek = args.get(i).map(String::as_str);
            check_long_value(action, name, value.as_deref(), peek, arg)?;
            continue;
        }
        // `-c key=value` is how config, and with it programs such as a pager, would be
        // injected; refused whatever the subcommand makes of `-c`.
        let next = args.get(i).map(String::as_str);
        if (arg == "-c" || arg == "-C") && next.is_some_and(looks_like_config)
            || (arg.starts_with("-c") || arg.starts_with("-C")) && looks_like_config(&arg[2..])
        {
            return Err(refused(
                arg,
                "setting git config from arguments is not allowed",
            ));
        }
        // A cluster of short options: flags until one that takes a value.
        let cluster = &arg[1..];
        for (at, c) in cluster.char_indices() {
            let rest = &cluster[at + c.len_utf8()..];
            if (c == 'c' || c == 'C') && !spec.own_c.contains(c) {
                return Err(refused(
                    arg,
                    "`-C` and `-c` are git's global options, which the tool does not take (it runs git in the workspace with its own config)",
                ));
            }
            if action == "rebase" && c == 'x' {
                return Err(refused(arg, "`rebase -x` runs a shell command"));
            }
            if let Some((_, access)) = spec.short_path.iter().find(|(p, _)| *p == c) {
                let value = if rest.is_empty() {
                    i += 1;
                    args.get(i - 1).cloned()
                } else {
                    Some(rest.to_string())
                };
                if let Some(v) = value {
                    add_path(&mut plan, action, "", &v, *access, arg)?;
                }
                break;
            }
            if spec.short_value.contains(c) {
                let value = if rest.is_empty() {
                    i += 1;
                    args.get(i - 1).cloned()
                } else {
                    Some(rest.to_string())
                };
                check_short_value(action, c, value.as_deref(), arg)?;
                break;
            }
            if spec.short_optional.contains(c) {
                break;
            }
        }
    }
    plan_operands(&mut plan, action, args, &operands);
    Ok(plan)
}

fn refused_long(name: &str) -> Option<&'static str> {
    if name.is_empty() || EXACT_ALLOWED.contains(&name) {
        return None;
    }
    let exact = REFUSED_LONG.iter().find(|(full, _)| *full == name);
    exact
        .or_else(|| REFUSED_LONG.iter().find(|(full, _)| full.starts_with(name)))
        .map(|(_, why)| *why)
}

fn add_path(
    plan: &mut ArgPlan,
    action: &str,
    option: &str,
    value: &str,
    access: Access,
    arg: &str,
) -> Result<(), ToolError> {
    // `-` is standard input, which is empty.
    if value == "-" {
        return Ok(());
    }
    if option == "exclude-per-directory" && value.contains('/') {
        return Err(refused(
            arg,
            "`--exclude-per-directory` takes a file name, read in every directory, not a path",
        ));
    }
    if action == "push" && option == "repo" {
        plan.repos.push((value.to_string(), access));
    } else {
        plan.files.push((value.to_string(), access));
    }
    Ok(())
}

fn check_strategy(value: Option<&str>, arg: &str) -> Result<(), ToolError> {
    match value {
        Some(v) if !STRATEGIES.contains(&v) => Err(refused(
            arg,
            &format!(
                "`{v}` is not a built-in merge strategy (a custom one runs a program); use one of {}",
                STRATEGIES.join(", ")
            ),
        )),
        _ => Ok(()),
    }
}

fn check_short_value(
    action: &str,
    c: char,
    value: Option<&str>,
    arg: &str,
) -> Result<(), ToolError> {
    if c == 's' && matches!(action, "merge" | "pull" | "rebase") {
        return check_strategy(value, arg);
    }
    Ok(())
}

/// `key=value` with a dotted key: what `git -c` takes.
fn looks_like_config(word: &str) -> bool {
    word.split_once('=')
        .is_some_and(|(key, _)| key.contains('.') && !key.starts_with('-'))
}

/// Options whose value itself is checked. `next` is the following word, which git takes as
/// the value of an option with a required one when it is not given with `=`.
fn check_long_value(
    action: &str,
    name: &str,
    value: Option<&str>,
    next: Option<&str>,
    arg: &str,
) -> Result<(), ToolError> {
    let is = |full: &str| !name.is_empty() && full.starts_with(name);
    if is("strategy")
        && !name.starts_with("strategy-")
        && matches!(
            action,
            "merge" | "pull" | "rebase" | "cherry-pick" | "revert"
        )
    {
        return check_strategy(value.or(next), arg);
    }
    if is("submodule") && !name.starts_with("submodule-") && value == Some("diff") {
        return Err(refused(
            arg,
            "`--submodule=diff` runs git inside submodules; use `--submodule=log`",
        ));
    }
    Ok(())
}

fn plan_operands(plan: &mut ArgPlan, action: &str, args: &[String], operands: &[&str]) {
    match action {
        // `git diff A B` compares two files outside the repository when one of them is
        // (an implicit `--no-index`), so every operand must be readable.
        "diff" => plan
            .files
            .extend(operands.iter().map(|o| (o.to_string(), Access::Read))),
        "init" => plan
            .files
            .extend(operands.iter().map(|o| (o.to_string(), Access::Write))),
        // Every operand may be the repository (the refspecs after it never reach outside).
        "fetch" | "pull" => plan
            .repos
            .extend(operands.iter().map(|o| (o.to_string(), Access::Read))),
        "push" => plan
            .repos
            .extend(operands.iter().map(|o| (o.to_string(), Access::Write))),
        "remote" => plan_remote(plan, args, operands),
        _ => {}
    }
}

fn plan_remote(plan: &mut ArgPlan, args: &[String], operands: &[&str]) {
    let has = |long: &str, short: &str| {
        args.iter().any(|a| {
            a == short
                || a.strip_prefix("--")
                    .is_some_and(|n| n.len() >= 2 && long.starts_with(n))
        })
    };
    match operands {
        ["add", name, url, ..] => {
            plan.repos.push((url.to_string(), Access::Read));
            if has("fetch", "-f") {
                plan.new_remotes.push((name.to_string(), url.to_string()));
            }
        }
        // A third operand is the old URL, a pattern that is never contacted.
        ["set-url", _name, new, ..] => {
            let access = if has("push", "--push") {
                Access::Write
            } else {
                Access::Read
            };
            plan.repos.push((new.to_string(), access));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tackle_protocol::ErrorKind;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    fn refused_for(action: &str, args: &[&str]) -> Option<String> {
        analyse(action, &v(args)).err().map(|e| {
            assert_eq!(e.kind, ErrorKind::InvalidArguments);
            e.message
        })
    }

    #[test]
    fn global_options_and_program_running_options_are_refused_in_any_spelling() {
        let bad: &[(&str, &[&str])] = &[
            ("log", &["-c", "core.pager=sh -c id"]),
            ("status", &["-c", "core.fsmonitor=x"]),
            ("status", &["-C", "/etc"]),
            ("log", &["--git-dir=/other/.git"]),
            ("log", &["--git-d=/other/.git"]),
            ("status", &["--git-dir", "/other/.git"]),
            ("status", &["--work-tree=/etc"]),
            ("status", &["--work=/etc"]),
            ("status", &["--exec-path=/tmp"]),
            ("status", &["--config-env=core.pager=X"]),
            ("status", &["--conf=x"]),
            ("fetch", &["--upload-pack=touch /tmp/x", "origin"]),
            ("fetch", &["--upload-pa=evil"]),
            ("pull", &["--upl", "evil"]),
            ("push", &["--receive-pack", "evil"]),
            ("push", &["--exec=evil"]),
            ("diff", &["--output=/etc/passwd"]),
            ("log", &["--outp=/tmp/x"]),
            ("diff", &["--no-index", "/etc/passwd", "x"]),
            ("diff", &["--no-ind", "/etc/passwd", "x"]),
            ("diff", &["--ext-diff"]),
            ("log", &["--textconv"]),
            ("blame", &["--textc", "f"]),
            ("status", &["--help"]),
            ("log", &["--hel"]),
            ("rebase", &["-x", "rm -rf /", "main"]),
            ("rebase", &["-ix", "make", "main"]),
            ("rebase", &["--exec=make"]),
            ("fetch", &["ext::sh -c touch% /tmp/pwned"]),
            ("checkout", &["--recurse-submodules", "main"]),
            ("pull", &["--recurse-sub"]),
            ("diff", &["--submodule=diff"]),
            ("merge", &["-s", "evil", "main"]),
            ("merge", &["-sevil", "main"]),
            ("pull", &["--strategy=evil"]),
            ("cherry-pick", &["--strat=evil", "abc"]),
            ("init", &["--template=/tmp/t"]),
            ("ls-files", &["--exclude-per-directory=../../etc/passwd"]),
        ];
        for (action, args) in bad {
            assert!(refused_for(action, args).is_some(), "{action} {args:?}");
        }
    }

    #[test]
    fn refusals_say_why() {
        let m = refused_for("diff", &["--no-index", "a", "b"]).unwrap_or_default();
        assert!(m.contains("`--no-index`") && m.contains("read_file"), "{m}");
        let m = refused_for("merge", &["-s", "evil"]).unwrap_or_default();
        assert!(m.contains("built-in merge strategy"), "{m}");
    }

    #[test]
    fn ordinary_arguments_that_look_similar_are_allowed() {
        let good: &[(&str, &[&str])] = &[
            ("switch", &["-c", "feature/x"]),
            ("log", &["--oneline", "--exclude=refs/tmp", "-c"]),
            ("log", &["-c", "--format=%H"]),
            ("diff", &["--exit-code", "--stat", "--text"]),
            ("diff", &["-C", "-M50%", "HEAD~1"]),
            ("cherry-pick", &["-x", "abc123"]),
            ("commit", &["-m", "a=b in message"]),
            ("commit", &["-C", "HEAD"]),
            ("blame", &["-C", "-C", "f"]),
            ("merge", &["-s", "ort", "-X", "theirs", "main"]),
            ("rebase", &["--strategy=recursive", "main"]),
            ("status", &["--ignore-submodules"]),
            ("status", &["--ignore-submodules=none"]),
            ("diff", &["--submodule=log"]),
            ("pull", &["--no-recurse-submodules"]),
            ("log", &["--no-textconv", "--no-ext-diff"]),
        ];
        for (action, args) in good {
            assert!(analyse(action, &v(args)).is_ok(), "{action} {args:?}");
        }
    }

    fn files(action: &str, args: &[&str]) -> Vec<(String, Access)> {
        analyse(action, &v(args))
            .map(|p| p.files)
            .unwrap_or_default()
    }

    #[test]
    fn options_naming_files_are_found_in_every_spelling() {
        let r = |s: &str| (s.to_string(), Access::Read);
        let w = |s: &str| (s.to_string(), Access::Write);
        assert_eq!(files("commit", &["-F", "/etc/passwd"]), [r("/etc/passwd")]);
        assert_eq!(files("commit", &["-F/etc/passwd"]), [r("/etc/passwd")]);
        assert_eq!(files("commit", &["-aF", "/etc/passwd"]), [r("/etc/passwd")]);
        assert_eq!(files("commit", &["--file=/etc/passwd"]), [r("/etc/passwd")]);
        assert_eq!(
            files("commit", &["--fil", "/etc/passwd"]),
            [r("/etc/passwd")]
        );
        assert_eq!(files("commit", &["-t", "../tpl"]), [r("../tpl")]);
        assert_eq!(files("commit", &["--template=../tpl"]), [r("../tpl")]);
        // `-m` takes the rest of the word: `-mF` is a message, not `-F`.
        assert_eq!(files("commit", &["-mFix", "x"]), []);
        assert_eq!(files("tag", &["-a", "-F", "/tmp/m", "v1"]), [r("/tmp/m")]);
        assert_eq!(files("merge", &["--file", "/tmp/m"]), [r("/tmp/m")]);
        assert_eq!(
            files("add", &["--pathspec-from=/tmp/list"]),
            [r("/tmp/list")]
        );
        assert_eq!(
            files("checkout", &["--pathspec-from-file", "/tmp/list"]),
            [r("/tmp/list")]
        );
        assert_eq!(
            files("blame", &["--contents", "/etc/passwd", "f"]),
            [r("/etc/passwd")]
        );
        assert_eq!(files("blame", &["-S", "/etc/revs", "f"]), [r("/etc/revs")]);
        assert_eq!(
            files("blame", &["--ignore-revs-file=/etc/revs", "f"]),
            [r("/etc/revs")]
        );
        assert_eq!(files("ls-files", &["-X", "/etc/ex"]), [r("/etc/ex")]);
        assert_eq!(
            files("ls-files", &["--exclude-from=/etc/ex"]),
            [r("/etc/ex")]
        );
        assert_eq!(files("diff", &["-O/etc/order"]), [r("/etc/order")]);
        assert_eq!(
            files("rev-parse", &["--resolve-git-dir", "/srv/x"]),
            [r("/srv/x")]
        );
        assert_eq!(files("init", &["/outside/dir"]), [w("/outside/dir")]);
        assert_eq!(
            files("init", &["--separate-git-dir=/outside/g"]),
            [w("/outside/g")]
        );
        // Standard input is not a file.
        assert_eq!(files("commit", &["-F", "-"]), []);
    }

    #[test]
    fn every_diff_operand_is_a_file_git_may_read() {
        let got = files("diff", &["--stat", "/etc/passwd", "x"]);
        assert_eq!(
            got,
            [
                ("/etc/passwd".to_string(), Access::Read),
                ("x".to_string(), Access::Read)
            ]
        );
        // Values of options are not operands; an option's abbreviation never takes one.
        let got = files("diff", &["-S", "needle", "--src-prefix", "a/", "HEAD"]);
        assert_eq!(got, [("HEAD".to_string(), Access::Read)]);
        let got = files("diff", &["--color", "/etc/passwd", "x"]);
        assert!(got.contains(&("/etc/passwd".to_string(), Access::Read)));
        let got = files("diff", &["--", "/etc/passwd"]);
        assert_eq!(got, [("/etc/passwd".to_string(), Access::Read)]);
    }

    fn repos(action: &str, args: &[&str]) -> Vec<(String, Access)> {
        analyse(action, &v(args))
            .map(|p| p.repos)
            .unwrap_or_default()
    }

    #[test]
    fn words_that_may_name_a_repository_are_found() {
        let r = |s: &str| (s.to_string(), Access::Read);
        let w = |s: &str| (s.to_string(), Access::Write);
        assert_eq!(repos("fetch", &["/outside/repo"]), [r("/outside/repo")]);
        assert_eq!(
            repos("fetch", &["-o", "opt", "../x", "main"]),
            [r("../x"), r("main")]
        );
        assert_eq!(repos("pull", &["--rebase", "../x"]), [r("../x")]);
        assert_eq!(
            repos("push", &["/outside/repo", "main"]),
            [w("/outside/repo"), w("main")]
        );
        assert_eq!(
            repos("push", &["--repo=/outside/repo"]),
            [w("/outside/repo")]
        );
        assert_eq!(
            repos("push", &["--rep", "/outside/repo"]),
            [w("/outside/repo")]
        );
        assert_eq!(repos("remote", &["add", "x", "/outside"]), [r("/outside")]);
        assert_eq!(
            repos("remote", &["set-url", "--push", "x", "/outside"]),
            [w("/outside")]
        );
        let plan = analyse("remote", &v(&["add", "-f", "x", "../y"])).ok();
        assert_eq!(
            plan.map(|p| p.new_remotes),
            Some(vec![("x".to_string(), "../y".to_string())])
        );
    }
}
