//! `project {action, …}`: GitHub issues (list, create, comment, close) over the REST API,
//! through `host.http`. The repository comes from `repo` or the workspace's `origin` remote.

use crate::fs::parse_args;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;
use tackle_protocol::text::preview;
use tackle_protocol::{
    ApprovalMode, Capability, ErrorKind, ExecCommand, ExecRequest, HttpRequest, Risk, Tool,
    ToolContext, ToolError, ToolOutput, ToolSpec,
};

use super::DevSettings;

const DEFAULT_API: &str = "https://api.github.com";
const MAX_RESPONSE: u64 = 4 * 1024 * 1024;

pub struct Project {
    token: Option<String>,
    api_base: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    action: Action,
    repo: Option<String>,
    title: Option<String>,
    body: Option<String>,
    number: Option<u64>,
    state: Option<String>,
    #[serde(default)]
    labels: Vec<String>,
    limit: Option<u32>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
enum Action {
    ListIssues,
    CreateIssue,
    Comment,
    CloseIssue,
}

impl Project {
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
            "Work with the project's GitHub issues. Actions: list_issues (state, labels, limit), \
             create_issue (title, body, labels), comment (number, body), close_issue (number, optional \
             body posted as a closing comment). `repo` is `owner/name`; without it the workspace's \
             `origin` remote is used.",
            "dev",
        )
        .risk(Risk::Medium)
        .approval(ApprovalMode::UnlessAutoApproved)
        .parameters(json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["list_issues", "create_issue", "comment", "close_issue"]},
                "repo": {"type": "string", "description": "`owner/name`. Default: from `git remote get-url origin`."},
                "title": {"type": "string", "description": "create_issue: the issue title."},
                "body": {"type": "string", "description": "create_issue: issue text; comment: the comment; close_issue: an optional closing comment."},
                "number": {"type": "integer", "minimum": 1, "description": "comment, close_issue: the issue number."},
                "state": {"type": "string", "enum": ["open", "closed", "all"], "description": "list_issues: which issues. Default open."},
                "labels": {"type": "array", "items": {"type": "string"}, "description": "list_issues: only with all these labels; create_issue: labels to set."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "list_issues: most issues to return. Default 20."}
            },
            "required": ["action"],
            "additionalProperties": false
        }))
    }

    fn planned_capabilities(&self, args: &Value, _cx: &ToolContext) -> Vec<Capability> {
        let method = match args.get("action").and_then(Value::as_str) {
            Some("list_issues") => "GET",
            Some("close_issue") => "PATCH",
            _ => "POST",
        };
        match args.get("repo").and_then(Value::as_str) {
            Some(repo) => vec![Capability::Network {
                method: method.into(),
                url: format!("{}/repos/{repo}/issues", self.api_base),
            }],
            None => vec![
                Capability::Exec {
                    program: "git".into(),
                    args: origin_argv(),
                },
                Capability::Network {
                    method: method.into(),
                    url: format!("{}/repos/", self.api_base),
                },
            ],
        }
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(args)?;
        check_fields(&args)?;
        if args.action != Action::ListIssues && self.token.is_none() {
            return Err(ToolError::failed(
                "no GitHub token is configured for the project tool, so it can only list issues of public repositories",
            ));
        }
        let repo = match &args.repo {
            Some(r) => valid_repo(r)?,
            None => origin_repo(cx).await?,
        };
        let text = match args.action {
            Action::ListIssues => self.list(cx, &repo, &args).await?,
            Action::CreateIssue => self.create(cx, &repo, &args).await?,
            Action::Comment => self.comment(cx, &repo, &args).await?,
            Action::CloseIssue => self.close(cx, &repo, &args).await?,
        };
        Ok(ToolOutput::text(text))
    }
}

impl Project {
    async fn list(&self, cx: &ToolContext, repo: &str, args: &Args) -> Result<String, ToolError> {
        let state = args.state.as_deref().unwrap_or("open");
        let mut url = format!(
            "{}/repos/{repo}/issues?state={}&per_page={}",
            self.api_base,
            enc(state),
            args.limit.unwrap_or(20).clamp(1, 100)
        );
        if !args.labels.is_empty() {
            url.push_str(&format!("&labels={}", enc(&args.labels.join(","))));
        }
        let issues = self.send(cx, "GET", url, None).await?;
        let list = issues.as_array().cloned().unwrap_or_default();
        if list.is_empty() {
            return Ok(format!("No {state} issues in {repo}"));
        }
        Ok(list.iter().map(issue_line).collect::<Vec<_>>().join("\n"))
    }

    async fn create(&self, cx: &ToolContext, repo: &str, args: &Args) -> Result<String, ToolError> {
        let mut body = json!({"title": args.title, "body": args.body.clone().unwrap_or_default()});
        if !args.labels.is_empty() {
            body["labels"] = json!(args.labels);
        }
        let url = format!("{}/repos/{repo}/issues", self.api_base);
        let issue = self.send(cx, "POST", url, Some(body)).await?;
        Ok(format!("Created {}", issue_line(&issue)))
    }

    async fn comment(
        &self,
        cx: &ToolContext,
        repo: &str,
        args: &Args,
    ) -> Result<String, ToolError> {
        let n = args.number.unwrap_or_default();
        let url = format!("{}/repos/{repo}/issues/{n}/comments", self.api_base);
        let c = self
            .send(cx, "POST", url, Some(json!({"body": args.body})))
            .await?;
        Ok(format!(
            "Commented on {repo}#{n}: {}",
            c["html_url"].as_str().unwrap_or("(no url returned)")
        ))
    }

    async fn close(&self, cx: &ToolContext, repo: &str, args: &Args) -> Result<String, ToolError> {
        let n = args.number.unwrap_or_default();
        if args.body.as_deref().is_some_and(|b| !b.trim().is_empty()) {
            self.comment(cx, repo, args).await?;
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

fn check_fields(a: &Args) -> Result<(), ToolError> {
    let missing = |what: &str| {
        Err(ToolError::invalid_arguments(format!(
            "{:?} needs `{what}`",
            a.action
        )))
    };
    match a.action {
        Action::CreateIssue if a.title.as_deref().is_none_or(|t| t.trim().is_empty()) => {
            missing("title")
        }
        Action::Comment if a.body.as_deref().is_none_or(|t| t.trim().is_empty()) => missing("body"),
        Action::Comment | Action::CloseIssue if a.number.is_none() => missing("number"),
        _ => Ok(()),
    }
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
