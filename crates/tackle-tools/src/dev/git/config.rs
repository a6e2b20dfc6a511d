//! Which repository config git may follow. The model can write `.git/config`, so the
//! repository's config is read first (`git config --list --no-includes`) and every key in it
//! is sorted: harmless keys are left alone, keys that name a program or a file get a neutral
//! value at command-line precedence, and keys with no neutral value refuse the call, naming
//! the key. On top of that a fixed set of settings is forced for every run, whatever the
//! config says (see [`FORCED`]).

use std::collections::{BTreeMap, BTreeSet};
use tackle_protocol::ToolError;

/// The empty tree, for `GIT_ATTR_SOURCE`: attributes are read from it instead of the work
/// tree's `.gitattributes`, so in-tree attributes cannot select a filter, diff or merge driver.
pub(super) const EMPTY_TREE_SHA1: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
pub(super) const EMPTY_TREE_SHA256: &str =
    "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321";

/// Settings given to every git run at command-line precedence (`GIT_CONFIG_COUNT`), above
/// any repository config: programs git would run are the harmless defaults (`true`, `cat`,
/// the system's `ssh` and `gpg`) or none, automatic maintenance and submodule recursion are
/// off, and files outside the repository git would read by default are `/dev/null`. Each
/// value was checked against git 2.47 (an empty `credential.helper` empties the list of
/// helpers; an empty `core.alternateRefsCommand` would make git try to run "").
pub(super) const FORCED: &[(&str, &str)] = &[
    // Programs.
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("core.askPass", "true"),
    ("core.sshCommand", "ssh"),
    ("ssh.variant", "ssh"),
    ("core.alternateRefsCommand", "true"),
    ("sequence.editor", "true"),
    ("credential.helper", ""),
    ("gpg.format", "openpgp"),
    ("gpg.program", "gpg"),
    ("gpg.openpgp.program", "gpg"),
    ("gpg.x509.program", "gpgsm"),
    ("gpg.ssh.program", "ssh-keygen"),
    ("gpg.ssh.defaultKeyCommand", ""),
    ("gpg.ssh.allowedSignersFile", "/dev/null"),
    ("gpg.ssh.revocationFile", "/dev/null"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("tag.forceSignAnnotated", "false"),
    ("push.gpgSign", "false"),
    // A driver name for paths without a `merge` attribute; `text` is the built-in one.
    ("merge.default", "text"),
    // `interactive.diffFilter` only ever filters coloured hunks.
    ("color.interactive", "false"),
    // Automatic maintenance runs gc, repack and their hooks.
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("receive.autogc", "false"),
    // Recursing into submodules would fetch from their remotes, which are not checked.
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
    ("push.recurseSubmodules", "no"),
    ("diff.submodule", "short"),
    // Files outside the repository git reads by default or from config.
    ("core.attributesFile", "/dev/null"),
    ("core.excludesFile", "/dev/null"),
    ("commit.template", "/dev/null"),
    ("diff.orderFile", "/dev/null"),
    ("mailmap.file", "/dev/null"),
    ("transfer.bundleURI", "false"),
];

/// Extra settings for the git that serves a fetch from, or receives a push into, a
/// repository in the workspace (`git-upload-pack`/`git-receive-pack` run in that repository,
/// with its config and without our command-line settings): no work-tree update that would
/// run its filters, and no fsck that would read its skip lists.
pub(super) const REMOTE_SIDE: &[(&str, &str)] = &[
    ("receive.denyCurrentBranch", "refuse"),
    ("receive.fsckObjects", "false"),
    ("transfer.fsckObjects", "false"),
];

/// One entry of `git config --list --null --show-scope`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    pub scope: String,
    /// As git lists it: section and name in lower case, the subsection as written.
    pub key: String,
    /// `None` for a key written without `=` (a boolean true).
    pub value: Option<String>,
}

