//! `tackle config show | path`: the configuration in effect (after `${VAR}` and `TACKLE_*`,
//! with every secret value redacted) and the file it is read from.

use crate::app::load_config;
use crate::cli::{ConfigCommand, Global};
use crate::exit;
use anyhow::Result;
use serde_json::Value;

pub fn run(global: &Global, cmd: ConfigCommand) -> Result<i32> {
    match cmd {
        ConfigCommand::Path => path(global),
        ConfigCommand::Show { json } => show(global, json),
    }
}

fn path(global: &Global) -> Result<i32> {
    let env = |k: &str| std::env::var(k).ok();
    match crate::config::locate(global.config.as_deref(), &env) {
        Some((path, _)) => {
            outln!("{}", path.display())?;
            if !path.exists() {
                eprintln!("(no file there yet: `tackle init` writes a starter config)");
            }
            Ok(exit::OK)
        }
        None => {
            eprintln!(
                "error: no config path: neither $XDG_CONFIG_HOME nor $HOME is an absolute path; pass --config FILE"
            );
            Ok(exit::USAGE)
        }
    }
}

fn show(global: &Global, json: bool) -> Result<i32> {
    let loaded = load_config(global)?;
    // Found by type, with the values interpolated into them (`config::secrets`).
    let secrets: Vec<String> = loaded
        .secrets
        .iter()
        .map(|s| s.expose().to_string())
        .filter(|v| !v.trim().is_empty())
        .collect();
    let mut tree = serde_json::to_value(&loaded.config)?;
    redact(&mut tree, &secrets);
    drop_unset(&mut tree);
    if json {
        outln!("{}", serde_json::to_string_pretty(&tree)?)?;
        return Ok(exit::OK);
    }
    let source = loaded
        .source
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "built-in defaults (no config file)".into());
    outln!("# in effect: {source}, with ${{VAR}} and TACKLE_* applied; secrets redacted")?;
    out_yaml(&tree)?;
    Ok(exit::OK)
}

fn out_yaml(tree: &Value) -> Result<()> {
    let text = serde_saphyr::to_string(tree)?;
    write!(exit::stdout(), "{text}")?;
    if !text.ends_with('\n') {
        outln!()?;
    }
    Ok(())
}

/// Keys left unset (`null`) say nothing a reader can use; they are left out.
fn drop_unset(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(drop_unset);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_unset),
        _ => {}
    }
}

/// Every string holding one of `secrets` becomes `[redacted secret]` (the whole string: a
/// header like `Bearer …` says nothing without its token).
fn redact(value: &mut Value, secrets: &[String]) {
    match value {
        Value::String(s) if secrets.iter().any(|x| s.contains(x.as_str())) => {
            *s = "[redacted secret]".to_string();
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact(v, secrets)),
        Value::Object(map) => map.values_mut().for_each(|v| redact(v, secrets)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_holding_a_secret_are_replaced_whole() {
        let mut v = serde_json::json!({"a": "Bearer tok-123456", "b": ["x", "tok-123456"], "c": 1});
        redact(&mut v, &["tok-123456".to_string()]);
        assert_eq!(
            v,
            serde_json::json!({"a": "[redacted secret]", "b": ["x", "[redacted secret]"], "c": 1})
        );
    }
}
