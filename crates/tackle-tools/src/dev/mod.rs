//! The `dev` extension: `git` (argv, no shell, destructive actions always asked) and
//! `project` (GitHub issues over the REST API through `host.http`, and scaffolding a project
//! from a template directory through the host's file access).

mod git;
mod project;
mod scaffold;

pub use git::Git;
pub use project::Project;

use std::fmt;
use std::sync::Arc;
use tackle_protocol::{Extension, Tool};

/// What the `dev` tools need from config; the binary fills it (no crate reads env itself).
#[derive(Clone, Default)]
pub struct DevSettings {
    /// Sent as `Authorization: Bearer …` to the GitHub API. Listing public issues works without.
    pub github_token: Option<String>,
    /// Default `https://api.github.com`; a GitHub Enterprise base or a local test server.
    pub github_api_base: Option<String>,
}

impl fmt::Debug for DevSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DevSettings")
            .field(
                "github_token",
                &self.github_token.as_ref().map(|_| "[redacted]"),
            )
            .field("github_api_base", &self.github_api_base)
            .finish()
    }
}

/// The `dev` extension.
pub fn extension(settings: DevSettings) -> Arc<dyn Extension> {
    Arc::new(DevExtension { settings })
}

struct DevExtension {
    settings: DevSettings,
}

impl Extension for DevExtension {
    fn name(&self) -> &str {
        "dev"
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![Arc::new(Git), Arc::new(Project::new(self.settings.clone()))]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_the_token() {
        let s = DevSettings {
            github_token: Some("ghp_secret".into()),
            github_api_base: None,
        };
        assert!(!format!("{s:?}").contains("ghp_secret"));
    }

    #[test]
    fn dev_lists_git_then_project() {
        let names: Vec<String> = extension(DevSettings::default())
            .tools()
            .iter()
            .map(|t| t.spec().name)
            .collect();
        assert_eq!(names, ["git", "project"]);
    }
}
