//! The repository explains itself: every test file, source file and decision that
//! docs/SECURITY.md names as the proof of a guarantee exists (a renamed or deleted test makes
//! this fail, so the table cannot silently point at nothing), and no file of the repository
//! refers to a document that is not in it.

use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `a/{b,c}.rs` as `a/b.rs`, `a/c.rs`; a path without braces as itself.
fn expand(path: &str) -> Vec<String> {
    let (Some(open), Some(close)) = (path.find('{'), path.find('}')) else {
        return vec![path.to_string()];
    };
    let (Some(head), Some(inner), Some(tail)) = (
        path.get(..open),
        path.get(open + 1..close),
        path.get(close + 1..),
    ) else {
        return vec![path.to_string()];
    };
    inner
        .split(',')
        .flat_map(|part| expand(&format!("{head}{part}{tail}")))
        .collect()
}

#[test]
fn every_proof_security_md_names_exists() {
    let text = std::fs::read_to_string(root().join("docs/SECURITY.md")).expect("docs/SECURITY.md");
    let mut named = Vec::new();
    for (i, quoted) in text.split('`').enumerate() {
        // The odd pieces are inside backticks.
        if i % 2 == 1 && (quoted.starts_with("tests/") || quoted.starts_with("crates/")) {
            named.extend(expand(quoted));
        }
    }
    for piece in text.split("docs/decisions/").skip(1) {
        let number: String = piece.chars().take_while(char::is_ascii_digit).collect();
        if number.len() == 4 {
            named.push(format!("docs/decisions/{number}"));
        }
    }
    assert!(named.len() > 30, "too few references found: {named:?}");
    let decisions: Vec<String> = std::fs::read_dir(root().join("docs/decisions"))
        .expect("docs/decisions")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    let missing: Vec<&String> = named
        .iter()
        .filter(|p| match p.strip_prefix("docs/decisions/") {
            Some(n) => !decisions.iter().any(|d| d.starts_with(n)),
            None => !root().join(p).exists(),
        })
        .collect();
    assert!(
        missing.is_empty(),
        "docs/SECURITY.md names what is not there: {missing:?}"
    );
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') && name != ".ci"
            || ["target", "node_modules", "venv", "venv-api"].contains(&name.as_ref())
        {
            continue;
        }
        if path.is_dir() {
            files(&path, out);
        } else if ["rs", "md", "sh", "yaml", "yml", "toml", "py", "js"]
            .iter()
            .any(|ext| path.extension().is_some_and(|e| e == *ext))
        {
            out.push(path);
        }
    }
}

#[test]
fn no_file_refers_to_a_document_outside_the_repository() {
    let mut all = Vec::new();
    files(root(), &mut all);
    assert!(all.len() > 100, "the walk found too few files");
    // Built from parts, so this file does not name them itself.
    let outside: Vec<String> = ["SPEC", "ARCHITECTURE", "TOOLS", "STYLE"]
        .iter()
        .map(|n| format!("{n}.md"))
        .chain([format!("..{}shared", '/')])
        .collect();
    let mut found = Vec::new();
    for file in &all {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            for name in &outside {
                // A name counts as outside unless the repository holds it, at its root or in
                // docs/ (any mention, with or without a directory in front).
                if line.contains(name.as_str())
                    && !root().join(name).exists()
                    && !root().join("docs").join(name).exists()
                {
                    found.push(format!("{}:{}: {name}", file.display(), n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "references to documents outside the repository: {found:#?}"
    );
}
