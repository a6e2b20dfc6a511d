//! `project {action, …}`: GitHub issues (list, get, search, create, update, comment, close)
//! over the REST API, through `host.http`, and `scaffold` (a new project from a template
//! directory of the workspace, see `scaffold.rs`). The repository comes from `repo` or the
//! workspace's `origin` remote.

use crate::fs::planned_path;
use crate::secrets::Secrets;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;
use tackle_protocol::text::{preview, truncate_at_char_boundary};
use tackle_protocol::{
    ApprovalMode, Capability, ErrorKind, ExecCommand, ExecRequest, HttpRequest, Risk, Tool,
    ToolContext, ToolError, ToolOutput, ToolSpec,
};

use super::scaffold::scaffold;
use super::DevSettings;

const DEFAULT_API: &str = "https://api.github.com";
const MAX_RESPONSE: u64 = 4 * 1024 * 1024;
/// GitHub refuses longer search queries; refusing here names the limit.
const MAX_QUERY_CHARS: usize = 256;
/// Most bytes of an issue body `get_issue` returns.
const MAX_BODY_BYTES: usize = 16_000;
/// Search qualifiers that pick which repositories are searched. GitHub ORs several `repo:`
/// qualifiers, so appending ours would not confine a query that names another repository.
const SCOPE_QUALIFIERS: [&str; 4] = ["repo:", "org:", "user:", "owner:"];

/// The `project` tool: GitHub issues over the REST API and scaffolding from a template.
pub struct Project {
    token: Option<String>,
    api_base: String,
}

// One call of `project`: each action with exactly its own fields. Variants and the enum
// carry plain comments, as a doc comment would be sent to the model as a description.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
// Providers want an object at the top of a tool's schema, whatever its alternatives.
#[schemars(extend("type" = "object"))]
enum Args {
    ListIssues {
        /// `owner/name`. Default: from `git remote get-url origin`.
        repo: Option<String>,
        /// Which issues (default open).
        #[schemars(extend("enum" = ["open", "closed", "all"]))]
        state: Option<String>,
        /// Only issues with all these labels.
        labels: Option<Vec<String>>,
        /// Most issues to return. Default 20.
        #[schemars(range(min = 1, max = 100))]
        limit: Option<u32>,
    },
    GetIssue {
        /// `owner/name`. Default: from `git remote get-url origin`.
        repo: Option<String>,
        /// The issue number.
        #[schemars(range(min = 1))]
        number: u64,
    },
    SearchIssues {
        /// `owner/name`. Default: from `git remote get-url origin`.
        repo: Option<String>,
        /// GitHub search syntax (e.g. `crash is:open label:bug`); `repo:`, `org:` and `user:` are not allowed, the repository is added.
        #[schemars(length(max = MAX_QUERY_CHARS))]
        query: String,
        /// Most issues to return. Default 20.
        #[schemars(range(min = 1, max = 100))]
        limit: Option<u32>,
    },
    CreateIssue {
        /// `owner/name`. Default: from `git remote get-url origin`.
        repo: Option<String>,
        /// The issue title.
        title: String,
        /// Issue text.
        body: Option<String>,
        /// Labels to set.
        labels: Option<Vec<String>>,
    },
    UpdateIssue {
        /// `owner/name`. Default: from `git remote get-url origin`.
        repo: Option<String>,
        /// The issue number.
        #[schemars(range(min = 1))]
        number: u64,
        /// The issue title.
        title: Option<String>,
        /// Issue text.
        body: Option<String>,
        /// Open or closed.
        #[schemars(extend("enum" = ["open", "closed"]))]
        state: Option<String>,
        /// Replaces the labels ([] removes all).
        labels: Option<Vec<String>>,
        /// Replaces the assignees (GitHub logins; [] removes all).
        assignees: Option<Vec<String>>,
    },
    Comment {
        /// `owner/name`. Default: from `git remote get-url origin`.
        repo: Option<String>,
        /// The issue number.
        #[schemars(range(min = 1))]
        number: u64,
        /// The comment.
        body: String,
    },
    CloseIssue {
        /// `owner/name`. Default: from `git remote get-url origin`.
        repo: Option<String>,
        /// The issue number.
        #[schemars(range(min = 1))]
        number: u64,
        /// An optional closing comment.
        body: Option<String>,
    },
    Scaffold {
        /// The template directory, relative to the workspace.
        template: String,
        /// The new directory, relative to the workspace; must not exist or be empty.
        target: String,
        /// Replaces `{{name}}` in file contents and names (letters, digits, `-`, `_`, `.`).
        name: Option<String>,
    },
}

