//! The `git` tool against a repository the model wrote: config and attributes that name
//! programs, arguments that name files and repositories outside the workspace. Every attack
//! runs for real through a real host (the namespace sandbox where bubblewrap works): the
//! tool's run must never create the marker its program would create, and, where git can be
//! made to run the program at all, the same trigger with plain git (the control) does create
//! it — so each row shows the attack is real and that the tool stops it.

use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tackle_host::{HostConfig, NativeHostProvider};
use tackle_protocol::{
    CallScope, Capability, ErrorKind, ExecCommand, ExecOutput, ExecRequest, Grants, HostProvider,
    Tool, ToolContext, ToolError, ToolHost, ToolOutput,
};
use tackle_tools::dev::Git;

fn git_installed() -> bool {
    std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_ok()
}

/// A fresh workspace holding a repository with one commit, a marker program `bin/run`
/// (it creates `MARK` in the workspace), and a directory outside the workspace with a victim
/// file and a repository holding a secret.
struct Ws {
    _dir: tempfile::TempDir,
    _state: tempfile::TempDir,
    _outside: tempfile::TempDir,
    scope: CallScope,
    host: Arc<dyn ToolHost>,
    root: PathBuf,
    outside: PathBuf,
}

const VICTIM: &str = "SECRET-VICTIM-CONTENT";

impl Ws {
    async fn new() -> Ws {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = tempfile::tempdir().expect("tempdir");
        let outside_dir = tempfile::tempdir().expect("tempdir");
        let provider = NativeHostProvider::new(HostConfig::new(state.path()));
        let scope = CallScope {
            tool: "git".into(),
            session_id: "s".into(),
            agent: "a".into(),
            workspace: dir.path().to_path_buf(),
            grants: Grants::default(),
            cancel: Default::default(),
            approved: false,
        };
        let host: Arc<dyn ToolHost> = provider.scoped(&scope);
        let root = host.workspace().to_path_buf();
        let outside = std::fs::canonicalize(outside_dir.path()).expect("canonical");
        let ws = Ws {
            _dir: dir,
            _state: state,
            _outside: outside_dir,
            scope,
            host,
            root,
            outside,
        };
        std::fs::write(ws.outside.join("victim.txt"), format!("{VICTIM}\n")).expect("victim");
        let secret = ws.outside.join("secret");
        std::fs::create_dir_all(&secret).expect("mkdir");
        let plain = |dir: &Path, args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(args)
                .current_dir(dir)
                .envs(plain_env())
                .output()
                .is_ok_and(|o| o.status.success());
            assert!(ok, "git {args:?}");
        };
        plain(&secret, &["init", "-q", "-b", "main"]);
        std::fs::write(secret.join("secret.txt"), format!("{VICTIM}\n")).expect("write");
        plain(&secret, &["add", "secret.txt"]);
        plain(&secret, &["commit", "-qm", "secret"]);
        plain(&secret, &["clone", "-q", "--bare", ".", "../secret.git"]);
        ws.sh_ok(
            "git init -q -b main . && git config user.name T && git config user.email t@example.com \
             && echo a > f.txt && git add f.txt && git commit -qm init \
             && mkdir -p bin && printf '#!/bin/sh\\ntouch \"%s/MARK\"\\n' \"$WS\" > bin/run && chmod +x bin/run \
             && echo bin >> .git/info/exclude && echo MARK >> .git/info/exclude",
        )
        .await;
        ws
    }

    fn env(&self) -> Vec<(String, String)> {
        let mut env = plain_env();
        env.push(("WS".into(), self.root.display().to_string()));
        env.push(("RUN".into(), self.run().display().to_string()));
        env.push(("OUT".into(), self.outside.display().to_string()));
        env.push(("SECRET".into(), VICTIM.into()));
        env
    }

    fn run(&self) -> PathBuf {
        self.root.join("bin/run")
    }

    /// A shell line through the host (sandboxed like the tool), in the workspace.
    async fn sh(&self, line: &str) -> ExecOutput {
        self.host
            .exec(ExecRequest {
                command: ExecCommand::Shell(line.to_string()),
                cwd: None,
                timeout: Duration::from_secs(60),
                env: self.env(),
                stdin: None,
                max_output_bytes: 65_536,
                output_lines: None,
                program_sha256: None,
                data_values: Vec::new(),
            })
            .await
            .expect("exec")
    }

    async fn sh_ok(&self, line: &str) {
        let out = self.sh(line).await;
        assert_eq!(out.exit_code, Some(0), "{line}: {}", out.stderr);
    }

    fn cx(&self) -> ToolContext {
        ToolContext::new(&self.scope, "test", self.host.clone())
    }

    /// The tool, as the model calls it.
    async fn git(&self, action: &str, args: &[String]) -> Result<ToolOutput, ToolError> {
        Git.call(json!({"action": action, "args": args}), &self.cx())
            .await
    }

    fn marked(&self) -> bool {
        self.root.join("MARK").exists()
    }

    /// `$RUN`, `$WS` and `$OUT` in an argument, as the shell would expand them.
    fn expand(&self, arg: &str) -> String {
        arg.replace("$RUN", &self.run().display().to_string())
            .replace("$WS", &self.root.display().to_string())
            .replace("$OUT", &self.outside.display().to_string())
    }

    fn victim_intact(&self) -> bool {
        let victim = std::fs::read_to_string(self.outside.join("victim.txt")).unwrap_or_default();
        victim == format!("{VICTIM}\n")
    }
}

