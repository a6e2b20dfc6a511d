//! The capability boundary, checked on the source: only the crates docs/architecture.md allows may
//! name the APIs that touch files, processes and sockets. Tools ask the host; they never do I/O.

use std::path::{Path, PathBuf};

/// The APIs that do I/O on the tools' behalf.
const FORBIDDEN: &[&str] = &[
    "std::fs",
    "std::process",
    "tokio::process",
    "tokio::fs",
    "reqwest",
    "serialport",
];

/// Where they may appear, and why.
const ALLOWED: &[(&str, &str)] = &[
    (
        "crates/tackle-host/",
        "the host enforces grants; it is the one place tools' I/O happens",
    ),
    ("crates/tackle-store/", "the store owns its SQLite file"),
    (
        "crates/tackle-llm/",
        "providers own their HTTP connections to operator-configured backends",
    ),
    (
        "crates/tackle-mcp/src/wire/",
        "MCP transports start operator-configured servers and speak to operator-configured URLs",
    ),
    (
        "crates/tackle-tools/src/media/multipart.rs",
        "reqwest's multipart encoder only builds a request body in memory; the host sends it",
    ),
    (
        "crates/tackle-tools/src/devices/hardware/port.rs",
        "serial ports are devices, not workspace files: the hardware tool opens only enumerated board ports or operator-named ones (docs/decisions/0021)",
    ),
    (
        "src/",
        "the binary loads its config file and keeps front-end state (chat history)",
    ),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The lines of a source file up to its `#[cfg(test)] mod tests` (unit tests set up fixtures
/// on disk, as integration tests do; they are not the library).
fn library_lines(text: &str) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        if line.trim() == "#[cfg(test)]"
            && lines
                .get(n + 1)
                .is_some_and(|next| next.trim_start().starts_with("mod tests"))
        {
            break;
        }
        out.push((n, *line));
    }
    out
}

/// `tests.rs` declared by its sibling `mod.rs` as `#[cfg(test)] mod tests;`.
fn is_unit_test_file(file: &Path) -> bool {
    if file.file_name().is_none_or(|n| n != "tests.rs") {
        return false;
    }
    let parent = std::fs::read_to_string(file.with_file_name("mod.rs")).unwrap_or_default();
    parent.contains("#[cfg(test)]\nmod tests;")
}

#[test]
fn io_apis_appear_only_in_the_crates_allowed_to_do_io() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    rust_files(&root.join("src"), &mut files);
    let mut violations = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(root)
            .unwrap_or(file)
            .to_string_lossy()
            .replace('\\', "/");
        // Library sources only: integration tests and benches set up fixtures on disk.
        if !(rel.starts_with("src/") || rel.contains("/src/")) {
            continue;
        }
        if ALLOWED.iter().any(|(prefix, _)| rel.starts_with(prefix)) {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if is_unit_test_file(file) {
            continue;
        }
        for (n, line) in library_lines(&text) {
            let code = line.split("//").next().unwrap_or("");
            for api in FORBIDDEN {
                if code.contains(api) {
                    violations.push(format!("{rel}:{}: uses `{api}`", n + 1));
                }
            }
        }
    }
    assert!(
        files.len() > 20,
        "the scan found too few files; is the layout as expected?"
    );
    assert!(
        violations.is_empty(),
        "I/O outside the allowed crates (ask `cx.host()` instead):\n{}",
        violations.join("\n")
    );
}