impl Args {
    fn action(&self) -> Action {
        match self {
            Args::ListIssues { .. } => Action::ListIssues,
            Args::GetIssue { .. } => Action::GetIssue,
            Args::SearchIssues { .. } => Action::SearchIssues,
            Args::CreateIssue { .. } => Action::CreateIssue,
            Args::UpdateIssue { .. } => Action::UpdateIssue,
            Args::Comment { .. } => Action::Comment,
            Args::CloseIssue { .. } => Action::CloseIssue,
            Args::Scaffold { .. } => Action::Scaffold,
        }
    }

    fn repo(&self) -> Option<&str> {
        match self {
            Args::ListIssues { repo, .. }
            | Args::GetIssue { repo, .. }
            | Args::SearchIssues { repo, .. }
            | Args::CreateIssue { repo, .. }
            | Args::UpdateIssue { repo, .. }
            | Args::Comment { repo, .. }
            | Args::CloseIssue { repo, .. } => repo.as_deref(),
            Args::Scaffold { .. } => None,
        }
    }
}

/// What `planned_capabilities` reads of a call before it is checked: the action alone.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
enum Action {
    ListIssues,
    GetIssue,
    SearchIssues,
    CreateIssue,
    UpdateIssue,
    Comment,
    CloseIssue,
    Scaffold,
}

impl Action {
    /// The HTTP method its (main) GitHub call uses; `None` for actions that stay local.
    fn method(self) -> Option<&'static str> {
        match self {
            Action::ListIssues | Action::GetIssue | Action::SearchIssues => Some("GET"),
            Action::CreateIssue | Action::Comment => Some("POST"),
            Action::UpdateIssue | Action::CloseIssue => Some("PATCH"),
            Action::Scaffold => None,
        }
    }
}

impl Project {
    /// A `project` tool using `settings` (GitHub token and API base).
    pub fn new(settings: DevSettings) -> Self {
        let base = settings
            .github_api_base
            .unwrap_or_else(|| DEFAULT_API.to_string());
        Self {
            token: settings.github_token.filter(|t| !t.is_empty()),
            api_base: base.trim_end_matches('/').to_string(),
        }
    }
}

#[async_trait]
impl Tool for Project {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "project",
            "Work with the project's GitHub issues, or scaffold a new project. Actions: list_issues \
             (state, labels, limit), get_issue (number), search_issues (query, limit; always within \
             the one repository), create_issue (title, body, labels), update_issue (number and any of \
             title, body, state, labels, assignees), comment (number, body), close_issue (number, \
             optional body posted as a closing comment), scaffold (template, target, optional name: \
             copies a template directory of the workspace into a new or empty directory, replacing \
             `{{name}}` in file contents and names). `repo` is `owner/name`; without it the \
             workspace's `origin` remote is used.",
            "dev",
        )
        .risk(Risk::Medium)
        .approval(ApprovalMode::UnlessAutoApproved)
        .parameters(crate::args::schema::<Args>())
    }

    fn planned_capabilities(&self, args: &Value, cx: &ToolContext) -> Vec<Capability> {
        let action = args
            .get("action")
            .cloned()
            .and_then(|a| serde_json::from_value::<Action>(a).ok());
        let Some(method) = action.map_or(Some("POST"), Action::method) else {
            return vec![
                Capability::FileRead {
                    path: planned_path(args, cx, "template", "."),
                },
                Capability::FileWrite {
                    path: planned_path(args, cx, "target", "."),
                },
            ];
        };
        let endpoint = |repo: &str| match action {
            Some(Action::SearchIssues) => format!("{}/search/issues", self.api_base),
            _ => format!("{}/repos/{repo}/issues", self.api_base),
        };
        match args.get("repo").and_then(Value::as_str) {
            Some(repo) => vec![Capability::Network {
                method: method.into(),
                url: endpoint(repo),
            }],
            None => vec![
                Capability::Exec {
                    program: "git".into(),
                    args: origin_argv(),
                },
                Capability::Network {
                    method: method.into(),
                    url: endpoint(""),
                },
            ],
        }
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        check_fields(&args)?;
        if let Args::Scaffold {
            template,
            target,
            name,
        } = &args
        {
            let text = scaffold(cx, template, target, name.as_deref()).await?;
            return Ok(ToolOutput::text(text));
        }
        if args.action().method() != Some("GET") && self.token.is_none() {
            return Err(ToolError::failed(
                "no GitHub token is configured for the project tool, so it can only read issues of public repositories",
            ));
        }
        // GitHub or a proxy may echo the token back; it must not reach the model either way.
        let secrets = Secrets::new(self.token.clone());
        let text = self
            .github(cx, &args)
            .await
            .map_err(|e| secrets.scrub_error(e))?;
        Ok(ToolOutput::text(secrets.scrub(&text)))
    }
}

