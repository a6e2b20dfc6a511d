//! `project {action: scaffold, template, target, name?}`: copy a template directory of the
//! workspace into a new directory of the workspace, through the host's list/read/write.
//!
//! Both paths must be workspace-relative and stay inside the workspace once links are resolved.
//! A link in the template is followed only when it lands inside the template itself: a template
//! that links to `~/.ssh/id_rsa` (or to anything else the grants may let the agent read) must
//! not turn into a readable copy of it. Everything is read and checked before the first write,
//! so a refused template leaves no half-made project behind.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};
use tackle_protocol::text::preview;
use tackle_protocol::{
    ErrorKind, HostError, ListRequest, ReadRequest, ToolContext, ToolError, WriteRequest,
};

/// Most files one template may hold.
pub(crate) const MAX_FILES: usize = 200;
/// Largest single template file.
pub(crate) const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Most bytes one scaffold may write in all.
pub(crate) const MAX_TOTAL_BYTES: u64 = 8 * 1024 * 1024;
/// Files and directories listed; a template at this count is refused rather than cut short.
const MAX_ENTRIES: usize = 1_000;
/// The placeholder replaced by `name` in file contents and path components.
const PLACEHOLDER: &str = "{{name}}";

/// One file to create: where, and what.
struct Planned {
    rel: PathBuf,
    data: Vec<u8>,
}

/// Copy `template` to `target` (both workspace-relative) and name the files created.
pub(crate) async fn scaffold(
    cx: &ToolContext,
    template: &str,
    target: &str,
    name: Option<&str>,
) -> Result<String, ToolError> {
    if let Some(n) = name {
        valid_name(n)?;
    }
    let template_dir = inside_workspace(cx, "template", template)?;
    let target_dir = inside_workspace(cx, "target", target)?;
    if target_dir.starts_with(&template_dir) || template_dir.starts_with(&target_dir) {
        return Err(ToolError::invalid_arguments(
            "`target` and `template` must not contain one another",
        ));
    }
    ensure_empty(cx, &target_dir, target).await?;
    let plan = plan(cx, &template_dir, name).await?;
    if plan.is_empty() {
        return Err(ToolError::invalid_arguments(format!(
            "template `{}` has no files to copy",
            preview(template, 80)
        )));
    }
    let mut lines = Vec::with_capacity(plan.len());
    for file in plan {
        let report = cx
            .host()
            .write(WriteRequest {
                path: target_dir.join(&file.rel),
                data: file.data,
                create_dirs: true,
                expected: None,
            })
            .await?;
        lines.push(format!(
            "{}/{} ({} bytes)",
            target.trim_end_matches('/'),
            file.rel.display(),
            report.bytes_written
        ));
    }
    Ok(format!(
        "Created {} files in {} from {}:\n{}",
        lines.len(),
        target.trim_end_matches('/'),
        template.trim_end_matches('/'),
        lines.join("\n")
    ))
}

/// `name` goes into file names, so it is one plain path component and never `.`/`..`; its
/// characters cannot form a second placeholder either.
fn valid_name(name: &str) -> Result<(), ToolError> {
    if crate::fs::is_plain_name(name) {
        Ok(())
    } else {
        Err(ToolError::invalid_arguments(format!(
            "`name` must be 1-64 letters, digits, `-`, `_` or `.`, starting with a letter or digit; got `{}`",
            preview(name, 80)
        )))
    }
}

/// A workspace-relative path, checked to stay inside the workspace after links are resolved.
fn inside_workspace(cx: &ToolContext, field: &str, raw: &str) -> Result<PathBuf, ToolError> {
    let path = Path::new(raw);
    let plain = !raw.trim().is_empty()
        && !raw.starts_with('~')
        && path.components().all(|c| matches!(c, Component::Normal(_)));
    let outside = || {
        ToolError::invalid_arguments(format!(
            "`{field}` must be a path inside the workspace, relative to it and without `..`; got `{}`",
            preview(raw, 80)
        ))
    };
    if !plain {
        return Err(outside());
    }
    let ws = cx.host().workspace();
    let canon = cx.host().canonical(&ws.join(path));
    if canon == ws || !canon.starts_with(ws) {
        return Err(outside());
    }
    Ok(canon)
}