/// Git as a person would run it, with no config of the machine's.
fn plain_env() -> Vec<(String, String)> {
    [
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_AUTHOR_NAME", "T"),
        ("GIT_AUTHOR_EMAIL", "t@example.com"),
        ("GIT_COMMITTER_NAME", "T"),
        ("GIT_COMMITTER_EMAIL", "t@example.com"),
        ("GIT_TERMINAL_PROMPT", "0"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

fn quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

/// One attack: repository state the model can create, then a git call that would run the
/// marker program.
struct Attack {
    /// The config keys (or files) under test.
    keys: &'static str,
    /// Shell run in the workspace after the base repository is made; `$RUN` is the marker.
    setup: &'static str,
    action: &'static str,
    args: &'static [&'static str],
    /// Plain git with the same trigger runs the marker. `false` where git never runs the
    /// program here (no terminal for a pager, keys git only reads from protected config).
    control: bool,
}

const fn attack(
    keys: &'static str,
    setup: &'static str,
    action: &'static str,
    args: &'static [&'static str],
) -> Attack {
    Attack {
        keys,
        setup,
        action,
        args,
        control: true,
    }
}

const fn inert(
    keys: &'static str,
    setup: &'static str,
    action: &'static str,
    args: &'static [&'static str],
) -> Attack {
    Attack {
        keys,
        setup,
        action,
        args,
        control: false,
    }
}