/// A `git config --list` output that is not in the expected shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum BadListing {
    #[error("unexpected end of the config listing after `{scope}`")]
    CutShort { scope: String },
    #[error("an empty key in the config listing")]
    EmptyKey,
}

/// Parse `git config --list --null --show-scope` output: `scope NUL key LF value NUL`, or
/// `scope NUL key NUL` for a key without a value.
pub(super) fn parse_listing(out: &str) -> Result<Vec<Entry>, BadListing> {
    let mut parts = out.split('\0');
    let mut entries = Vec::new();
    while let Some(scope) = parts.next() {
        let Some(item) = parts.next() else {
            if scope.is_empty() {
                break;
            }
            return Err(BadListing::CutShort {
                scope: scope.to_string(),
            });
        };
        let (key, value) = match item.split_once('\n') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (item, None),
        };
        if key.is_empty() {
            return Err(BadListing::EmptyKey);
        }
        entries.push(Entry {
            scope: scope.to_string(),
            key: key.to_string(),
            value,
        });
    }
    Ok(entries)
}

/// `section.sub.section.name` → (section, subsection, name).
fn split_key(key: &str) -> (&str, Option<&str>, &str) {
    let (section, rest) = key.split_once('.').unwrap_or((key, ""));
    match rest.rsplit_once('.') {
        Some((sub, name)) => (section, Some(sub), name),
        None => (section, None, rest),
    }
}