/// The target may be missing or an empty directory; anything in it would be overwritten.
async fn ensure_empty(cx: &ToolContext, dir: &Path, shown: &str) -> Result<(), ToolError> {
    let req = ListRequest {
        path: dir.to_path_buf(),
        max_depth: Some(1),
        include_hidden: true,
        respect_gitignore: false,
        glob: None,
        max_entries: 1,
    };
    match cx.host().list(req).await {
        Ok(entries) if entries.is_empty() => Ok(()),
        Ok(_) => Err(ToolError::new(
            ErrorKind::Failed,
            format!(
                "target `{}` already exists and is not empty; pick a new directory",
                preview(shown, 80)
            ),
        )),
        Err(HostError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Every file of the template, read, checked and substituted, before anything is written.
async fn plan(
    cx: &ToolContext,
    template: &Path,
    name: Option<&str>,
) -> Result<Vec<Planned>, ToolError> {
    let req = ListRequest {
        path: template.to_path_buf(),
        max_depth: None,
        // A template's `.gitignore` and dot-files are part of it; its ignore rules are not
        // rules about the template itself.
        include_hidden: true,
        respect_gitignore: false,
        glob: None,
        max_entries: MAX_ENTRIES,
    };
    let mut entries = cx.host().list(req).await?;
    if entries.len() >= MAX_ENTRIES {
        return Err(ToolError::invalid_arguments(format!(
            "the template has {MAX_ENTRIES} or more entries; at most {MAX_FILES} files can be scaffolded"
        )));
    }
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    let dirs: HashSet<PathBuf> = entries
        .iter()
        .filter(|e| e.is_dir)
        .map(|e| template.join(&e.path))
        .collect();
    let mut plan = Vec::new();
    let mut total: u64 = 0;
    for entry in entries.iter().filter(|e| !e.is_dir) {
        let listed = template.join(&entry.path);
        let real = cx.host().canonical(&listed);
        if !real.starts_with(template) {
            return Err(ToolError::new(
                ErrorKind::Denied,
                format!(
                    "template entry `{}` is a link to outside the template; nothing was created",
                    entry.path.display()
                ),
            ));
        }
        // A link to a directory of the template: that directory is copied in its own right.
        if real == template || dirs.contains(&real) {
            continue;
        }
        if plan.len() >= MAX_FILES {
            return Err(ToolError::invalid_arguments(format!(
                "the template has more than {MAX_FILES} files"
            )));
        }
        // Read the resolved path: the host opens it refusing links, so a link swapped in after
        // the check above fails instead of being followed.
        let content = cx
            .host()
            .read(ReadRequest {
                path: real,
                offset: 0,
                max_bytes: Some(MAX_FILE_BYTES + 1),
            })
            .await?;
        if content.total_size > MAX_FILE_BYTES {
            return Err(ToolError::invalid_arguments(format!(
                "template file `{}` is {} bytes; the limit is {MAX_FILE_BYTES}",
                entry.path.display(),
                content.total_size
            )));
        }
        let data = substitute_bytes(content.bytes, name);
        total += data.len() as u64;
        if total > MAX_TOTAL_BYTES {
            return Err(ToolError::invalid_arguments(format!(
                "the template holds more than {MAX_TOTAL_BYTES} bytes"
            )));
        }
        plan.push(Planned {
            rel: substitute_path(&entry.path, name),
            data,
        });
    }
    Ok(plan)
}

/// Text files get `{{name}}` replaced in one pass; other bytes are copied as they are.
fn substitute_bytes(bytes: Vec<u8>, name: Option<&str>) -> Vec<u8> {
    let Some(name) = name else { return bytes };
    match String::from_utf8(bytes) {
        Ok(text) => text.replace(PLACEHOLDER, name).into_bytes(),
        Err(e) => e.into_bytes(),
    }
}

/// `{{name}}` replaced in each component; `name` is one safe component, so the result stays
/// below the target.
fn substitute_path(rel: &Path, name: Option<&str>) -> PathBuf {
    let Some(name) = name else {
        return rel.to_path_buf();
    };
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().replace(PLACEHOLDER, name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_leave_the_target_are_refused() {
        for bad in [
            "", "..", ".", "a/b", "../x", "-x", "a b", "{{name}}", "a\\b",
        ] {
            assert!(valid_name(bad).is_err(), "{bad}");
        }
        assert!(valid_name("my-app_2.0").is_ok());
    }

    #[test]
    fn placeholders_are_replaced_in_every_path_component() {
        let p = substitute_path(Path::new("{{name}}/src/{{name}}.rs"), Some("demo"));
        assert_eq!(p, PathBuf::from("demo/src/demo.rs"));
        let p = substitute_path(Path::new("{{name}}.rs"), None);
        assert_eq!(p, PathBuf::from("{{name}}.rs"));
    }

    #[test]
    fn binary_files_are_copied_unchanged() {
        let bin = vec![0xff, b'{', b'{', b'n', 0xfe];
        assert_eq!(substitute_bytes(bin.clone(), Some("x")), bin);
        assert_eq!(
            substitute_bytes(b"pkg {{name}}".to_vec(), Some("x")),
            b"pkg x".to_vec()
        );
    }
}
