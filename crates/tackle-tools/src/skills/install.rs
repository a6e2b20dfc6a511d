//! `find_skills` (Medium: the query leaves the machine) and `install_skill` (Medium, always
//! approved by a person: third-party text later reaches the prompt).

use super::archive::{unpack, ArchiveFile, ArchiveLimits};
use super::registry::{valid_sha256, valid_slug, Hit};
use super::{file, tool_available, Shared, MARKER};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;
use tackle_protocol::skills::{SkillInstall, MAX_SKILL_FILE_BYTES};
use tackle_protocol::{
    ApprovalMode, Capability, Risk, ToolContext, ToolError, ToolOutput, ToolSpec,
};

/// What the registry request would ask the host for, when the URL is not the operator's own.
fn planned(shared: &Shared, url: String) -> Vec<Capability> {
    if shared.registry.operator_configured() {
        return Vec::new();
    }
    vec![Capability::Network {
        method: "GET".into(),
        url,
    }]
}

pub(crate) struct FindSkills {
    shared: Arc<Shared>,
}

impl FindSkills {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }
}

fn render_hit(i: usize, h: &Hit) -> String {
    let name = h.display_name.as_deref().unwrap_or(&h.slug);
    let flag = if h.is_suspicious == Some(true) {
        " [SUSPICIOUS]"
    } else {
        ""
    };
    let version = h.version.as_deref().unwrap_or("unknown");
    let sha = h
        .sha256
        .as_deref()
        .and_then(valid_sha256)
        .unwrap_or_else(|| "not published".into());
    let summary = h.summary.as_deref().unwrap_or("");
    format!(
        "{}. {}{flag} — slug: {}, version: {version}, sha256: {sha}\n   {}\n",
        i + 1,
        tackle_protocol::text::preview(name, 100),
        h.slug,
        tackle_protocol::text::preview(summary, 300)
    )
}

// Arguments of `find_skills`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FindArgs {
    /// What the skill should do, e.g. "pdf forms".
    query: String,
    /// Most hits to return (1-50, default 10).
    limit: Option<i64>,
}

#[async_trait]
impl tackle_protocol::Tool for FindSkills {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "find_skills",
            "Searches the skill registry for installable skills: name, slug, version, sha256 and summary of each hit (SUSPICIOUS marks ones the registry flagged). The query is sent to the registry. Install one with install_skill.",
            super::NAME,
        )
        .risk(Risk::Medium)
        .approval(ApprovalMode::UnlessAutoApproved)
        .parameters(crate::args::schema::<FindArgs>())
    }

    fn planned_capabilities(&self, args: &Value, _cx: &ToolContext) -> Vec<Capability> {
        let q = args.get("query").and_then(Value::as_str).unwrap_or("");
        planned(&self.shared, self.shared.registry.search_url(q, 10))
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: FindArgs = crate::args::parse(args)?;
        let query = Some(args.query.trim())
            .filter(|q| !q.is_empty())
            .ok_or_else(|| ToolError::invalid_arguments("`query` must be a non-empty string"))?;
        let limit = args.limit.unwrap_or(10).clamp(1, 50) as u64;
        let hits = self.shared.registry.search(cx, query, limit).await?;
        if hits.is_empty() {
            return Ok(ToolOutput::text(format!(
                "The registry has no skill for `{}`.",
                tackle_protocol::text::preview(query, 80)
            ))
            .with_structured(json!([])));
        }
        let text: String = hits
            .iter()
            .enumerate()
            .map(|(i, h)| render_hit(i, h))
            .collect();
        let rows: Vec<Value> = hits
            .iter()
            .map(|h| {
                json!({
                    "slug": h.slug,
                    "name": h.display_name,
                    "version": h.version,
                    "sha256": h.sha256.as_deref().and_then(valid_sha256),
                    "suspicious": h.is_suspicious == Some(true),
                    "summary": h.summary,
                })
            })
            .collect();
        Ok(ToolOutput::text(text).with_structured(Value::Array(rows)))
    }
}

pub(crate) struct InstallSkill {
    shared: Arc<Shared>,
}