/// What a key in the repository's config means for the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Harmless for the actions this tool runs.
    Allow,
    /// Overridden for every run by [`FORCED`].
    Forced,
    /// Given this value at command-line precedence, which git was checked to run nothing with.
    Neutral(&'static str),
    /// `attr.tree`: the empty tree of the repository's object format.
    AttrTree,
    /// `core.worktree`: allowed only when the work tree is inside the grants.
    Worktree,
    /// `remote.NAME.url`/`pushurl`: checked when git may contact the remote.
    RemoteUrl,
    /// `remotes.GROUP`: a group of remotes.
    RemoteGroup,
    /// No neutral value exists: the call is refused, naming the key and why.
    Refuse(&'static str),
}

const UNKNOWN: &str = "a setting this tool does not know to be harmless";
const INCLUDE: &str = "makes git read another config file, whose settings this tool cannot check";
const SKIP_LIST: &str =
    "makes git read a file outside the repository, and git prints its lines in errors";

/// Sections whose keys only matter to git commands this tool never runs, or that git
/// itself only reads from protected (system, global) config, or that other tools keep in
/// `.git/config` and git ignores.
const INERT_SECTIONS: &[&str] = &[
    "advice",
    "alias",
    "am",
    "apply",
    "add",
    "bitmappseudomerge",
    "browser",
    "checkout",
    "clean",
    "color",
    "column",
    "commitgraph",
    "completion",
    "credentialcache",
    "credentialstore",
    "difftool",
    "fastimport",
    "feature",
    "format",
    "fsmonitor",
    "gitcvs",
    "gitweb",
    "grep",
    "gui",
    "guitool",
    "help",
    "i18n",
    "imap",
    "index",
    "instaweb",
    "log",
    "lsrefs",
    "mailinfo",
    "man",
    "mergetool",
    "notes",
    "pack",
    "pretty",
    "promisor",
    "rebase",
    "reftable",
    "repack",
    "rerere",
    "revert",
    "safe",
    "sendemail",
    "showbranch",
    "sparse",
    "splitindex",
    "stash",
    "status",
    "submodule",
    "tar",
    "trace2",
    "uploadarchive",
    "uploadpack",
    "uploadpackfilter",
    "versionsort",
    "web",
    "worktree",
    // Kept in `.git/config` by other tools; git does not read them.
    "lfs",
    "gitflow",
    "svn",
    "svn-remote",
    "p4",
    "cola",
    "tig",
    "gitreview",
];

const CORE_ALLOWED: &[&str] = &[
    "repositoryformatversion",
    "filemode",
    "bare",
    "logallrefupdates",
    "ignorecase",
    "precomposeunicode",
    "symlinks",
    "autocrlf",
    "safecrlf",
    "eol",
    "quotepath",
    "abbrev",
    "compression",
    "loosecompression",
    "bigfilethreshold",
    "checkstat",
    "trustctime",
    "untrackedcache",
    "splitindex",
    "commentchar",
    "commentstring",
    "whitespace",
    "sparsecheckout",
    "sparsecheckoutcone",
    "multipackindex",
    "commitgraph",
    "preloadindex",
    "sharedrepository",
    "warnambiguousrefs",
    "checkroundtripencoding",
    "fsync",
    "fsyncmethod",
    "fsyncobjectfiles",
    "deltabasecachelimit",
    "packedgitlimit",
    "packedgitwindowsize",
    "protecthfs",
    "protectntfs",
    "hidedotfiles",
    "createobject",
    "filesreflocktimeout",
    "packedrefstimeout",
    "prefersymlinkrefs",
    "usereplacerefs",
    "maxtreedepth",
    "notesref",
    "restrictinheritedhandles",
    "ignorestat",
    "alternaterefsprefixes",
    "fsmonitorhookversion",
    "unsetenvvars",
];

fn classify(key: &str) -> Class {
    use Class::*;
    let (section, sub, name) = split_key(key);
    match (section, sub) {
        ("include" | "includeif", _) => Refuse(INCLUDE),
        ("url", _) => Refuse(
            "rewrites remote URLs, so git would contact a place this tool did not check",
        ),
        ("bundle", _) => Refuse("makes fetch download bundles from a place this tool did not check"),
        ("core", None) => match name {
            "hookspath" | "fsmonitor" | "pager" | "editor" | "askpass" | "sshcommand"
            | "alternaterefscommand" | "attributesfile" | "excludesfile" => Forced,
            "worktree" => Worktree,
            "gitproxy" => Refuse(
                "runs a proxy program, and the first matching entry wins over any override",
            ),
            n if CORE_ALLOWED.contains(&n) => Allow,
            _ => Refuse(UNKNOWN),
        },
        ("filter", Some(_)) => match name {
            "clean" | "smudge" | "process" => Neutral(""),
            "required" => Neutral("false"),
            _ => Refuse(UNKNOWN),
        },
        ("diff", Some(_)) => match name {
            "textconv" | "command" => Neutral(""),
            "cachetextconv" | "binary" | "xfuncname" | "funcname" | "wordregex"
            | "trustexitcode" => Allow,
            _ => Refuse(UNKNOWN),
        },
        ("diff", None) => match name {
            "external" => Refuse(
                "runs a diff program, and no value keeps git from running one",
            ),
            "orderfile" | "submodule" => Forced,
            "algorithm" | "autorefreshindex" | "colormoved" | "colormovedws" | "context"
            | "dirstat" | "dstprefix" | "srcprefix" | "indentheuristic" | "interhunkcontext"
            | "mnemonicprefix" | "noprefix" | "relative" | "renamelimit" | "renames"
            | "statgraphwidth" | "statnamewidth" | "suppressblankempty" | "wordregex"
            | "wserrorhighlight" | "tool" | "guitool" | "trustexitcode"
            | "ignoresubmodules" => Allow,
            _ => Refuse(UNKNOWN),
        },
        ("merge", Some(_)) => match name {
            "driver" => Neutral(""),
            "name" | "recursive" => Allow,
            _ => Refuse(UNKNOWN),
        },
        ("merge", None) => match name {
            "default" => Forced,
            "conflictstyle" | "ff" | "log" | "stat" | "renames" | "renamelimit"
            | "directoryrenames" | "autostash" | "branchdesc" | "verbosity"
            | "defaulttoupstream" | "suppressdest" | "renormalize" | "verifysignatures"
            | "tool" | "guitool" => Allow,
            _ => Refuse(UNKNOWN),
        },
        ("remote", Some(_)) => match name {
            "url" | "pushurl" => RemoteUrl,
            "uploadpack" | "receivepack" => Refuse(
                "names the program run at the other end, and the first setting wins over any override",
            ),
            "vcs" => Refuse("runs a remote-helper program"),
            "proxy" => Refuse("sends git's traffic through a proxy this tool did not check"),
            "fetch" | "push" | "mirror" | "tagopt" | "prune" | "prunetags"
            | "skipdefaultupdate" | "skipfetchall" | "promisor" | "partialclonefilter"
            | "proxyauthmethod" | "gh-resolved" => Allow,
            _ => Refuse(UNKNOWN),
        },
        ("remote", None) => match name {
            "pushdefault" => Allow,
            _ => Refuse(UNKNOWN),
        },
        ("remotes", None) => RemoteGroup,
        // Git reads only the documented `branch.NAME.*` keys; editors keep their own there.
        ("branch", Some(_)) => match name {
            "mergeoptions" => Neutral(""),
            _ => Allow,
        },
        ("branch", None) => match name {
            "autosetupmerge" | "autosetuprebase" | "sort" => Allow,
            _ => Refuse(UNKNOWN),
        },
        ("pull", None) => match name {
            // Merge strategies; any name but a built-in one runs `git-merge-NAME`.
            "twohead" => Neutral("ort"),
            "octopus" => Neutral("octopus"),
            "rebase" | "ff" => Allow,
            _ => Refuse(UNKNOWN),
        },
        ("push", None) => match name {
            "gpgsign" | "recursesubmodules" => Forced,
            "default" | "autosetupremote" | "followtags" | "usebitmaps"
            | "useforceifincludes" | "negotiate" | "pushoption" => Allow,
            _ => Refuse(UNKNOWN),
        },
        ("fetch", None) => match name {
            "recursesubmodules" => Forced,
            "bundleuri" => Refuse(
                "makes fetch download a bundle from a place this tool did not check",
            ),
            "prune" | "prunetags" | "all" | "parallel" | "output" | "showforcedupdates"
            | "writecommitgraph" | "negotiationalgorithm" | "unpacklimit" | "fsckobjects"
            | "bundlecreationtoken" => Allow,
            _ => Refuse(UNKNOWN),
        },
        ("fetch" | "receive", Some("fsck")) | ("fsck", None) => match name {
            "skiplist" => Refuse(SKIP_LIST),
            _ => Allow,
        },
        ("receive", None) => Allow,
        ("transfer", None) => match name {
            "bundleuri" => Forced,
            _ => Allow,
        },
        ("http", _) => match name {
            "postbuffer" | "lowspeedlimit" | "lowspeedtime" | "version" | "maxrequests"
            | "minsessions" | "noepsv" | "useragent" | "emptyauth" | "followredirects"
            | "sslversion" | "sslcipherlist" | "sslbackend" | "extraheader" | "delegation"
            | "proactiveauth" | "schannelcheckrevoke" | "schannelusesslcainfo" | "ssltry" => {
                Allow
            }
            "sslverify" => Refuse("turns off the checks of the server's certificate"),
            _ => Refuse(
                "points git's HTTP client at a proxy, a resolver or files this tool did not check",
            ),
        },
        ("credential", _) => match name {
            "helper" => Forced,
            "username" | "usehttppath" | "interactive" | "protectprotocol"
            | "sanitizeprompt" => Allow,
            _ => Refuse(UNKNOWN),
        },
        ("gpg", None) => match name {
            "program" | "format" => Forced,
            "mintrustlevel" => Allow,
            _ => Refuse(UNKNOWN),
        },
        ("gpg", Some("openpgp" | "x509")) if name == "program" => Forced,
        ("gpg", Some("ssh")) => match name {
            "program" | "defaultkeycommand" | "allowedsignersfile" | "revocationfile" => Forced,
            _ => Refuse(UNKNOWN),
        },
        ("user", None) => match name {
            "name" | "email" | "signingkey" | "useconfigonly" => Allow,
            _ => Refuse(UNKNOWN),
        },
        ("author" | "committer", None) => match name {
            "name" | "email" => Allow,
            _ => Refuse(UNKNOWN),
        },
        ("init", None) => match name {
            "defaultbranch" => Allow,
            "templatedir" => Neutral(""),
            _ => Refuse(UNKNOWN),
        },
        ("attr", None) if name == "tree" => AttrTree,
        ("pager", None) => Neutral("false"),
        ("interactive", None) => match name {
            "singlekey" => Allow,
            "difffilter" => Neutral(""),
            _ => Refuse(UNKNOWN),
        },
        ("sequence", None) if name == "editor" => Forced,
        ("commit", None) => match name {
            "template" | "gpgsign" => Forced,
            "cleanup" | "status" | "verbose" => Allow,
            _ => Refuse(UNKNOWN),
        },
        ("tag", None) => match name {
            "gpgsign" | "forcesignannotated" => Forced,
            "sort" => Allow,
            _ => Refuse(UNKNOWN),
        },
        ("mailmap", None) => match name {
            "file" => Forced,
            "blob" => Allow,
            _ => Refuse(UNKNOWN),
        },
        ("blame", None) => match name {
            "ignorerevsfile" => Refuse(SKIP_LIST),
            "blankboundary" | "coloring" | "date" | "markignoredlines"
            | "markunblamablelines" | "showemail" | "showroot" => Allow,
            _ => Refuse(UNKNOWN),
        },
        ("gc", _) => match name {
            "recentobjectshook" => Refuse("runs a program when gc runs"),
            "repackfilterto" => Refuse("makes gc write objects to a place this tool did not check"),
            "auto" => Forced,
            _ => Allow,
        },
        ("maintenance", _) => Allow,
        ("extensions", None) => Allow,
        ("ssh", None) if name == "variant" => Forced,
        // `GIT_ALLOW_PROTOCOL` overrides every `protocol.*.allow`.
        ("protocol", _) => Allow,
        (s, _) if INERT_SECTIONS.contains(&s) => Allow,
        _ => Refuse(UNKNOWN),
    }
}

/// A remote as the repository's config defines it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct RemoteConfig {
    pub urls: Vec<String>,
    pub push_urls: Vec<String>,
}

