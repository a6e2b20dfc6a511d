//! [`DiskPluginDirs`]: the plugin directories on disk (`plugins.dirs`), for loading manifests.
//!
//! Like the skill directories: an entry that is a link is skipped with a warning, hidden names
//! are skipped, and `plugin.json` is opened with no link in any component and a size cap.

use crate::safe_open::open_no_links;
use crate::skill_dirs::{read_capped, ReadError};
use std::path::Path;
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
    fn a_missing_plugins_dir_holds_nothing() {
        let r = DiskPluginDirs.scan(Path::new("/nonexistent/tackle/plugins"), 50);
        assert_eq!(r, ManifestScan::default());
    }
}