impl Project {
    async fn github(&self, cx: &ToolContext, args: &Args) -> Result<String, ToolError> {
        let repo = match args.repo() {
            Some(r) => valid_repo(r)?,
            None => origin_repo(cx).await?,
        };
        match args {
            Args::ListIssues {
                state,
                labels,
                limit,
                ..
            } => {
                let state = state.as_deref().unwrap_or("open");
                self.list(cx, &repo, state, labels.as_deref(), *limit).await
            }
            Args::GetIssue { number, .. } => self.get(cx, &repo, *number).await,
            Args::SearchIssues { query, limit, .. } => self.search(cx, &repo, query, *limit).await,
            Args::CreateIssue {
                title,
                body,
                labels,
                ..
            } => {
                let mut issue = json!({"title": title, "body": body.clone().unwrap_or_default()});
                if let Some(labels) = labels.as_ref().filter(|l| !l.is_empty()) {
                    issue["labels"] = json!(labels);
                }
                self.create(cx, &repo, issue).await
            }
            Args::UpdateIssue {
                number,
                title,
                body,
                state,
                labels,
                assignees,
                ..
            } => {
                let mut patch = serde_json::Map::new();
                let fields = [
                    ("title", title.as_ref().map(|t| json!(t))),
                    ("body", body.as_ref().map(|b| json!(b))),
                    ("state", state.as_ref().map(|s| json!(s))),
                    ("labels", labels.as_ref().map(|l| json!(l))),
                    ("assignees", assignees.as_ref().map(|a| json!(a))),
                ];
                for (key, value) in fields {
                    if let Some(value) = value {
                        patch.insert(key.into(), value);
                    }
                }
                self.update(cx, &repo, *number, patch).await
            }
            Args::Comment { number, body, .. } => self.comment(cx, &repo, *number, body).await,
            Args::CloseIssue { number, body, .. } => {
                self.close(cx, &repo, *number, body.as_deref()).await
            }
            Args::Scaffold { .. } => Err(ToolError::invalid_arguments(
                "scaffold does not talk to GitHub",
            )),
        }
    }

    async fn list(
        &self,
        cx: &ToolContext,
        repo: &str,
        state: &str,
        labels: Option<&[String]>,
        limit: Option<u32>,
    ) -> Result<String, ToolError> {
        let mut url = format!(
            "{}/repos/{repo}/issues?state={}&per_page={}",
            self.api_base,
            enc(state),
            limit.unwrap_or(20).clamp(1, 100)
        );
        if let Some(labels) = labels.filter(|l| !l.is_empty()) {
            url.push_str(&format!("&labels={}", enc(&labels.join(","))));
        }
        let issues = self.send(cx, "GET", url, None).await?;
        let list = issues.as_array().cloned().unwrap_or_default();
        if list.is_empty() {
            return Ok(format!("No {state} issues in {repo}"));
        }
        Ok(list.iter().map(issue_line).collect::<Vec<_>>().join("\n"))
    }

