//! The `services` extension as the binary builds it: the `services:` section, with the
//! service-account key file it names read here (the tools crate never opens files).

use std::path::{Path, PathBuf};
use tackle_protocol::config::ServicesConfig;
use tackle_tools::services::{KeyFileError, ServicesSettings};

/// `~/…` in the home; anything else as written.
fn expand(raw: &str, home: Option<&Path>) -> PathBuf {
    match (raw.strip_prefix("~/"), home) {
        (Some(rest), Some(h)) => h.join(rest),
        _ => PathBuf::from(raw),
    }
}

/// Settings from config. A key file that cannot be read does not stop start-up: `gsheets`
/// reports it when called, and the other tools work.
pub fn settings(config: &ServicesConfig, home: Option<&Path>) -> ServicesSettings {
    let read = |raw: &str| {
        let path = expand(raw, home);
        std::fs::read_to_string(&path).map_err(|source| KeyFileError { path, source })
    };
    ServicesSettings::from_config(config, &read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_paths_expand_the_home() {
        let home = Path::new("/home/me");
        assert_eq!(
            expand("~/.config/k.json", Some(home)),
            PathBuf::from("/home/me/.config/k.json")
        );
        assert_eq!(
            expand("/etc/k.json", Some(home)),
            PathBuf::from("/etc/k.json")
        );
    }
}
