//! `tackle init [--force]`: a minimal starter config at the path Tackle reads (`--config`,
//! `$TACKLE_CONFIG`, else `~/.config/tackle/config.yaml`), never over an existing file unless
//! asked; then what to do next.

use crate::cli::{Global, InitArgs};
use crate::exit;
use anyhow::{Context, Result};
use std::io::Write as _;
use std::path::Path;

/// Loads clean on a fresh machine: every optional part is a comment to uncomment.
pub const STARTER: &str = r#"# Tackle configuration, written by `tackle init`. Every key, with comments:
# config.example.yaml in Tackle's repository; what is in effect: `tackle config show`.

# Without `backends:`, `tackle run` finds a model on its own: OPENAI_API_KEY,
# ANTHROPIC_API_KEY or OPENROUTER_API_KEY in the environment, else Ollama (127.0.0.1:11434)
# or llama.cpp (127.0.0.1:8080). `tackle doctor` says which it found. To name one, uncomment:
# backends:
#   - name: local
#     type: openai                      # any OpenAI-compatible server (Ollama, llama.cpp, vLLM, OpenAI)
#     api_base: http://127.0.0.1:11434/v1
#     models:
#       - name: qwen2.5:7b
#   - name: claude
#     type: anthropic
#     api_key: "${ANTHROPIC_API_KEY}"   # read from the environment; never written here
#     models:
#       - name: claude-sonnet-4-5

security:
  sandbox: best_effort                  # required: refuse to run commands without the namespace sandbox
"#;

pub fn run(global: &Global, args: InitArgs) -> Result<i32> {
    let env = |k: &str| std::env::var(k).ok();
    let Some((path, _)) = crate::config::locate(global.config.as_deref(), &env) else {
        eprintln!(
            "error: no place for a config file: neither $XDG_CONFIG_HOME nor $HOME is an absolute path; pass --config FILE"
        );
        return Ok(exit::USAGE);
    };
    if path.exists() && !args.force {
        eprintln!(
            "error: {} already exists; it is left as it is (pass --force to replace it with the starter config)",
            path.display()
        );
        return Ok(exit::FAILED);
    }
    write_private(&path, STARTER)?;
    outln!("wrote {}", path.display())?;
    outln!("next:")?;
    let steps = [
        (
            "a model",
            "export OPENAI_API_KEY=… (or ANTHROPIC_API_KEY, OPENROUTER_API_KEY), start Ollama, or uncomment `backends:` in it",
        ),
        ("tackle doctor", "which model it would use, what the sandbox enforces"),
        ("tackle run -m \"list the files here\"", "a first task, in the current directory"),
        ("tackle config show", "the whole configuration in effect"),
    ];
    for (i, (what, why)) in steps.iter().enumerate() {
        outln!("  {}. {what:<36} {why}", i + 1)?;
    }
    Ok(exit::OK)
}

/// The file and its directory readable by the owner only: a config may come to hold keys.
fn write_private(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