    async fn create(
        &self,
        cx: &ToolContext,
        repo: &str,
        issue: Value,
    ) -> Result<String, ToolError> {
        let url = format!("{}/repos/{repo}/issues", self.api_base);
        let issue = self.send(cx, "POST", url, Some(issue)).await?;
        Ok(format!("Created {}", issue_line(&issue)))
    }

    async fn get(&self, cx: &ToolContext, repo: &str, n: u64) -> Result<String, ToolError> {
        let url = format!("{}/repos/{repo}/issues/{n}", self.api_base);
        let issue = self.send(cx, "GET", url, None).await?;
        let assignees: Vec<&str> = issue["assignees"]
            .as_array()
            .map(|a| a.iter().filter_map(|u| u["login"].as_str()).collect())
            .unwrap_or_default();
        let mut out = format!(
            "{}\nAuthor: {} · Assignees: {} · Comments: {}",
            issue_line(&issue),
            issue["user"]["login"].as_str().unwrap_or("?"),
            if assignees.is_empty() {
                "none".to_string()
            } else {
                assignees.join(", ")
            },
            issue["comments"].as_u64().unwrap_or_default()
        );
        let body = issue["body"].as_str().unwrap_or_default().trim();
        if !body.is_empty() {
            out.push_str("\n\n");
            // Kept whole, line breaks included (a preview would fold them); cut at a char.
            let cut = truncate_at_char_boundary(body, MAX_BODY_BYTES);
            out.push_str(cut);
            if cut.len() < body.len() {
                out.push_str(&format!("\n[body cut at {MAX_BODY_BYTES} bytes]"));
            }
        }
        Ok(out)
    }

    /// The repository qualifier is always added and the query may not name another scope,
    /// so the operator's token searches this repository only.
    async fn search(
        &self,
        cx: &ToolContext,
        repo: &str,
        query: &str,
        limit: Option<u32>,
    ) -> Result<String, ToolError> {
        let query = query.trim();
        let q = format!("{query} repo:{repo}");
        let url = format!(
            "{}/search/issues?q={}&per_page={}",
            self.api_base,
            enc(&q),
            limit.unwrap_or(20).clamp(1, 100)
        );
        let found = self.send(cx, "GET", url, None).await?;
        let items = found["items"].as_array().cloned().unwrap_or_default();
        if items.is_empty() {
            return Ok(format!(
                "No issues in {repo} match `{}`",
                preview(query, 80)
            ));
        }
        let total = found["total_count"].as_u64().unwrap_or(items.len() as u64);
        let mut out = format!("{total} issues in {repo} match (showing {}):", items.len());
        for i in &items {
            out.push('\n');
            out.push_str(&issue_line(i));
        }
        Ok(out)
    }

    async fn update(
        &self,
        cx: &ToolContext,
        repo: &str,
        n: u64,
        patch: serde_json::Map<String, Value>,
    ) -> Result<String, ToolError> {
        let url = format!("{}/repos/{repo}/issues/{n}", self.api_base);
        let issue = self
            .send(cx, "PATCH", url, Some(Value::Object(patch)))
            .await?;
        Ok(format!("Updated {}", issue_line(&issue)))
    }

    async fn comment(
        &self,
        cx: &ToolContext,
        repo: &str,
        n: u64,
        body: &str,
    ) -> Result<String, ToolError> {
        let url = format!("{}/repos/{repo}/issues/{n}/comments", self.api_base);
        let c = self
            .send(cx, "POST", url, Some(json!({"body": body})))
            .await?;
        Ok(format!(
            "Commented on {repo}#{n}: {}",
            c["html_url"].as_str().unwrap_or("(no url returned)")
        ))
    }

    async fn close(
        &self,
        cx: &ToolContext,
        repo: &str,
        n: u64,
        body: Option<&str>,
    ) -> Result<String, ToolError> {
        if let Some(body) = body.filter(|b| !b.trim().is_empty()) {
            self.comment(cx, repo, n, body).await?;
        }
        let url = format!("{}/repos/{repo}/issues/{n}", self.api_base);
        let issue = self
            .send(cx, "PATCH", url, Some(json!({"state": "closed"})))
            .await?;
        Ok(format!("Closed {}", issue_line(&issue)))
    }

