//! Grant data: what a tool call may touch (docs/architecture.md, "Grants"). Pure data, parsed from config;
//! the algebra (merge, attenuation) and the checks live in `tackle-policy`.

use crate::spec::ApprovalMode;
use serde::{Deserialize, Serialize};

/// The three grant kinds. `None` means "this layer does not set this kind", which matters
/// for overlays: an agent that sets `shell` replaces the shell kind only (docs/architecture.md, "The call pipeline").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grants {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<ShellGrant>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkGrant>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs: Option<FsGrant>,
}

/// Command-prefix lists matched on words. Empty `allow` = allow all; `deny` always wins.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellGrant {
    #[serde(default)]
    pub allow: Vec<String>,
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
    pub fn is_deny(&self) -> bool {
        *self == OpaqueMode::Deny
    }
}

/// Where network requests may go. Empty `endpoints` = any public host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkGrant {
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
    pub host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub methods: Option<Vec<String>>,
}

/// Path allowlists. A missing `fs` grant means the workspace only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsGrant {
    #[serde(default)]
    pub allow_read: Vec<String>,
    #[serde(default)]
    pub allow_write: Vec<String>,
}

/// A tool's policy: its approval mode and the grants its calls run under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolPolicy {
    pub approval: ApprovalMode,
    #[serde(default)]
    pub grants: Grants,
}

impl ToolPolicy {
    pub fn new(approval: ApprovalMode) -> Self {
        Self {
            approval,
            grants: Grants::default(),
        }
    }

    pub fn with_grants(mut self, grants: Grants) -> Self {
        self.grants = grants;
        self
    }
}