async fn run_attacks(attacks: &[Attack]) {
    if !git_installed() {
        eprintln!("SKIP: git is not installed");
        return;
    }
    let mut failures = Vec::new();
    for a in attacks {
        // The control: plain git runs the program, so the row tests a real attack.
        if a.control {
            let ws = Ws::new().await;
            ws.sh_ok(a.setup).await;
            let args: Vec<String> = a.args.iter().map(|s| quote(&ws.expand(s))).collect();
            let line = format!("git {} {} < /dev/null", a.action, args.join(" "));
            let out = ws.sh(&line).await;
            if !ws.marked() {
                failures.push(format!(
                    "{}: the control `{line}` did not run the program: {}",
                    a.keys, out.stderr
                ));
            }
        }
        let ws = Ws::new().await;
        ws.sh_ok(a.setup).await;
        let args: Vec<String> = a.args.iter().map(|s| ws.expand(s)).collect();
        let out = ws.git(a.action, &args).await;
        if ws.marked() {
            failures.push(format!(
                "{}: `git {} {:?}` through the tool ran the program: {:?}",
                a.keys,
                a.action,
                a.args,
                out.map(|o| o.content)
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[tokio::test]
async fn config_keys_that_run_programs_on_local_actions_never_run() {
    run_attacks(&[
        attack("core.fsmonitor", "git config core.fsmonitor \"$RUN\"", "status", &[]),
        attack(
            "core.fsmonitor + core.fsmonitorHookVersion",
            "git config core.fsmonitor \"$RUN\" && git config core.fsmonitorHookVersion 1",
            "diff",
            &[],
        ),
        attack(
            "core.hooksPath (pre-commit)",
            "mkdir -p hk && printf '#!/bin/sh\\n\"%s\"\\n' \"$RUN\" > hk/pre-commit && chmod +x hk/pre-commit \
             && git config core.hooksPath hk && echo b >> f.txt",
            "commit",
            &["-am", "x"],
        ),
        attack(
            ".git/hooks/pre-commit",
            "printf '#!/bin/sh\\n\"%s\"\\n' \"$RUN\" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo b >> f.txt",
            "commit",
            &["-am", "x"],
        ),
        attack(
            ".git/hooks/reference-transaction",
            "printf '#!/bin/sh\\n\"%s\"\\n' \"$RUN\" > .git/hooks/reference-transaction && chmod +x .git/hooks/reference-transaction",
            "branch",
            &["topic"],
        ),
        attack(
            ".git/hooks/post-checkout",
            "printf '#!/bin/sh\\n\"%s\"\\n' \"$RUN\" > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout",
            "switch",
            &["-c", "topic"],
        ),
        attack(
            "core.editor",
            "git config core.editor \"$RUN\" && echo b >> f.txt",
            "commit",
            &["-a"],
        ),
        attack(
            "sequence.editor",
            "echo b >> f.txt && git commit -qam two && git config sequence.editor \"$RUN\"",
            "rebase",
            &["-i", "HEAD~1"],
        ),
        inert("core.pager", "git config core.pager \"$RUN\"", "log", &["-1"]),
        inert("pager.<cmd>", "git config pager.log \"$RUN\"", "log", &["-1"]),
        attack(
            "diff.external",
            "git config diff.external \"$RUN\" && echo b >> f.txt",
            "diff",
            &[],
        ),
        attack(
            "interactive.diffFilter",
            "git config interactive.diffFilter \"$RUN\" && git config color.ui always && echo b >> f.txt",
            "add",
            &["-p"],
        ),
        attack(
            "gpg.program + commit.gpgSign",
            "git config gpg.program \"$RUN\" && git config commit.gpgSign true",
            "commit",
            &["--allow-empty", "-m", "x"],
        ),
        attack(
            "gpg.openpgp.program + commit.gpgSign",
            "git config gpg.openpgp.program \"$RUN\" && git config commit.gpgSign true",
            "commit",
            &["--allow-empty", "-m", "x"],
        ),
        attack(
            "gpg.x509.program + gpg.format",
            "git config gpg.format x509 && git config gpg.x509.program \"$RUN\" && git config commit.gpgSign true",
            "commit",
            &["--allow-empty", "-m", "x"],
        ),
        attack(
            "gpg.ssh.program + user.signingKey",
            "printf k > key && git config gpg.format ssh && git config user.signingKey \"$WS/key\" \
             && git config gpg.ssh.program \"$RUN\" && git config commit.gpgSign true",
            "commit",
            &["--allow-empty", "-m", "x"],
        ),
        attack(
            "gpg.ssh.defaultKeyCommand",
            "git config gpg.format ssh && git config gpg.ssh.defaultKeyCommand \"$RUN\" && git config commit.gpgSign true",
            "commit",
            &["--allow-empty", "-m", "x"],
        ),
        attack(
            "tag.gpgSign",
            "git config gpg.program \"$RUN\" && git config tag.gpgSign true",
            "tag",
            &["-a", "-m", "x", "v1"],
        ),
        attack(
            "tag.forceSignAnnotated",
            "git config gpg.program \"$RUN\" && git config tag.forceSignAnnotated true",
            "tag",
            &["-m", "x", "v1"],
        ),
        attack(
            "gpg.program + log.showSignature",
            "printf '#!/bin/sh\\ncat > /dev/null\\nprintf \"\\\\n[GNUPG:] SIG_CREATED \\\\n\" >&2\\nprintf -- \"-----BEGIN PGP SIGNATURE-----\\\\n\\\\nx\\\\n-----END PGP SIGNATURE-----\\\\n\"\\n' > bin/signer \
             && chmod +x bin/signer && git -c gpg.program=\"$WS/bin/signer\" commit -q --allow-empty -S -m signed \
             && git config gpg.program \"$RUN\" && git config log.showSignature true",
            "log",
            &["-1"],
        ),
        attack(
            "gc.auto (pre-auto-gc hook through automatic maintenance)",
            "git repack -q && echo x > n1 && git add n1 && git commit -qm n1 && git repack -q \
             && git config gc.autoPackLimit 1 && git config gc.autoDetach false && git config maintenance.autoDetach false \
             && printf '#!/bin/sh\\n\"%s\"\\nexit 1\\n' \"$RUN\" > .git/hooks/pre-auto-gc && chmod +x .git/hooks/pre-auto-gc && echo y > n2 && git add n2",
            "commit",
            &["-m", "n2"],
        ),
        attack(
            "gc.recentObjectsHook (automatic gc writing a cruft pack)",
            "git repack -q && echo x > n1 && git add n1 && git commit -qm n1 && git repack -q \
             && echo unreachable | git hash-object -w --stdin > /dev/null && touch -d 2000-01-01 .git/objects/??/* \
             && git config gc.autoPackLimit 1 && git config gc.autoDetach false && git config maintenance.autoDetach false \
             && git config gc.recentObjectsHook \"$RUN\" && echo y > n2 && git add n2",
            "commit",
            &["-m", "n2"],
        ),
        attack(
            "trailer.<t>.cmd (a key outside the allow-list: refused, not known to git's list)",
            "git config trailer.sign.cmd \"$RUN\"",
            "commit",
            &["--allow-empty", "-m", "x", "--trailer", "sign: me"],
        ),
        inert(
            "alias.* (git never uses an alias for a built-in command)",
            "git config alias.status \"!$RUN\"",
            "status",
            &[],
        ),
    ])
    .await;
}

#[tokio::test]
async fn drivers_selected_by_attributes_never_run() {
    run_attacks(&[
        attack(
            "filter.<d>.clean (.gitattributes)",
            "echo '* filter=x' > .gitattributes && git config filter.x.clean \"$RUN\" && echo b >> f.txt",
            "add",
            &["f.txt"],
        ),
        attack(
            "filter.<d>.clean (.git/info/attributes)",
            "echo '* filter=x' > .git/info/attributes && git config filter.x.clean \"$RUN\" && echo b >> f.txt",
            "add",
            &["f.txt"],
        ),
        attack(
            "filter.<d>.clean (core.attributesFile)",
            "echo '* filter=x' > attrs && git config core.attributesFile \"$WS/attrs\" && git config filter.x.clean \"$RUN\" && echo b >> f.txt",
            "add",
            &["f.txt"],
        ),
        attack(
            "filter.<d>.clean + filter.<d>.required (status refreshing the index)",
            "echo '* filter=x' > .git/info/attributes && git config filter.x.clean \"$RUN\" && git config filter.x.required true && touch -d '2001-01-01' f.txt",
            "status",
            &[],
        ),
        attack(
            "filter.<d>.smudge",
            "echo '* filter=x' > .git/info/attributes && git config filter.x.smudge \"$RUN\" && rm f.txt",
            "restore",
            &["f.txt"],
        ),
        attack(
            "filter.<d>.process",
            "echo '* filter=x' > .git/info/attributes && git config filter.x.process \"$RUN\" && echo b >> f.txt",
            "add",
            &["f.txt"],
        ),
        attack(
            "filter.<d>.smudge on stash",
            "echo '* filter=x' > .git/info/attributes && git config filter.x.smudge \"$RUN\" && echo b >> f.txt",
            "stash",
            &[],
        ),
        attack(
            "diff.<d>.command",
            "echo '* diff=x' > .gitattributes && git config diff.x.command \"$RUN\" && echo b >> f.txt",
            "diff",
            &[],
        ),
        attack(
            "diff.<d>.command (.git/info/attributes)",
            "echo '* diff=x' > .git/info/attributes && git config diff.x.command \"$RUN\" && echo b >> f.txt",
            "diff",
            &[],
        ),
        attack(
            "diff.<d>.textconv (log -p)",
            "echo '* diff=x' > .git/info/attributes && git config diff.x.textconv \"$RUN\" && echo b >> f.txt && git commit -qam two",
            "log",
            &["-p", "-1"],
        ),
        attack(
            "diff.<d>.textconv (show)",
            "echo '* diff=x' > .gitattributes && git config diff.x.textconv \"$RUN\" && echo b >> f.txt && git commit -qam two",
            "show",
            &[],
        ),
        attack(
            "diff.<d>.textconv (blame)",
            "echo '* diff=x' > .git/info/attributes && git config diff.x.textconv \"$RUN\"",
            "blame",
            &["f.txt"],
        ),
        attack(
            "diff.<d>.textconv (status -v)",
            "echo '* diff=x' > .git/info/attributes && git config diff.x.textconv \"$RUN\" && echo b >> f.txt && git add f.txt",
            "status",
            &["-v"],
        ),
        attack(
            "merge.<d>.driver",
            "git checkout -qb side && echo s >> f.txt && git commit -qam s && git checkout -q main && echo m >> f.txt && git commit -qam m \
             && git config merge.x.driver \"$RUN %A\" && echo 'f.txt merge=x' > .git/info/attributes",
            "merge",
            &["side", "-m", "x"],
        ),
        attack(
            "merge.<d>.driver (.gitattributes)",
            "echo 'f.txt merge=x' > .gitattributes && git add .gitattributes && git commit -qm attrs \
             && git checkout -qb side && echo s >> f.txt && git commit -qam s && git checkout -q main && echo m >> f.txt && git commit -qam m \
             && git config merge.x.driver \"$RUN %A\"",
            "cherry-pick",
            &["side"],
        ),
        attack(
            "merge.default",
            "git checkout -qb side && echo s >> f.txt && git commit -qam s && git checkout -q main && echo m >> f.txt && git commit -qam m \
             && git config merge.x.driver \"$RUN %A\" && git config merge.default x",
            "merge",
            &["side", "-m", "x"],
        ),
    ])
    .await;
}

#[tokio::test]
async fn remotes_transports_and_includes_never_run_programs() {
    run_attacks(&[
        attack(
            "core.sshCommand",
            "git config core.sshCommand \"$RUN\"",
            "fetch",
            &["ssh://example.invalid/x"],
        ),
        attack(
            "core.gitProxy",
            "git config core.gitProxy \"$RUN\"",
            "fetch",
            &["git://example.invalid/x"],
        ),
        attack(
            "http.proxy + core.askPass",
            "git config http.proxy http://u@127.0.0.1:9 && git config core.askPass \"$RUN\"",
            "fetch",
            &["https://127.0.0.1:9/x"],
        ),
        attack(
            "http.proxy + credential.helper",
            "git config http.proxy http://u@127.0.0.1:9 && git config credential.helper \"$RUN\"",
            "fetch",
            &["https://127.0.0.1:9/x"],
        ),
        attack(
            "http.proxy + credential.<url>.helper",
            "git config http.proxy http://u@127.0.0.1:9 && git config credential.http://127.0.0.1:9.helper \"$RUN\"",
            "fetch",
            &["https://127.0.0.1:9/x"],
        ),
        attack(
            "remote.<r>.uploadpack",
            "git init -q --bare other.git && git push -q ./other.git main && git remote add o ./other.git && git config remote.o.uploadpack \"$RUN\"",
            "fetch",
            &["o"],
        ),
        attack(
            "remote.<r>.receivepack",
            "git init -q --bare other.git && git remote add o ./other.git && git config remote.o.receivepack \"$RUN\"",
            "push",
            &["o", "main"],
        ),
        attack(
            "remote.<r>.vcs + protocol.ext.allow",
            "git remote add o \"$RUN\" && git config remote.o.vcs ext && git config protocol.ext.allow always",
            "fetch",
            &["o"],
        ),
        attack(
            "url.<base>.insteadOf",
            "git remote add o ./nowhere && git config url.\"ext::$RUN\".insteadOf ./nowhere && git config protocol.ext.allow always",
            "fetch",
            &["o"],
        ),
        attack(
            "url.<base>.pushInsteadOf",
            "git remote add o ./nowhere && git config url.\"ext::$RUN\".pushInsteadOf ./nowhere && git config protocol.ext.allow always",
            "push",
            &["o", "main"],
        ),
        attack(
            "protocol.ext.allow",
            "git config protocol.ext.allow always",
            "fetch",
            &["ext::$RUN"],
        ),
        attack(
            "core.alternateRefsCommand",
            "git init -q --bare alt.git && git push -q ./alt.git main && echo \"$WS/alt.git/objects\" > .git/objects/info/alternates \
             && git config core.alternateRefsCommand \"$RUN\" && git init -q --bare up.git && git push -q ./up.git main",
            "fetch",
            &["./up.git", "main"],
        ),
        attack(
            "include.path",
            "printf '[core]\\n\\tfsmonitor = %s\\n' \"$RUN\" > inc.cfg && git config include.path \"$WS/inc.cfg\"",
            "status",
            &[],
        ),
        attack(
            "includeIf.gitdir:<dir>.path",
            "printf '[core]\\n\\tfsmonitor = %s\\n' \"$RUN\" > inc.cfg && git config \"includeIf.gitdir:$WS/.path\" \"$WS/inc.cfg\"",
            "status",
            &[],
        ),
        attack(
            "includeIf.onbranch:<b>.path",
            "printf '[core]\\n\\tfsmonitor = %s\\n' \"$RUN\" > inc.cfg && git config includeIf.onbranch:main.path \"$WS/inc.cfg\"",
            "status",
            &[],
        ),
        inert(
            "uploadpack.packObjectsHook (git reads it only from protected config)",
            "git init -q --bare other.git && git push -q ./other.git main && git -C other.git config uploadpack.packObjectsHook \"$RUN\"",
            "fetch",
            &["./other.git", "main"],
        ),
        attack(
            "a pushed-to repository's pre-receive hook",
            "git init -q --bare other.git && printf '#!/bin/sh\\n\"%s\"\\n' \"$RUN\" > other.git/hooks/pre-receive && chmod +x other.git/hooks/pre-receive",
            "push",
            &["./other.git", "main"],
        ),
        attack(
            "a pushed-to repository's core.hooksPath (post-update)",
            "git init -q --bare other.git && mkdir -p hk && printf '#!/bin/sh\\n\"%s\"\\n' \"$RUN\" > hk/post-update && chmod +x hk/post-update \
             && git -C other.git config core.hooksPath \"$WS/hk\" && git remote add o ./other.git",
            "push",
            &["o", "main"],
        ),
        attack(
            "a pushed-to repository's receive.denyCurrentBranch=updateInstead + smudge filter",
            "git init -q -b main nb && git -C nb config receive.denyCurrentBranch updateInstead \
             && git -C nb config filter.x.smudge \"$RUN\" && echo '* filter=x' > nb/.git/info/attributes",
            "push",
            &["./nb", "main"],
        ),
        attack(
            "a fetched-from repository's upload side (alternateRefsCommand of the other end)",
            "git init -q --bare alt.git && git push -q ./alt.git main && git init -q --bare other.git && git push -q ./other.git main \
             && echo \"$WS/alt.git/objects\" > other.git/objects/info/alternates && git -C other.git config core.alternateRefsCommand \"$RUN\" \
             && echo c >> f.txt && git commit -qam c",
            "push",
            &["./other.git", "main"],
        ),
    ])
    .await;
}

#[tokio::test]
async fn nested_repositories_config_is_checked_too() {
    run_attacks(&[
        attack(
            "a nested repository's core.fsmonitor (git status asks it for its status)",
            "git init -q -b main sub && echo s > sub/s.txt && git -C sub add s.txt && git -C sub commit -qm s && git add sub && git commit -qm sub \
             && git -C sub config core.fsmonitor \"$RUN\" && echo t >> sub/s.txt",
            "status",
            &[],
        ),
        attack(
            "a nested repository's filter.<d>.clean + its info/attributes",
            "git init -q -b main sub && echo s > sub/s.txt && git -C sub add s.txt && git -C sub commit -qm s && git add sub && git commit -qm sub \
             && git -C sub config filter.x.clean \"$RUN\" && echo '* filter=x' > sub/.git/info/attributes && touch -d '2001-01-01' sub/s.txt",
            "status",
            &[],
        ),
        attack(
            "fetch.recurseSubmodules + a submodule's remote.<r>.uploadpack",
            "git init -q -b main sub && echo s > sub/s.txt && git -C sub add s.txt && git -C sub commit -qm s && git add sub && git commit -qm sub \
             && git -C sub remote add origin ./nowhere && git -C sub config remote.origin.uploadpack \"$RUN\" \
             && git init -q --bare up.git && git push -q ./up.git main && git remote add up ./up.git && git config fetch.recurseSubmodules true",
            "fetch",
            &["up"],
        ),
    ])
    .await;
}

/// What a call that must not touch anything outside the workspace returned.
fn refused_or_denied(out: &Result<ToolOutput, ToolError>) -> bool {
    matches!(out, Err(e) if matches!(e.kind, ErrorKind::InvalidArguments | ErrorKind::Denied))
}

/// Would the dispatcher deny this call before running it (a planned capability outside the
/// grants)?
async fn dispatcher_denies(ws: &Ws, action: &str, args: &[String]) -> bool {
    let caps = Git.planned_capabilities(&json!({"action": action, "args": args}), &ws.cx());
    for cap in caps {
        if ws.host.check(&cap).await.is_denied() {
            return true;
        }
    }
    false
}

struct Outside {
    what: &'static str,
    setup: &'static str,
    action: &'static str,
    args: &'static [&'static str],
    /// The arguments alone already name the outside path (the dispatcher denies too).
    planned: bool,
}

const fn outside(
    what: &'static str,
    action: &'static str,
    args: &'static [&'static str],
) -> Outside {
    Outside {
        what,
        setup: "true",
        action,
        args,
        planned: false,
    }
}

const fn planned(
    what: &'static str,
    action: &'static str,
    args: &'static [&'static str],
) -> Outside {
    Outside {
        what,
        setup: "true",
        action,
        args,
        planned: true,
    }
}

const fn staged(
    what: &'static str,
    setup: &'static str,
    action: &'static str,
    args: &'static [&'static str],
) -> Outside {
    Outside {
        what,
        setup,
        action,
        args,
        planned: false,
    }
}

async fn run_outside(cases: &[Outside]) {
    if !git_installed() {
        eprintln!("SKIP: git is not installed");
        return;
    }
    let mut failures = Vec::new();
    for c in cases {
        let ws = Ws::new().await;
        ws.sh_ok(c.setup).await;
        let args: Vec<String> = c.args.iter().map(|s| ws.expand(s)).collect();
        let secret_ref =
            std::fs::read_to_string(ws.outside.join("secret.git/packed-refs")).unwrap_or_default();
        let out = ws.git(c.action, &args).await;
        let shown = format!("{out:?}");
        if !refused_or_denied(&out) {
            failures.push(format!("{}: not refused: {shown}", c.what));
        }
        if shown.contains(VICTIM) {
            failures.push(format!(
                "{}: the outside content reached the model: {shown}",
                c.what
            ));
        }
        if !ws.victim_intact() {
            failures.push(format!("{}: the victim file changed", c.what));
        }
        let after =
            std::fs::read_to_string(ws.outside.join("secret.git/packed-refs")).unwrap_or_default();
        if after != secret_ref {
            failures.push(format!("{}: the outside repository changed", c.what));
        }
        for made in ["newdir", "sep", "out.txt"] {
            if ws.outside.join(made).exists() {
                failures.push(format!("{}: {made} was created outside", c.what));
            }
        }
        if c.planned && !dispatcher_denies(&ws, c.action, &args).await {
            failures.push(format!(
                "{}: no planned capability is denied by the grants",
                c.what
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[tokio::test]
async fn global_options_and_program_options_are_refused() {
    run_outside(&[
        outside("-C", "status", &["-C", "$OUT/secret"]),
        outside("-c", "status", &["-c", "core.fsmonitor=$RUN"]),
        outside("-c attached", "log", &["-ccore.pager=$RUN"]),
        outside("--git-dir", "log", &["--git-dir=$OUT/secret.git"]),
        outside("--git-d abbreviation", "log", &["--git-d=$OUT/secret.git"]),
        outside(
            "--git-dir as two words",
            "log",
            &["--git-dir", "$OUT/secret.git"],
        ),
        outside("--work-tree", "status", &["--work-tree=$OUT"]),
        outside("--exec-path", "status", &["--exec-path=$WS/bin"]),
        outside("--config-env", "status", &["--config-env=core.pager=RUN"]),
        outside("--upload-pack", "fetch", &["--upload-pack=$RUN", "./x"]),
        outside(
            "--receive-pack abbreviation",
            "push",
            &["--receive-p=$RUN", "./x"],
        ),
        outside("--exec", "push", &["--exec=$RUN", "./x"]),
        outside("rebase --exec", "rebase", &["--exec", "$RUN", "HEAD"]),
        outside("rebase -x in a cluster", "rebase", &["-ix", "$RUN", "HEAD"]),
        outside("--ext-diff", "diff", &["--ext-diff"]),
        outside("--textconv", "log", &["--textconv", "-p"]),
        outside("--help", "status", &["--help"]),
        outside(
            "--recurse-submodules",
            "checkout",
            &["--recurse-submodules", "main"],
        ),
        outside("a custom merge strategy", "merge", &["-s", "evil", "main"]),
        outside("ext:: transport", "fetch", &["ext::$RUN"]),
        outside("fd:: transport", "fetch", &["fd::3"]),
        outside("a remote helper", "fetch", &["evil::x"]),
        outside(
            "git:// (core.gitProxy)",
            "fetch",
            &["git://example.invalid/x"],
        ),
        outside("init --template", "init", &["--template=$OUT", "sub"]),
        outside("--output", "diff", &["--output=$OUT/out.txt"]),
        outside("--outp abbreviation", "log", &["--outp=$OUT/out.txt"]),
    ])
    .await;
}

#[tokio::test]
async fn arguments_naming_files_outside_are_denied() {
    run_outside(&[
        outside(
            "diff --no-index",
            "diff",
            &["--no-index", "$OUT/victim.txt", "f.txt"],
        ),
        outside(
            "--no-ind abbreviation",
            "diff",
            &["--no-ind", "$OUT/victim.txt", "f.txt"],
        ),
        planned(
            "diff with an outside path (implicit --no-index)",
            "diff",
            &["$OUT/victim.txt", "f.txt"],
        ),
        planned(
            "diff -- outside",
            "diff",
            &["--", "$OUT/victim.txt", "f.txt"],
        ),
        planned(
            "blame --contents",
            "blame",
            &["--contents", "$OUT/victim.txt", "f.txt"],
        ),
        planned("blame -S", "blame", &["-S", "$OUT/victim.txt", "f.txt"]),
        planned(
            "blame --ignore-revs-file",
            "blame",
            &["--ignore-revs-file=$OUT/victim.txt", "f.txt"],
        ),
        planned(
            "commit -F",
            "commit",
            &["--allow-empty", "-F", "$OUT/victim.txt"],
        ),
        planned(
            "commit -F attached in a cluster",
            "commit",
            &["--allow-empty", "-qF$OUT/victim.txt"],
        ),
        planned(
            "commit --file",
            "commit",
            &["--allow-empty", "--file=$OUT/victim.txt"],
        ),
        planned(
            "commit --fil abbreviation",
            "commit",
            &["--allow-empty", "--fil", "$OUT/victim.txt"],
        ),
        planned(
            "commit -t",
            "commit",
            &["--allow-empty", "-t", "$OUT/victim.txt"],
        ),
        planned(
            "commit --template",
            "commit",
            &["--allow-empty", "--template=$OUT/victim.txt"],
        ),
        planned("tag -F", "tag", &["-a", "-F", "$OUT/victim.txt", "v1"]),
        planned("merge -F", "merge", &["-F", "$OUT/victim.txt", "main"]),
        planned(
            "add --pathspec-from-file",
            "add",
            &["--pathspec-from-file=$OUT/victim.txt"],
        ),
        planned(
            "add --pathspec-from abbreviation",
            "add",
            &["--pathspec-from=$OUT/victim.txt"],
        ),
        planned(
            "checkout --pathspec-from-file",
            "checkout",
            &["--pathspec-from-file", "$OUT/victim.txt"],
        ),
        planned(
            "restore --pathspec-from-file",
            "restore",
            &["--pathspec-from-file=$OUT/victim.txt"],
        ),
        planned(
            "reset --pathspec-from-file",
            "reset",
            &["--pathspec-from-file=$OUT/victim.txt"],
        ),
        planned(
            "rm --pathspec-from-file",
            "rm",
            &["--pathspec-from-file=$OUT/victim.txt"],
        ),
        planned(
            "stash push --pathspec-from-file",
            "stash",
            &["push", "--pathspec-from-file=$OUT/victim.txt"],
        ),
        planned("ls-files -X", "ls-files", &["-o", "-X", "$OUT/victim.txt"]),
        planned(
            "ls-files --exclude-from",
            "ls-files",
            &["--exclude-from=$OUT/victim.txt"],
        ),
        outside(
            "ls-files --exclude-per-directory",
            "ls-files",
            &["--exclude-per-directory=../../victim.txt"],
        ),
        planned(
            "rev-parse --resolve-git-dir",
            "rev-parse",
            &["--resolve-git-dir", "$OUT/secret.git"],
        ),
        planned("init in an outside directory", "init", &["$OUT/newdir"]),
        planned(
            "init --separate-git-dir",
            "init",
            &["--separate-git-dir=$OUT/sep"],
        ),
        planned("diff -O", "diff", &["-O$OUT/victim.txt"]),
    ])
    .await;
}

#[tokio::test]
async fn repositories_outside_the_workspace_are_denied() {
    run_outside(&[
        planned("fetch from a path", "fetch", &["$OUT/secret.git", "main"]),
        planned("fetch from a file:// URL", "fetch", &["file://$OUT/secret.git", "main"]),
        planned("fetch from a percent-encoded file:// URL", "fetch", &["file://$OUT/secret%2egit", "main"]),
        planned("fetch with a relative path", "fetch", &["../../../../../../../../../$OUT/secret.git", "main"]),
        planned("pull from a path", "pull", &["$OUT/secret.git", "main"]),
        planned("push to a path", "push", &["$OUT/secret.git", "main:refs/heads/evil"]),
        planned("push --repo", "push", &["--repo=$OUT/secret.git", "main:refs/heads/evil"]),
        planned("remote add", "remote", &["add", "x", "$OUT/secret.git"]),
        planned("remote set-url", "remote", &["set-url", "origin", "$OUT/secret.git"]),
        outside("fetch ~user/", "fetch", &["~root/x"]),
        staged(
            "a configured remote outside",
            "git remote add x \"$OUT/secret.git\"",
            "fetch",
            &["x"],
        ),
        staged(
            "the default remote outside",
            "git remote add origin \"$OUT/secret.git\"",
            "pull",
            &[],
        ),
        staged(
            "a push URL outside",
            "git remote add x ./ok.git && git config remote.x.pushurl \"$OUT/secret.git\"",
            "push",
            &["x", "main:refs/heads/evil"],
        ),
        staged(
            "a symbolic link to an outside repository",
            "ln -s \"$OUT/secret.git\" link",
            "fetch",
            &["./link", "main"],
        ),
        staged(
            "NAME.git next to a missing NAME",
            "ln -s \"$OUT/secret.git\" x.git",
            "fetch",
            &["./x", "main"],
        ),
        staged(
            "a repository in the workspace whose .git points outside",
            "mkdir evil && echo \"gitdir: $OUT/secret/.git\" > evil/.git",
            "fetch",
            &["./evil", "main"],
        ),
        staged(
            "a repository in the workspace borrowing outside objects",
            "git init -q --bare evil.git && echo \"$OUT/secret.git/objects\" > evil.git/objects/info/alternates",
            "fetch",
            &["./evil.git", "main"],
        ),
        staged(
            "a legacy .git/remotes file",
            "mkdir -p .git/remotes && printf 'URL: %s\\nPull: refs/heads/main:refs/heads/evil\\n' \"$OUT/secret.git\" > .git/remotes/legacy",
            "fetch",
            &["legacy"],
        ),
        staged(
            "url.insteadOf rewriting to an outside path",
            "git remote add x ./ok.git && git config url.\"$OUT/secret.git\".insteadOf ./ok.git",
            "fetch",
            &["x"],
        ),
    ])
    .await;
}

#[tokio::test]
async fn the_repository_itself_cannot_point_outside() {
    run_outside(&[
        staged(
            "core.worktree outside",
            "git config core.worktree \"$OUT\"",
            "add",
            &["victim.txt"],
        ),
        staged(
            "a .git file pointing outside",
            "rm -rf .git && echo \"gitdir: $OUT/secret/.git\" > .git",
            "log",
            &["-p"],
        ),
        staged(
            "a .git symbolic link to an outside repository",
            "rm -rf .git && ln -s \"$OUT/secret/.git\" .git",
            "log",
            &["-p"],
        ),
        staged(
            "an objects directory linked outside",
            "rm -rf .git/objects && ln -s \"$OUT/secret.git/objects\" .git/objects",
            "rev-parse",
            &["--disambiguate=0"],
        ),
        staged(
            "a commondir pointing outside",
            "echo \"$OUT/secret/.git\" > .git/commondir",
            "log",
            &["-p", "main"],
        ),
        staged(
            "alternates borrowing outside objects",
            "echo \"$OUT/secret.git/objects\" > .git/objects/info/alternates",
            "rev-parse",
            &["--disambiguate=0"],
        ),
        staged(
            "a relative alternate climbing out",
            "echo \"../../../../../../../../../../$OUT/secret.git/objects\" > .git/objects/info/alternates",
            "log",
            &["--all"],
        ),
        staged(
            "blame.ignoreRevsFile outside",
            "git config blame.ignoreRevsFile \"$OUT/victim.txt\"",
            "blame",
            &["f.txt"],
        ),
        staged(
            "fetch.fsck.skipList outside",
            "git config fetch.fsckObjects true && git config fetch.fsck.skipList \"$OUT/victim.txt\" && git init -q --bare up.git",
            "fetch",
            &["./up.git"],
        ),
    ])
    .await;
}

/// Keys naming a message file git would copy into the history are neutralised: git runs,
/// and the outside file's content does not reach the repository. The file is inside the
/// workspace here, so that only the neutral value (not the sandbox) keeps it out.
#[tokio::test]
async fn message_files_named_in_config_never_reach_the_history() {
    if !git_installed() {
        eprintln!("SKIP: git is not installed");
        return;
    }
    let ws = Ws::new().await;
    ws.sh_ok(
        "printf '%s\\n' \"$SECRET\" > msg.txt && echo msg.txt >> .git/info/exclude \
         && git config branch.main.mergeOptions \"-F $WS/msg.txt\" && git checkout -qb side && git commit -q --allow-empty -m s \
         && git checkout -q main && git commit -q --allow-empty -m m",
    )
    .await;
    // The control: plain git copies the file into the merge commit.
    let plain = ws
        .sh("git merge -q --no-edit side && git log -1 --format=%B && git reset -q --hard HEAD~1")
        .await;
    assert!(plain.stdout.contains(VICTIM), "{}", plain.stdout);
    let out = ws.git("merge", &["--no-edit".into(), "side".into()]).await;
    assert!(out.as_ref().is_ok_and(|o| !o.is_error), "{out:?}");
    let log = ws.sh("git log -1 --format=%B").await;
    assert!(!log.stdout.contains(VICTIM), "{}", log.stdout);
    assert!(log.stdout.contains("Merge branch 'side'"), "{}", log.stdout);

    let ws = Ws::new().await;
    ws.sh_ok(
        "printf '%s\\n' \"$SECRET\" > tpl.txt && echo tpl.txt >> .git/info/exclude \
         && git config commit.template \"$WS/tpl.txt\" && git config core.editor true && echo b >> f.txt",
    )
    .await;
    // `verbatim` keeps git from refusing a message left as the template.
    let plain = ws
        .sh("git commit -qa --cleanup=verbatim && git log -1 --format=%B && git reset -q HEAD~1")
        .await;
    assert!(plain.stdout.contains(VICTIM), "{}", plain.stdout);
    let out = ws
        .git("commit", &["-a".into(), "--cleanup=verbatim".into()])
        .await;
    assert!(!format!("{out:?}").contains(VICTIM), "{out:?}");
    let log = ws.sh("git log -1 --format=%B").await;
    assert!(!log.stdout.contains(VICTIM), "{}", log.stdout);
}

/// Everyday use keeps working: a repository, commits, history, branches, stash, and
/// fetching and pushing between two repositories inside the workspace.
#[tokio::test]
async fn everyday_git_keeps_working() {
    if !git_installed() {
        eprintln!("SKIP: git is not installed");
        return;
    }
    let ws = Ws::new().await;
    let s = |v: &[&str]| -> Vec<String> { v.iter().map(|a| a.to_string()).collect() };
    let ok = |out: Result<ToolOutput, ToolError>, what: &str| -> String {
        match out {
            Ok(o) if !o.is_error => o.content,
            other => panic!("{what}: {other:?}"),
        }
    };
    // A second, fresh repository made by the tool.
    ok(
        ws.git("init", &s(&["-q", "--bare", "-b", "main", "remote.git"]))
            .await,
        "init --bare",
    );
    ok(ws.git("init", &s(&["-q", "scratch"])).await, "init DIR");
    std::fs::write(ws.root.join("g.txt"), "hello\n").expect("write");
    ok(ws.git("add", &s(&["g.txt"])).await, "add");
    ok(ws.git("commit", &s(&["-m", "Add g"])).await, "commit");
    let log = ok(ws.git("log", &s(&["--oneline"])).await, "log");
    assert!(log.contains("Add g") && log.contains("init"), "{log}");
    std::fs::write(ws.root.join("g.txt"), "hello world\n").expect("write");
    let diff = ok(ws.git("diff", &[]).await, "diff");
    assert!(diff.contains("+hello world"), "{diff}");
    let status = ok(ws.git("status", &s(&["--short"])).await, "status");
    assert!(status.contains("M g.txt"), "{status}");
    ok(ws.git("stash", &[]).await, "stash");
    let status = ok(
        ws.git("status", &s(&["--short"])).await,
        "status after stash",
    );
    assert!(!status.contains("g.txt"), "{status}");
    ok(ws.git("stash", &s(&["pop"])).await, "stash pop");
    ok(
        ws.git("commit", &s(&["-am", "Greet the world"])).await,
        "commit -a",
    );
    ok(ws.git("branch", &s(&["topic"])).await, "branch");
    ok(ws.git("checkout", &s(&["topic"])).await, "checkout");
    let branch = ok(ws.git("branch", &[]).await, "branch list");
    assert!(branch.contains("* topic"), "{branch}");
    ok(ws.git("switch", &s(&["main"])).await, "switch");
    let show = ok(ws.git("show", &s(&["--stat"])).await, "show");
    assert!(show.contains("Greet the world"), "{show}");
    let blame = ok(ws.git("blame", &s(&["g.txt"])).await, "blame");
    assert!(blame.contains("hello world"), "{blame}");
    // Push to and fetch from a repository inside the workspace.
    ok(
        ws.git("remote", &s(&["add", "origin", "./remote.git"]))
            .await,
        "remote add",
    );
    ok(ws.git("push", &s(&["-u", "origin", "main"])).await, "push");
    let refs = ws.sh("git -C remote.git log --oneline main").await;
    assert!(refs.stdout.contains("Greet the world"), "{}", refs.stdout);
    ok(ws.git("fetch", &s(&["origin"])).await, "fetch");
    ok(ws.git("pull", &s(&["--ff-only"])).await, "pull");
    ok(
        ws.git("fetch", &s(&["./remote.git", "main"])).await,
        "fetch from a path",
    );
    let tracking = ok(ws.git("status", &s(&["-sb"])).await, "status -sb");
    assert!(tracking.contains("origin/main"), "{tracking}");
    // A nested repository (a submodule-like gitlink) does not stop status.
    ws.sh_ok("git init -q -b main sub && echo s > sub/s.txt && git -C sub add s.txt && git -C sub commit -qm s")
        .await;
    ok(ws.git("add", &s(&["sub"])).await, "add nested repository");
    ok(
        ws.git("status", &[]).await,
        "status with a nested repository",
    );
    assert!(!ws.marked());
    // Everything these calls plan is allowed by the default grants, so the dispatcher's
    // check before the call does not get in the way.
    for (action, args) in [
        ("status", s(&[])),
        ("commit", s(&["-m", "x", "-F", "msg.txt"])),
        ("diff", s(&["HEAD~1", "--", "g.txt"])),
        ("fetch", s(&["./remote.git", "main"])),
        ("push", s(&["origin", "main"])),
    ] {
        let caps = Git.planned_capabilities(&json!({"action": action, "args": args}), &ws.cx());
        for cap in caps {
            let d = ws.host.check(&cap).await;
            assert!(d.is_allowed(), "{action}: {} {}", cap.summary(), d.why);
        }
    }
}

#[tokio::test]
async fn a_denied_plan_names_the_outside_path() {
    if !git_installed() {
        return;
    }
    let ws = Ws::new().await;
    let victim = ws.outside.join("victim.txt");
    let args = vec!["-F".to_string(), victim.display().to_string()];
    let caps = Git.planned_capabilities(&json!({"action": "commit", "args": args}), &ws.cx());
    assert!(caps.contains(&Capability::FileRead {
        path: victim.clone()
    }));
    let err = ws.git("commit", &args).await.err();
    assert_eq!(err.as_ref().map(|e| e.kind), Some(ErrorKind::Denied));
    let message = err.map(|e| e.message).unwrap_or_default();
    assert!(message.contains(&victim.display().to_string()), "{message}");
}