    /// One GitHub API call; non-2xx answers become errors carrying GitHub's own message.
    async fn send(
        &self,
        cx: &ToolContext,
        method: &str,
        url: String,
        body: Option<Value>,
    ) -> Result<Value, ToolError> {
        let mut headers = vec![
            (
                "Accept".to_string(),
                "application/vnd.github+json".to_string(),
            ),
            ("User-Agent".to_string(), "tackle".to_string()),
            ("X-GitHub-Api-Version".to_string(), "2022-11-28".to_string()),
        ];
        if let Some(token) = &self.token {
            headers.push(("Authorization".to_string(), format!("Bearer {token}")));
        }
        if body.is_some() {
            headers.push(("Content-Type".to_string(), "application/json".to_string()));
        }
        let req = HttpRequest {
            method: method.to_string(),
            url,
            headers,
            body: body.map(|b| b.to_string().into_bytes()),
            max_bytes: MAX_RESPONSE,
            timeout: Duration::from_secs(30),
            follow_redirects: true,
            // The API base is the operator's (default or config); only the path comes from the model.
            operator_configured: true,
        };
        let resp = cx.host().http(req).await?;
        let parsed: Value = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
        if (200..300).contains(&resp.status) {
            return Ok(parsed);
        }
        let msg = parsed["message"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| preview(&String::from_utf8_lossy(&resp.body), 200));
        let kind = if resp.status == 404 {
            ErrorKind::NotFound
        } else {
            ErrorKind::Failed
        };
        Err(ToolError::new(
            kind,
            format!("GitHub answered {} to {method}: {msg}", resp.status),
        ))
    }
}

fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn issue_line(i: &Value) -> String {
    let labels: Vec<&str> = i["labels"]
        .as_array()
        .map(|l| l.iter().filter_map(|x| x["name"].as_str()).collect())
        .unwrap_or_default();
    let labels = if labels.is_empty() {
        String::new()
    } else {
        format!(" [{}]", labels.join(", "))
    };
    let kind = if i.get("pull_request").is_some() {
        "pull request "
    } else {
        ""
    };
    format!(
        "{kind}#{} ({}) {}{labels} — {}",
        i["number"].as_u64().unwrap_or_default(),
        i["state"].as_str().unwrap_or("?"),
        preview(i["title"].as_str().unwrap_or_default(), 200),
        i["html_url"].as_str().unwrap_or_default()
    )
}

/// What the schema cannot say: numbers from 1, text that is not blank, and the update rules.
fn check_fields(a: &Args) -> Result<(), ToolError> {
    let blank = |s: &str| s.trim().is_empty();
    let missing = |what: &str| {
        Err(ToolError::invalid_arguments(format!(
            "{:?} needs `{what}`",
            a.action()
        )))
    };
    match a {
        Args::GetIssue { number: 0, .. }
        | Args::UpdateIssue { number: 0, .. }
        | Args::Comment { number: 0, .. }
        | Args::CloseIssue { number: 0, .. } => Err(ToolError::invalid_arguments(
            "`number` must be an issue number (1 or more)",
        )),
        Args::CreateIssue { title, .. } if blank(title) => missing("title"),
        Args::Comment { body, .. } if blank(body) => missing("body"),
        Args::SearchIssues { query, .. } if blank(query) => missing("query"),
        Args::Scaffold { template, .. } if blank(template) => missing("template"),
        Args::Scaffold { target, .. } if blank(target) => missing("target"),
        Args::UpdateIssue {
            title,
            body,
            state,
            labels,
            assignees,
            ..
        } => check_update(
            title.as_deref(),
            body.is_some() || labels.is_some(),
            state.as_deref(),
            assignees.as_deref(),
        ),
        Args::SearchIssues { query, .. } => check_query(query),
        _ => Ok(()),
    }
}

