//! `tackle chat` says what `tackle run` says: an empty answer is named, and a session id
//! that is not found gets the one "did you mean" wording.

mod common;

use common::{FakeLlm, Run, Sandbox};
use std::io::Write;
use std::process::{Command, Stdio};

fn with_stdin(mut cmd: Command, input: &str) -> Run {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = std::time::Instant::now();
    let mut child = cmd.spawn().expect("spawn tackle");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input.as_bytes());
    }
    let out = child.wait_with_output().expect("wait for tackle");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

#[test]
fn chat_says_when_the_models_answer_was_empty_and_suggests_sessions_in_one_wording() {
    let Some(llm) = FakeLlm::start(concat!(
        "rules:\n",
        "  - name: empty\n    when: {messages_contain: \"say nothing\"}\n    respond: {content: \"\"}\n",
        "  - name: hello\n    respond: {content: \"hello there\"}\n",
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let config = sb.config(&llm.backend_yaml("openai", true));
    let r = with_stdin(
        sb.tackle(&config, &["chat", "--session", "project-alpha"]),
        "say nothing\n/quit\n",
    );
    assert_eq!(r.code, 6, "no such session yet: {r}");
    let r = with_stdin(
        sb.tackle(&config, &["chat", "--session", "project-alpha", "--new"]),
        "say nothing\n/quit\n",
    );
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("(the model's answer was empty)"), "{r}");

    let r = with_stdin(
        sb.tackle(&config, &["chat", "--session", "project-alpa"]),
        "/quit\n",
    );
    assert_eq!(r.code, 6, "{r}");
    assert!(
        r.stderr
            .contains("no session `project-alpa`; did you mean project-alpha?"),
        "{r}"
    );
}
