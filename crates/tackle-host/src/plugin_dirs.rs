//! [`DiskPluginDirs`]: the plugin directories on disk (`plugins.dirs`), for loading manifests.
//!
//! Like the skill directories: an entry that is a link is skipped with a warning, hidden names
//! are skipped, and `plugin.json` is opened with no link in any component and a size cap.

use crate::safe_open::open_no_links;
use crate::skill_dirs::{read_capped, DirGuard, ReadError};
use std::path::Path;
use std::sync::Arc;
use tackle_protocol::plugins::{FoundManifest, ManifestScan, PluginDirs, MANIFEST_FILE};

/// The plugin directories on the local disk.
#[derive(Debug, Clone, Copy, Default)]
pub struct DiskPluginDirs;

impl PluginDirs for DiskPluginDirs {
    fn scan(&self, dir: &Path, max_bytes: u64) -> ManifestScan {
        let mut report = ManifestScan::default();
        for crate::dir_entries::Entry { path, meta, .. } in
            crate::dir_entries::entries(dir, "plugins dir", &mut report.warnings)
        {
            if meta.file_type().is_symlink() {
                report.warnings.push(format!(
                    "{}: skipped, links in plugins dirs are not followed",
                    path.display()
                ));
                continue;
            }
            if !meta.is_dir() {
                continue;
            }
            let file = path.join(MANIFEST_FILE);
            match read_capped(&file, max_bytes) {
                Ok(bytes) => report.found.push(FoundManifest {
                    plugin_dir: path,
                    path: file,
                    bytes,
                }),
                Err(ReadError::Missing) => report.warnings.push(format!(
                    "{}: skipped, it holds no {MANIFEST_FILE}",
                    path.display()
                )),
                Err(ReadError::TooLarge) => report.warnings.push(format!(
                    "{}: skipped, larger than {max_bytes} bytes",
                    file.display()
                )),
                Err(ReadError::Io(e)) => report
                    .warnings
                    .push(format!("{}: skipped, {e}", file.display())),
            }
        }
        report
    }

    fn is_executable_file(&self, path: &Path) -> bool {
        use std::os::unix::fs::PermissionsExt;
        let Ok(fd) = open_no_links(path, libc::O_RDONLY | libc::O_NONBLOCK) else {
            return false;
        };
        std::fs::File::from(fd)
            .metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
}

impl DiskPluginDirs {
    /// The plugin directories on disk, asking `guard` before each scan: a directory it refuses
    /// (with the reason) is not read, and the refusal is a warning of the load (so `plugins
    /// check` and `doctor` show it). A relative directory is always refused: it would be read
    /// from wherever the process happens to run.
    pub fn guarded(guard: DirGuard) -> Arc<dyn PluginDirs> {
        Arc::new(Guarded { guard })
    }
}

struct Guarded {
    guard: DirGuard,
}

impl PluginDirs for Guarded {
    fn scan(&self, dir: &Path, max_bytes: u64) -> ManifestScan {
        match crate::skill_dirs::refusal(&self.guard, dir) {
            // A refused directory that is not there is no news.
            Some(_) if std::fs::symlink_metadata(dir).is_err() => ManifestScan::default(),
            Some(why) => ManifestScan {
                found: Vec::new(),
                warnings: vec![format!("{}: refused, {why}", dir.display())],
            },
            None => DiskPluginDirs.scan(dir, max_bytes),
        }
    }

    fn is_executable_file(&self, path: &Path) -> bool {
        crate::skill_dirs::refusal(&self.guard, path).is_none()
            && DiskPluginDirs.is_executable_file(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_reads_plugin_manifests_and_skips_links_hidden_names_and_empty_dirs() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("a")).unwrap();
        std::fs::write(d.path().join("a/plugin.json"), "{}").unwrap();
        std::fs::create_dir_all(d.path().join("empty")).unwrap();
        std::fs::create_dir_all(d.path().join(".hidden")).unwrap();
        std::fs::write(d.path().join(".hidden/plugin.json"), "{}").unwrap();
        std::os::unix::fs::symlink(d.path().join("a"), d.path().join("c")).unwrap();
        let r = DiskPluginDirs.scan(d.path(), 1024);
        let dirs: Vec<_> = r
            .found
            .iter()
            .map(|f| f.plugin_dir.file_name().unwrap().to_owned())
            .collect();
        assert_eq!(dirs, ["a"]);
        assert!(r.warnings.iter().any(|w| w.contains("links")), "{r:?}");
        assert!(
            r.warnings.iter().any(|w| w.contains("no plugin.json")),
            "{r:?}"
        );
    }

    #[test]
    fn a_guarded_scan_refuses_what_the_guard_refuses_and_every_relative_dir() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("a")).unwrap();
        std::fs::write(d.path().join("a/plugin.json"), "{}").unwrap();
        let refused = d.path().to_path_buf();
        let guard: DirGuard = Arc::new(move |p: &Path| {
            p.starts_with(&refused)
                .then(|| "inside the workspace".to_string())
        });
        let r = DiskPluginDirs::guarded(guard).scan(d.path(), 1024);
        assert!(r.found.is_empty(), "{r:?}");
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("refused, inside the workspace")),
            "{r:?}"
        );
        let open: DirGuard = Arc::new(|_: &Path| None);
        let r = DiskPluginDirs::guarded(open.clone()).scan(d.path(), 1024);
        assert_eq!(r.found.len(), 1, "{r:?}");
        // A relative dir is refused; one that is not there is simply empty.
        let r = DiskPluginDirs::guarded(open).scan(Path::new("no/such/tackle/plugins"), 1024);
        assert_eq!(r, ManifestScan::default());
    }

    #[test]
    fn a_missing_plugins_dir_holds_nothing() {
        let r = DiskPluginDirs.scan(Path::new("/nonexistent/tackle/plugins"), 50);
        assert_eq!(r, ManifestScan::default());
    }
}