/// `others`: whether `body` or `labels` is given, which need no check of their own.
fn check_update(
    title: Option<&str>,
    others: bool,
    state: Option<&str>,
    assignees: Option<&[String]>,
) -> Result<(), ToolError> {
    if title.is_none() && !others && state.is_none() && assignees.is_none() {
        return Err(ToolError::invalid_arguments(
            "update_issue needs at least one of `title`, `body`, `state`, `labels`, `assignees`",
        ));
    }
    if title.is_some_and(|t| t.trim().is_empty()) {
        return Err(ToolError::invalid_arguments("`title` must not be empty"));
    }
    if let Some(s) = state.filter(|s| !["open", "closed"].contains(s)) {
        return Err(ToolError::invalid_arguments(format!(
            "update_issue: `state` must be open or closed, got `{}`",
            preview(s, 40)
        )));
    }
    for login in assignees.into_iter().flatten() {
        let ok = !login.is_empty()
            && login.chars().count() <= 39
            && !login.starts_with('-')
            && login.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !ok {
            return Err(ToolError::invalid_arguments(format!(
                "`assignees` holds `{}`, which is not a GitHub login",
                preview(login, 40)
            )));
        }
    }
    Ok(())
}

/// A search stays within the one repository: no scope qualifier of its own (see
/// [`SCOPE_QUALIFIERS`]), and short enough for GitHub.
fn check_query(query: &str) -> Result<(), ToolError> {
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(ToolError::invalid_arguments(format!(
            "`query` is longer than {MAX_QUERY_CHARS} characters"
        )));
    }
    let lower = query.to_lowercase();
    for q in SCOPE_QUALIFIERS {
        let named = lower.match_indices(q).any(|(i, _)| {
            lower
                .get(..i)
                .and_then(|before| before.chars().next_back())
                .is_none_or(|c| !c.is_alphanumeric())
        });
        if named {
            return Err(ToolError::invalid_arguments(format!(
                "`query` may not use `{q}`: searches are confined to the one repository, which is added for you"
            )));
        }
    }
    Ok(())
}