impl InstallSkill {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The archive's digest, checked against the pin and the registry's published one: the two
/// must agree when both are given, and either must match. Returns the digest and whether it
/// was checked.
fn verify(
    slug: &str,
    wanted: Option<String>,
    published: Option<String>,
    body: &[u8],
) -> Result<(String, bool), ToolError> {
    if let (Some(w), Some(p)) = (&wanted, &published) {
        if w != p {
            return Err(ToolError::failed(format!(
                "the sha256 you gave ({w}) differs from the one the registry publishes for `{slug}` ({p}); nothing was installed"
            )));
        }
    }
    let actual = sha256_hex(body);
    let expected = wanted.or(published);
    if let Some(e) = &expected {
        if *e != actual {
            return Err(ToolError::failed(format!(
                "the archive of `{slug}` has sha256 {actual}, not the expected {e}; nothing was installed"
            )));
        }
    }
    Ok((actual, expected.is_some()))
}

/// The archive's files (without any marker of its own) and its parsed `SKILL.md`.
fn checked_files(
    slug: &str,
    body: &[u8],
) -> Result<(Vec<ArchiveFile>, file::ParsedSkill), ToolError> {
    let files = unpack(body, ArchiveLimits::default()).map_err(|e| {
        ToolError::failed(format!(
            "refused the archive of `{slug}`: {e}; nothing was installed"
        ))
    })?;
    let files: Vec<ArchiveFile> = files.into_iter().filter(|(n, _)| n != MARKER).collect();
    let skill_md = files
        .iter()
        .find(|(n, _)| n == "SKILL.md")
        .map(|(_, d)| d.as_slice())
        .unwrap_or_default();
    if skill_md.len() as u64 > MAX_SKILL_FILE_BYTES {
        return Err(ToolError::failed(format!(
            "the SKILL.md of `{slug}` is larger than {MAX_SKILL_FILE_BYTES} bytes; nothing was installed"
        )));
    }
    let parsed = file::parse(skill_md, slug).map_err(|e| {
        ToolError::failed(format!(
            "the SKILL.md of `{slug}` was refused: {e}; nothing was installed"
        ))
    })?;
    Ok((files, parsed))
}

/// Refuses a skill whose name (by [`name_key`](super::name_key)) any source already claims,
/// visible or hidden: an install never takes over another skill
/// (docs/decisions/0027-skill-names-unique.md). Replacing this slug's own earlier install is
/// an update, not a takeover.
async fn refuse_taken_name(
    shared: &Shared,
    cx: &ToolContext,
    dir: &Path,
    slug: &str,
    name: &str,
) -> Result<(), ToolError> {
    let own = dir.join(slug).join("SKILL.md");
    let view = shared.reload(cx).await?;
    let taken = view
        .catalogue
        .claimants(name)
        .find(|e| Path::new(&e.meta.locator) != own);
    match taken {
        None => Ok(()),
        Some(other) => Err(ToolError::failed(format!(
            "refused `{slug}`: its skill is named `{}`, and `{}` from {} already has that name; nothing was installed (remove that skill first to replace it)",
            tackle_protocol::text::preview(name, 100),
            tackle_protocol::text::preview(&other.meta.name, 100),
            other.origin()
        ))),
    }
}

// Arguments of `install_skill`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct InstallArgs {
    /// The skill's slug, as find_skills shows it.
    #[schemars(pattern(r"^[A-Za-z0-9_-]+$"))]
    slug: String,
    /// The archive's expected SHA-256 (64 hex digits).
    #[schemars(pattern(r"^[0-9A-Fa-f]{64}$"))]
    sha256: Option<String>,
}

#[async_trait]
impl tackle_protocol::Tool for InstallSkill {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "install_skill",
            "Downloads a skill from the registry by slug and installs it into the first skills directory; it is in the catalogue at once. A skill whose name another skill already has is refused. Give sha256 to pin the exact archive. Nothing in the archive is run.",
            super::NAME,
        )
        .risk(Risk::Medium)
        .approval(ApprovalMode::Always)
        .parameters(crate::args::schema::<InstallArgs>())
    }

    fn planned_capabilities(&self, args: &Value, _cx: &ToolContext) -> Vec<Capability> {
        let slug = args.get("slug").and_then(Value::as_str).unwrap_or("");
        planned(&self.shared, self.shared.registry.download_url(slug))
    }

    fn timeout(&self) -> Option<std::time::Duration> {
        Some(std::time::Duration::from_secs(90))
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: InstallArgs = crate::args::parse(args)?;
        let slug = Some(args.slug.as_str())
            .filter(|s| valid_slug(s))
            .ok_or_else(|| ToolError::invalid_arguments("`slug` must match ^[A-Za-z0-9_-]+$"))?
            .to_string();
        let wanted =
            match args.sha256.as_deref() {
                None => None,
                Some(s) => Some(valid_sha256(s).ok_or_else(|| {
                    ToolError::invalid_arguments("`sha256` must be 64 hex digits")
                })?),
            };
        let dir = self.shared.settings.dirs.first().cloned().ok_or_else(|| {
            ToolError::failed(
                "no skills directory is configured (`skills.dirs`), so there is nowhere to install",
            )
        })?;
        let download = self.shared.registry.download(cx, &slug).await?;
        let (actual, verified) = verify(&slug, wanted, download.published_sha256, &download.body)?;
        let (files, parsed) = checked_files(&slug, &download.body)?;
        refuse_taken_name(&self.shared, cx, &dir.path, &slug, &parsed.name).await?;
        let marker = json!({
            "slug": slug,
            "registry": self.shared.registry.base(),
            "sha256": actual,
            "verified": verified,
            "installed_at": time::OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
        });
        let req = SkillInstall {
            dir: dir.path.clone(),
            name: slug.clone(),
            files,
            marker: MARKER.to_string(),
            marker_body: serde_json::to_vec_pretty(&marker).unwrap_or_default(),
        };
        let disk = self.shared.settings.disk.clone();
        let report = tokio::task::spawn_blocking(move || disk.install(&req))
            .await
            .map_err(|e| ToolError::failed(format!("the install did not finish: {e}")))?
            .map_err(|e| ToolError::failed(format!("could not install `{slug}`: {e}")))?;
        let view = self.shared.reload(cx).await?;
        let available = tool_available(cx);
        let visible = view
            .catalogue
            .visible(&available)
            .iter()
            .any(|e| e.meta.name == parsed.name);
        let mut text = format!(
            "Installed skill `{}` (slug {slug}) into {}{}.\nsha256 {actual}: {}.\n",
            parsed.name,
            report.path.display(),
            if report.replaced {
                ", replacing the previous install"
            } else {
                ""
            },
            if verified {
                "verified"
            } else {
                "UNVERIFIED (neither you nor the registry gave a sha256)"
            }
        );
        if !visible {
            text.push_str(
                "It is not visible here: it needs tools (or a system) that are not available.\n",
            );
        } else {
            text.push_str("Read it with skill_show before following it.\n");
        }
        Ok(ToolOutput::text(text).with_structured(json!({
            "name": parsed.name,
            "slug": slug,
            "path": report.path,
            "sha256": actual,
            "verified": verified,
            "replaced": report.replaced,
            "visible": visible,
        })))
    }
}
