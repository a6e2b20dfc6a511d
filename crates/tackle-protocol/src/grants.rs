//! Grant data: what a tool call may touch (docs/architecture.md, "Grants"). Pure data, parsed from config;
//! the algebra (merge, attenuation) and the checks live in `tackle-policy`.

use crate::spec::ApprovalMode;
use serde::{Deserialize, Serialize};

/// The three grant kinds. `None` means "this layer does not set this kind", which matters
/// for overlays: an agent that sets `shell` replaces the shell kind only (docs/architecture.md, "The call pipeline").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grants {
    /// Which commands shell lines may run (`grants.shell`); `None`: this layer leaves the kind
    /// alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<ShellGrant>,
    /// Where network requests may go (`grants.network`); `None`: this layer leaves the kind alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkGrant>,
    /// Which paths may be read and written (`grants.fs`); `None`: this layer leaves the kind alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs: Option<FsGrant>,
}

/// Command-prefix lists matched on words. Empty `allow` = allow all; `deny` always wins.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellGrant {
    /// Command prefixes that may run (`git`, `git status`); empty: every command not denied.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Command prefixes that never run, whatever `allow` says.
    #[serde(default)]
    pub deny: Vec<String>,
    /// What happens, while any rule is in force, to a line whose programs the analyser cannot
    /// all name.
    #[serde(default, skip_serializing_if = "OpaqueMode::is_deny")]
    pub opaque: OpaqueMode,
}

/// The fate of a shell line the analyser cannot see through (docs/architecture.md, "Grants").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpaqueMode {
    /// Refused, with the reason, so the model can rewrite the line.
    #[default]
    Deny,
    /// Sent to approval: a person decides, for this call only.
    Ask,
}

impl OpaqueMode {
    /// True for the default, [`OpaqueMode::Deny`] (so it is left out when serialised).
    pub fn is_deny(&self) -> bool {
        *self == OpaqueMode::Deny
    }
}

/// Where network requests may go. Empty `endpoints` = any public host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkGrant {
    /// The allowed destinations; empty: any public host.
    #[serde(default)]
    pub endpoints: Vec<Endpoint>,
    /// Loopback, private, link-local and internal names are blocked unless this is true.
    #[serde(default)]
    pub allow_private: bool,
}

/// One allowed destination: a host (or `*.domain` glob), optionally a path prefix and methods.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Endpoint {
    /// The host name, a `*.domain` glob or an IP, optionally with `:PORT`.
    pub host: String,
    /// Only paths under this prefix, compared segment by segment (`/v1` does not cover `/v10`);
    /// unset: any path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_prefix: Option<String>,
    /// Only these HTTP methods; unset: any method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub methods: Option<Vec<String>>,
}

/// Path allowlists. A missing `fs` grant means the workspace only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsGrant {
    /// Paths that may be read (`~` and workspace-relative entries allowed); empty: the workspace.
    #[serde(default)]
    pub allow_read: Vec<String>,
    /// Paths that may be written (`~` and workspace-relative entries allowed); empty: the
    /// workspace.
    #[serde(default)]
    pub allow_write: Vec<String>,
}

/// A tool's policy: its approval mode and the grants its calls run under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolPolicy {
    /// Whether a call must be approved by a person first.
    pub approval: ApprovalMode,
    /// The grants calls run under before config and agent overlays.
    #[serde(default)]
    pub grants: Grants,
}

impl ToolPolicy {
    /// A policy with this approval mode and no grants set.
    pub fn new(approval: ApprovalMode) -> Self {
        Self {
            approval,
            grants: Grants::default(),
        }
    }

    /// Sets the grants its calls run under by default, replacing any set before.
    pub fn with_grants(mut self, grants: Grants) -> Self {
        self.grants = grants;
        self
    }
}