/// What one repository's config means for the run.
#[derive(Debug, Default)]
pub(super) struct Findings {
    /// Neutral values for keys this config sets, at command-line precedence.
    pub overrides: Vec<(String, String)>,
    pub remotes: BTreeMap<String, RemoteConfig>,
    pub groups: BTreeSet<String>,
    pub sha256: bool,
    /// `core.worktree`, as written.
    pub worktree: Option<String>,
    /// A promisor remote: any action may fetch missing objects from it.
    pub partial_clone: bool,
    /// `user.name`, `user.email` and `init.defaultBranch` from the user's own global config
    /// where the repository does not set them (global config is otherwise not read).
    pub identity: Vec<(String, String)>,
}

/// Sort every key of a config listing. `shown` names the config file in messages.
pub(super) fn examine(entries: &[Entry], shown: &str) -> Result<Findings, ToolError> {
    let mut f = Findings::default();
    let mut local_keys: BTreeSet<&str> = BTreeSet::new();
    let mut global: Vec<(&str, &str)> = Vec::new();
    let mut attr_tree = false;
    for e in entries {
        match e.scope.as_str() {
            "global" => {
                if let Some(v) = e.value.as_deref() {
                    global.push((e.key.as_str(), v));
                }
                continue;
            }
            // Not the repository's: system config is off, command-line config is ours or the
            // operator's.
            "system" | "command" => continue,
            _ => {}
        }
        local_keys.insert(e.key.as_str());
        let (_, sub, name) = split_key(&e.key);
        match classify(&e.key) {
            Class::Allow | Class::Forced => {}
            Class::Neutral(value) => f.overrides.push((e.key.clone(), value.to_string())),
            Class::AttrTree => attr_tree = true,
            Class::Worktree => f.worktree = e.value.clone(),
            Class::RemoteGroup => {
                f.groups.insert(name.to_string());
            }
            Class::RemoteUrl => {
                let remote = f
                    .remotes
                    .entry(sub.unwrap_or_default().to_string())
                    .or_default();
                let value = e.value.clone().unwrap_or_default();
                match name {
                    "pushurl" => remote.push_urls.push(value),
                    _ => remote.urls.push(value),
                }
            }
            Class::Refuse(why) => {
                return Err(ToolError::invalid_arguments(format!(
                "git is not run: {shown} sets `{}`, {why}; remove that setting and call git again",
                e.key
            )))
            }
        }
        let value = e.value.as_deref();
        if e.key == "extensions.objectformat" {
            f.sha256 = value.is_some_and(|v| v.eq_ignore_ascii_case("sha256"));
        }
        let promisor = e.key.starts_with("remote.") && name == "promisor";
        if e.key == "extensions.partialclone" || promisor && value != Some("false") {
            f.partial_clone = true;
        }
    }
    if attr_tree {
        f.overrides
            .push(("attr.tree".to_string(), empty_tree(f.sha256).to_string()));
    }
    for (key, value) in global {
        let wanted = matches!(key, "user.name" | "user.email" | "init.defaultbranch");
        if wanted && !local_keys.contains(key) && !value.contains('\n') {
            f.identity.retain(|(k, _)| k != key);
            f.identity.push((key.to_string(), value.to_string()));
        }
    }
    Ok(f)
}