/// `owner/name` with GitHub's characters only: the value goes into a URL path.
pub(crate) fn valid_repo(repo: &str) -> Result<String, ToolError> {
    let ok_part = |p: &str| {
        !p.is_empty()
            && p != "."
            && p != ".."
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    match repo.split_once('/') {
        Some((owner, name)) if ok_part(owner) && ok_part(name) => Ok(repo.to_string()),
        _ => Err(ToolError::invalid_arguments(format!(
            "`repo` must look like `owner/name`, got `{}`",
            preview(repo, 80)
        ))),
    }
}

fn origin_argv() -> Vec<String> {
    ["remote", "get-url", "origin"]
        .into_iter()
        .map(str::to_string)
        .collect()
}

async fn origin_repo(cx: &ToolContext) -> Result<String, ToolError> {
    let req = ExecRequest {
        command: ExecCommand::Argv {
            program: "git".into(),
            args: origin_argv(),
        },
        cwd: Some(cx.host().workspace().to_path_buf()),
        timeout: Duration::from_secs(10),
        env: Vec::new(),
        stdin: None,
        max_output_bytes: 4096,
        output_lines: None,
        program_sha256: None,
        data_values: Vec::new(),
    };
    let out = cx.host().exec(req).await?;
    if out.exit_code != Some(0) {
        return Err(ToolError::invalid_arguments(format!(
            "no `repo` given and the workspace has no usable `origin` remote ({}); pass repo as owner/name",
            out.stderr.trim()
        )));
    }
    repo_from_remote(out.stdout.trim()).ok_or_else(|| {
        ToolError::invalid_arguments(format!(
            "cannot tell owner/name from origin `{}`; pass repo",
            out.stdout.trim()
        ))
    })
}

/// `owner/name` from `https://host/owner/name(.git)`, `git@host:owner/name(.git)` or `ssh://…`.
pub(crate) fn repo_from_remote(url: &str) -> Option<String> {
    let url = url.trim().trim_end_matches('/');
    let url = url.strip_suffix(".git").unwrap_or(url);
    let path = match url.split_once("://") {
        Some((_, rest)) => rest.split_once('/')?.1,
        None => url.split_once(':')?.1,
    };
    let mut parts = path.rsplit('/');
    let name = parts.next()?;
    let owner = parts.next()?;
    valid_repo(&format!("{owner}/{name}")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::{exec_ok, http_json, MockHost};
    use std::sync::Arc;

    fn tool(token: Option<&str>) -> Project {
        Project::new(DevSettings {
            github_token: token.map(str::to_string),
            github_api_base: Some("http://127.0.0.1:9/api/".into()),
        })
    }

    /// Each action's fields and required ones. Their union is the hand-written schema's
    /// property list, where only `action` was required and the rest was said in prose.
    const ACTIONS: &[(&str, &[&str], &[&str], &str)] = &[
        (
            "list_issues",
            &["repo", "state", "labels", "limit"],
            &[],
            r#"{"state": "all", "labels": ["bug"], "limit": 5}"#,
        ),
        (
            "get_issue",
            &["repo", "number"],
            &["number"],
            r#"{"number": 1}"#,
        ),
        (
            "search_issues",
            &["repo", "query", "limit"],
            &["query"],
            r#"{"query": "crash", "limit": 5}"#,
        ),
        (
            "create_issue",
            &["repo", "title", "body", "labels"],
            &["title"],
            r#"{"repo": "a/b", "title": "t", "body": "b", "labels": []}"#,
        ),
        (
            "update_issue",
            &[
                "repo",
                "number",
                "title",
                "body",
                "state",
                "labels",
                "assignees",
            ],
            &["number"],
            r#"{"number": 2, "state": "closed", "assignees": ["octo"]}"#,
        ),
        (
            "comment",
            &["repo", "number", "body"],
            &["number", "body"],
            r#"{"number": 3, "body": "x"}"#,
        ),
        (
            "close_issue",
            &["repo", "number", "body"],
            &["number"],
            r#"{"number": 4}"#,
        ),
        (
            "scaffold",
            &["template", "target", "name"],
            &["template", "target"],
            r#"{"template": "t", "target": "n", "name": "x"}"#,
        ),
    ];

    #[tokio::test]
    async fn one_flat_object_for_providers_and_each_action_reads_exactly_its_fields() {
        let schema = tool(Some("tok")).spec().parameters;
        // Anthropic refuses `oneOf`/`anyOf`/`allOf` at the top of a tool's schema.
        for key in ["oneOf", "anyOf", "allOf"] {
            assert!(schema.get(key).is_none(), "{key} at the top: {schema:#}");
        }
        let old = [
            "action",
            "repo",
            "title",
            "body",
            "number",
            "state",
            "labels",
            "assignees",
            "limit",
            "query",
            "template",
            "target",
            "name",
        ];
        crate::args::contract::assert_names(&schema, &old, &["action"]);
        assert_eq!(schema["additionalProperties"], false);
        let accepts = crate::args::contract::accepts;
        for (action, properties, required, valid) in ACTIONS {
            let mut valid: Value = serde_json::from_str(valid).unwrap_or_default();
            valid["action"] = json!(action);
            assert!(accepts(&schema, &valid), "{valid}");
            // What the schema leaves to the call: each action's own required fields, and no
            // field of another action.
            let mut refused: Vec<Value> = required
                .iter()
                .map(|field| {
                    let mut missing = valid.clone();
                    if let Some(obj) = missing.as_object_mut() {
                        obj.remove(*field);
                    }
                    missing
                })
                .collect();
            if let Some(foreign) = old
                .iter()
                .find(|f| **f != "action" && !properties.contains(f))
            {
                let mut extra = valid.clone();
                extra[*foreign] = json!(1);
                refused.push(extra);
            }
            for args in refused {
                let host = Arc::new(MockHost::new());
                let out = tool(Some("tok")).call(args.clone(), &host.context()).await;
                assert_eq!(
                    out.err().map(|e| e.kind),
                    Some(ErrorKind::InvalidArguments),
                    "{args}"
                );
                assert!(host.http_requests().is_empty(), "{args}");
            }
        }
        for bad in [
            json!({"action": "list_issues", "limit": 101}),
            json!({"action": "get_issue", "number": 0}),
            json!({"action": "search_issues", "query": "x".repeat(MAX_QUERY_CHARS + 1)}),
            json!({"action": "delete_issue", "number": 1}),
            json!({"action": "get_issue", "number": 1, "no_such_field": true}),
        ] {
            assert!(!accepts(&schema, &bad), "{bad}");
        }
    }

    #[test]
    fn remotes_in_every_common_form_give_owner_and_name() {
        for url in [
            "https://github.com/acme/tool.git",
            "https://github.com/acme/tool",
            "git@github.com:acme/tool.git",
            "ssh://git@github.com/acme/tool.git\n",
        ] {
            assert_eq!(repo_from_remote(url).as_deref(), Some("acme/tool"), "{url}");
        }
        assert_eq!(repo_from_remote("/local/path"), None);
    }

    #[test]
    fn repo_names_cannot_climb_out_of_the_api_path() {
        for bad in ["../x", "a/..", "a/b/c", "a", "a/b?x=1", "a /b"] {
            assert!(valid_repo(bad).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn listing_uses_origin_and_renders_issues() {
        let host = Arc::new(MockHost::new());
        host.reply_exec(Ok(exec_ok(0, "git@github.com:acme/tool.git\n", "")));
        host.reply_http(Ok(http_json(200, r#"[{"number": 7, "state": "open", "title": "Crash", "html_url": "u7", "labels": [{"name": "bug"}]}]"#)));
        let out = tool(None)
            .call(
                json!({"action": "list_issues", "labels": ["bug", "p 1"]}),
                &host.context(),
            )
            .await;
        assert_eq!(
            out.map(|o| o.content),
            Ok("#7 (open) Crash [bug] — u7".to_string())
        );
        let req = &host.http_requests()[0];
        assert_eq!(
            req.url,
            "http://127.0.0.1:9/api/repos/acme/tool/issues?state=open&per_page=20&labels=bug%2Cp+1"
        );
        assert!(req.headers.iter().all(|(k, _)| k != "Authorization"));
    }

    #[tokio::test]
    async fn creating_sends_the_token_and_a_json_body() {
        let host = Arc::new(MockHost::new());
        host.reply_http(Ok(http_json(
            201,
            r#"{"number": 8, "state": "open", "title": "New", "html_url": "u8"}"#,
        )));
        let args =
            json!({"action": "create_issue", "repo": "acme/tool", "title": "New", "body": "text"});
        let out = tool(Some("tok")).call(args, &host.context()).await;
        assert_eq!(
            out.map(|o| o.content),
            Ok("Created #8 (open) New — u8".to_string())
        );
        let req = &host.http_requests()[0];
        assert_eq!(req.method, "POST");
        assert!(req
            .headers
            .contains(&("Authorization".into(), "Bearer tok".into())));
        let body: Value =
            serde_json::from_slice(req.body.as_deref().unwrap_or_default()).unwrap_or_default();
        assert_eq!(body, json!({"title": "New", "body": "text"}));
    }

    #[tokio::test]
    async fn writes_without_a_token_fail_before_any_request() {
        let host = Arc::new(MockHost::new());
        let out = tool(None)
            .call(
                json!({"action": "comment", "repo": "a/b", "number": 1, "body": "x"}),
                &host.context(),
            )
            .await;
        assert!(out.is_err_and(|e| e.message.contains("no GitHub token")));
        assert!(host.capabilities().is_empty());
    }

    #[tokio::test]
    async fn github_errors_carry_its_message_and_404_is_not_found() {
        let host = Arc::new(MockHost::new());
        host.reply_http(Ok(http_json(404, r#"{"message": "Not Found"}"#)));
        let out = tool(Some("t"))
            .call(
                json!({"action": "close_issue", "repo": "a/b", "number": 3}),
                &host.context(),
            )
            .await;
        let err = out.err().map(|e| (e.kind, e.message));
        assert_eq!(
            err,
            Some((
                ErrorKind::NotFound,
                "GitHub answered 404 to PATCH: Not Found".to_string()
            ))
        );
    }

    #[tokio::test]
    async fn missing_fields_are_named() {
        let host = Arc::new(MockHost::new());
        let out = tool(Some("t"))
            .call(
                json!({"action": "comment", "repo": "a/b", "body": "x"}),
                &host.context(),
            )
            .await;
        assert!(out.is_err_and(
            |e| e.kind == ErrorKind::InvalidArguments && e.message.contains("`number`")
        ));
    }
}
