//! Races on files, through the real binary: edits in one model turn run concurrently, and
//! none of them may be lost; a path swapped for a link mid-walk never shows what is outside.

mod common;

use common::{run, FakeLlm, Sandbox};

const WORDS: [&str; 6] = ["one", "two", "three", "four", "five", "six"];

#[test]
fn six_concurrent_edits_of_one_file_all_land() {
    let mut rules = String::from(concat!(
        "rules:\n",
        "  - name: answer\n    when: {tool_result_contains: \"notes.txt\"}\n    respond: {content: \"edited\"}\n",
        "  - name: edit\n    when: {messages_contain: \"six edits\"}\n    respond:\n      tool_calls:\n",
    ));
    for w in WORDS {
        rules.push_str(&format!(
            "        - {{name: edit_file, arguments: {{path: notes.txt, old_text: \"{w}\\n\", new_text: \"{}\\n\"}}}}\n",
            w.to_uppercase()
        ));
    }
    let Some(llm) = FakeLlm::start(&rules) else {
        return;
    };
    for round in 0..3 {
        let sb = Sandbox::new();
        let original: String = WORDS.iter().map(|w| format!("{w}\n")).collect();
        std::fs::write(sb.workspace().join("notes.txt"), &original).unwrap();
        let config = sb.config(&llm.backend_yaml("openai", true));
        let r = run(sb.tackle(
            &config,
            &["run", "-m", &format!("six edits {round}"), "--yes"],
        ));
        assert_eq!(r.code, 0, "{r}");
        let now = std::fs::read_to_string(sb.workspace().join("notes.txt")).unwrap();
        let expected: String = WORDS
            .iter()
            .map(|w| format!("{}\n", w.to_uppercase()))
            .collect();
        assert_eq!(now, expected, "round {round}: an edit was lost\n{r}");
        assert_eq!(r.stderr.matches("✓ edit_file").count(), 6, "{r}");
    }
}

const MARK: &str = "OUTSIDE-SECRET-e2e-51c";

/// Exchanges `a` and `b` with renameat2(RENAME_EXCHANGE) until its stdin closes.
const SWAPPER: &str = r#"
import ctypes, os, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
a, b = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2])
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
print("ready", flush=True)
while not stop.is_set():
    libc.renameat2(-100, a, -100, b, 2)
"#;

#[test]
fn a_directory_swapped_with_an_outside_link_never_shows_outside_through_the_binary() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let sb = Sandbox::new();
    let ws = sb.workspace();
    let out = sb.dir.path().join("outside");
    std::fs::create_dir_all(ws.join("d")).unwrap();
    std::fs::write(ws.join("d/notes.txt"), "inside\n").unwrap();
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("notes.txt"), format!("{MARK}\n")).unwrap();
    std::fs::write(out.join(format!("{MARK}.txt")), "x\n").unwrap();
    std::os::unix::fs::symlink(&out, ws.join("s")).unwrap();
    let Ok(mut swapper) = Command::new("python3")
        .arg("-c")
        .arg(SWAPPER)
        .arg(ws.join("d"))
        .arg(ws.join("s"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    else {
        eprintln!("SKIP: python3 is not available to drive the race");
        return;
    };
    let mut ready = String::new();
    let stdout = swapper.stdout.take().expect("stdout");
    BufReader::new(stdout).read_line(&mut ready).unwrap();
    assert_eq!(ready.trim(), "ready");
    let config = sb.config("");
    let calls = [
        ("read_file", r#"{"path":"d/notes.txt"}"#),
        ("list_files", r#"{"path":"d"}"#),
        // The pattern matches the mark without spelling it, so an echo of it is no leak.
        (
            "grep",
            r#"{"pattern":"OUTSIDE.SECRET.e2e.5[0-9]c","path":"."}"#,
        ),
        ("find", r#"{"pattern":"*SECRET*"}"#),
    ];
    // At least 4 s of racing and at least 16 calls, however slow a loaded machine starts
    // each process: the race must be tried often enough to mean something.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(4);
    let (mut n, mut leaks) = (0, Vec::new());
    while std::time::Instant::now() < deadline || n < 16 {
        for (tool, args) in &calls {
            let r = run(sb.tackle(&config, &["tools", "call", tool, args, "--json"]));
            n += 1;
            if r.stdout.contains(MARK) {
                leaks.push(format!("{tool} {args}: {}", r.stdout));
            }
        }
    }
    drop(swapper.stdin.take());
    let _ = swapper.wait();
    assert!(
        leaks.is_empty(),
        "{} leaks in {n} calls: {:?}",
        leaks.len(),
        leaks.first()
    );
}