pub(super) fn empty_tree(sha256: bool) -> &'static str {
    if sha256 {
        EMPTY_TREE_SHA256
    } else {
        EMPTY_TREE_SHA1
    }
}

/// The `uploadpack`/`receivepack` command for a repository in the workspace: the same git,
/// with [`FORCED`] and [`REMOTE_SIDE`] on its command line (the local transport does not
/// pass our `GIT_CONFIG_*` on to the other side). Values hold no shell metacharacters.
pub(super) fn remote_side_command(service: &str) -> String {
    let mut cmd = String::from("git");
    for (k, v) in FORCED.iter().chain(REMOTE_SIDE) {
        cmd.push_str(&format!(" -c '{k}={v}'"));
    }
    cmd.push(' ');
    cmd.push_str(service);
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(key: &str, value: &str) -> Entry {
        Entry {
            scope: "local".into(),
            key: key.into(),
            value: Some(value.into()),
        }
    }

    #[test]
    fn the_listing_is_parsed_with_scopes_and_keys_without_values() {
        let out = "local\0core.bare\nfalse\0local\0foo.flag\0worktree\0remote.Or.ig.url\nx\0";
        let entries = parse_listing(out).unwrap_or_default();
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[1].value, None);
        assert_eq!(entries[2].scope, "worktree");
        assert_eq!(split_key(&entries[2].key), ("remote", Some("Or.ig"), "url"));
        assert!(parse_listing("local\0").is_err());
        assert_eq!(parse_listing(""), Ok(Vec::new()));
    }

    #[test]
    fn program_and_file_keys_are_neutralised_or_refused_by_name() {
        let neutral = [
            ("filter.x.clean", ""),
            ("filter.x.smudge", ""),
            ("filter.x.process", ""),
            ("filter.x.required", "false"),
            ("diff.x.textconv", ""),
            ("diff.x.command", ""),
            ("merge.x.driver", ""),
            ("branch.main.mergeoptions", ""),
            ("pull.twohead", "ort"),
            ("pager.log", "false"),
            ("interactive.difffilter", ""),
            ("init.templatedir", ""),
        ];
        for (key, want) in neutral {
            let f = examine(&[local(key, "/tmp/evil")], ".git/config").ok();
            let got = f.map(|f| f.overrides).unwrap_or_default();
            assert_eq!(got, [(key.to_string(), want.to_string())], "{key}");
        }
        let refused = [
            "include.path",
            "includeif.gitdir:/x/.path",
            "url.ext::sh -c evil.insteadof",
            "url./outside.pushinsteadof",
            "core.gitproxy",
            "diff.external",
            "remote.o.vcs",
            "remote.o.proxy",
            "remote.o.uploadpack",
            "remote.o.receivepack",
            "http.proxy",
            "http.https://x.cookiefile",
            "blame.ignorerevsfile",
            "fetch.fsck.skiplist",
            "gc.recentobjectshook",
            "fetch.bundleuri",
            "totally.unknown",
            "core.somethingnew",
        ];
        for key in refused {
            let err = examine(&[local(key, "x")], ".git/config")
                .err()
                .map(|e| e.message)
                .unwrap_or_default();
            assert!(
                err.contains(&format!("`{key}`")) && err.contains(".git/config"),
                "{key}: {err}"
            );
        }
    }

    #[test]
    fn harmless_and_forced_keys_pass_without_overrides() {
        let keys = [
            "core.repositoryformatversion",
            "core.hookspath",
            "core.fsmonitor",
            "user.name",
            "branch.main.remote",
            "branch.main.vscode-merge-base",
            "remote.origin.fetch",
            "color.ui",
            "lfs.repositoryformatversion",
            "credential.helper",
            "gpg.ssh.program",
            "protocol.ext.allow",
            "alias.st",
            "sendemail.smtpserver",
        ];
        for key in keys {
            let f = examine(&[local(key, "x")], ".git/config");
            assert!(f.is_ok_and(|f| f.overrides.is_empty()), "{key}");
        }
    }

    #[test]
    fn remotes_groups_format_and_identity_are_collected() {
        let entries = [
            local("remote.origin.url", "../up"),
            local("remote.origin.pushurl", "/srv/push"),
            local("remotes.all", "origin"),
            local("extensions.objectformat", "sha256"),
            local("attr.tree", "HEAD"),
            local("user.email", "repo@example.com"),
            Entry {
                scope: "global".into(),
                key: "user.email".into(),
                value: Some("me@example.com".into()),
            },
            Entry {
                scope: "global".into(),
                key: "user.name".into(),
                value: Some("Me".into()),
            },
            Entry {
                scope: "global".into(),
                key: "core.pager".into(),
                value: Some("evil".into()),
            },
        ];
        let f = examine(&entries, ".git/config").unwrap_or_default();
        assert_eq!(
            f.remotes.get("origin"),
            Some(&RemoteConfig {
                urls: vec!["../up".into()],
                push_urls: vec!["/srv/push".into()]
            })
        );
        assert!(f.groups.contains("all"));
        assert!(f.sha256);
        assert_eq!(
            f.overrides,
            [("attr.tree".to_string(), EMPTY_TREE_SHA256.to_string())]
        );
        assert_eq!(f.identity, [("user.name".to_string(), "Me".to_string())]);
    }

    #[test]
    fn the_remote_side_command_carries_every_forced_setting() {
        let cmd = remote_side_command("receive-pack");
        assert!(cmd.starts_with("git -c 'core.hooksPath=/dev/null'"));
        assert!(cmd.ends_with(" receive-pack"));
        assert!(cmd.contains("'receive.denyCurrentBranch=refuse'"));
        for (k, v) in FORCED.iter().chain(REMOTE_SIDE) {
            assert!(!k.contains('\'') && !v.contains('\''));
            assert!(v
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "/-.".contains(c)));
        }
    }
}
