//! `gsheets {spreadsheet_id, action: read|append|update, range, values?}` over Google Sheets
//! v4 (`/v4/spreadsheets/{id}/values/{range}`). The A1 range is one percent-encoded path
//! segment, so `Sheet1!A1:B2` or a sheet name with `/` cannot change the path.

use super::client::{api_error, form, is_success, json_of, unix_now, Api, Body};
use super::gsheets_auth::TokenCache;
use super::secrets::Secrets;
use super::{not_configured, path_id, GsheetsAuth, GsheetsSettings, ServicesSettings, NAME};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tackle_protocol::text::preview;
use tackle_protocol::{
    ApprovalMode, Capability, HttpRequest, Risk, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

const DEFAULT_API: &str = "https://sheets.googleapis.com";
/// A1 ranges are short; a longer one is a mistake or an attempt to stuff the URL.
const MAX_RANGE: usize = 200;

pub(crate) struct Gsheets {
    target: Option<Target>,
}

struct Target {
    api: Api,
    auth: GsheetsAuth,
    token_uri: Option<String>,
    /// Shared by every call and every instance of the extension's tool.
    cache: Arc<TokenCache>,
}

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Debug)]
#[schemars(inline)]
#[serde(rename_all = "snake_case")]
enum Action {
    Read,
    Append,
    Update,
}

// Arguments of `gsheets`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The id in the sheet's URL (letters, digits, - and _).
    spreadsheet_id: String,
    action: Action,
    /// A1 notation, e.g. Sheet1!A1:C10.
    range: String,
    /// append/update: rows of cells.
    values: Option<Vec<Vec<String>>>,
}

impl Gsheets {
    pub(crate) fn new(settings: &ServicesSettings, cache: Arc<TokenCache>) -> Self {
        let target = settings.gsheets.as_ref().map(|g: &GsheetsSettings| {
            let mut secrets = Secrets::default();
            match &g.auth {
                GsheetsAuth::Token(t) => secrets.add(t.clone()),
                GsheetsAuth::ServiceAccount(k) => secrets.add(k.private_key.clone()),
                GsheetsAuth::Unusable(_) => {}
            }
            Target {
                api: Api::new(
                    g.api_base.as_deref(),
                    DEFAULT_API,
                    settings.timeout,
                    secrets,
                ),
                auth: g.auth.clone(),
                token_uri: g.token_uri.clone().filter(|u| !u.trim().is_empty()),
                cache,
            }
        });
        Self { target }
    }
}

/// Every byte but RFC 3986's unreserved ones percent-encoded: the range stays one segment.
fn segment(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn request_path(a: &Args) -> String {
    let base = format!(
        "/v4/spreadsheets/{}/values/{}",
        a.spreadsheet_id,
        segment(&a.range)
    );
    match a.action {
        Action::Read => base,
        Action::Append => {
            format!("{base}:append?valueInputOption=USER_ENTERED&insertDataOption=INSERT_ROWS")
        }
        Action::Update => format!("{base}?valueInputOption=USER_ENTERED"),
    }
}

fn method(action: Action) -> &'static str {
    match action {
        Action::Read => "GET",
        Action::Append => "POST",
        Action::Update => "PUT",
    }
}

fn check(a: &Args) -> Result<(), ToolError> {
    path_id("spreadsheet_id", &a.spreadsheet_id, "_-")?;
    if a.range.trim().is_empty() || a.range.chars().count() > MAX_RANGE {
        return Err(ToolError::invalid_arguments(format!(
            "`range` must be an A1 range such as Sheet1!A1:C10 (at most {MAX_RANGE} characters)"
        )));
    }
    if a.action != Action::Read && a.values.as_ref().is_none_or(|v| v.is_empty()) {
        return Err(ToolError::invalid_arguments(format!(
            "{} needs `values`: a non-empty list of rows, each a list of cell strings",
            if a.action == Action::Append {
                "append"
            } else {
                "update"
            }
        )));
    }
    Ok(())
}

impl Target {
    fn token_uri(&self) -> Option<String> {
        match &self.auth {
            GsheetsAuth::ServiceAccount(k) => Some(
                self.token_uri
                    .clone()
                    .unwrap_or_else(|| k.token_uri.clone()),
            ),
            _ => None,
        }
    }

    /// The bearer token: the configured one, a cached one, or a freshly minted one.
    async fn token(&self, cx: &ToolContext) -> Result<String, ToolError> {
        let key = match &self.auth {
            GsheetsAuth::Token(t) => return Ok(t.clone()),
            GsheetsAuth::Unusable(why) => return Err(ToolError::failed(why.clone())),
            GsheetsAuth::ServiceAccount(k) => k,
        };
        if let Some(t) = self.cache.get() {
            return Ok(t);
        }
        let token_uri = self.token_uri().unwrap_or_default();
        let assertion = key
            .assertion(&token_uri, unix_now())
            .map_err(|e| ToolError::failed(format!("cannot mint a Google token: {e}")))?;
        let body = form(&[
            (
                "grant_type".to_string(),
                "urn:ietf:params:oauth:grant-type:jwt-bearer".to_string(),
            ),
            ("assertion".to_string(), assertion.clone()),
        ]);
        // The key file is the operator's, so its token URI is trusted as written (the binary
        // lists it among the operator's destinations).
        let req = HttpRequest {
            method: "POST".into(),
            url: token_uri,
            headers: vec![
                (
                    "Content-Type".into(),
                    "application/x-www-form-urlencoded".into(),
                ),
                ("Accept".into(), "application/json".into()),
            ],
            body: Some(body.into_bytes()),
            max_bytes: 64 * 1024,
            timeout: self.api.timeout,
            follow_redirects: false,
            operator_configured: true,
        };
        let mut secrets = self.api.secrets.clone();
        secrets.add(assertion);
        let resp = tokio::select! {
            r = cx.host().http(req) => r.map_err(|e| secrets.scrub_error(ToolError::from(e)))?,
            () = cx.cancel.cancelled() => return Err(ToolError::failed("the request was cancelled")),
        };
        let v = json_of(&resp);
        if !is_success(&resp) {
            // OAuth errors are `{error, error_description}`.
            let why = v
                .get("error_description")
                .or_else(|| v.get("error"))
                .and_then(Value::as_str)
                .map(|m| preview(m, 300))
                .unwrap_or_else(|| format!("HTTP {}", resp.status));
            return Err(ToolError::failed(secrets.scrub(&format!(
                "Google refused the service-account token (HTTP {}): {why}",
                resp.status
            ))));
        }
        let token = v
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| ToolError::failed("Google's token answer has no access_token"))?
            .to_string();
        let expires_in = v.get("expires_in").and_then(Value::as_u64).unwrap_or(3600);
        self.cache.put(token.clone(), expires_in);
        Ok(token)
    }
}

fn render_read(range: &str, v: &Value) -> String {
    let rows = v.get("values").and_then(Value::as_array);
    let Some(rows) = rows.filter(|r| !r.is_empty()) else {
        return format!("No values in {range}.");
    };
    rows.iter()
        .enumerate()
        .map(|(i, row)| {
            let cells: Vec<String> = row
                .as_array()
                .map(|r| {
                    r.iter()
                        .map(|c| match c {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            format!("Row {}: {}", i + 1, cells.join(" | "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[async_trait]
impl Tool for Gsheets {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "gsheets",
            "Read, append to or update a Google Sheets range. read returns `Row N: a | b` lines; \
             append adds `values` as new rows after the range's table; update overwrites the \
             range with `values`. Cells are entered as if typed (formulas work).",
            NAME,
        )
        .parameters(crate::args::schema::<Args>())
        .risk(Risk::Medium)
        .approval(ApprovalMode::UnlessAutoApproved)
    }

    fn planned_capabilities(&self, args: &Value, _cx: &ToolContext) -> Vec<Capability> {
        let (Some(t), Ok(a)) = (&self.target, serde_json::from_value::<Args>(args.clone())) else {
            return Vec::new();
        };
        if check(&a).is_err() {
            return Vec::new();
        }
        t.api.planned(method(a.action), &request_path(&a))
    }

    fn timeout(&self) -> Option<Duration> {
        // One token request and one Sheets request.
        let t = self.target.as_ref()?;
        Some(t.api.timeout * 2 + Duration::from_secs(5))
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let a: Args = crate::args::parse_for("gsheets", args)?;
        let Some(t) = &self.target else {
            return Err(not_configured("gsheets"));
        };
        check(&a)?;
        let token = t.token(cx).await?;
        let mut secrets = t.api.secrets.clone();
        secrets.add(token.clone());
        let headers = vec![("Authorization".to_string(), format!("Bearer {token}"))];
        let body = a
            .values
            .as_ref()
            .filter(|_| a.action != Action::Read)
            .map(|v| Body::Json(json!({"values": v})));
        let resp = t
            .api
            .send(cx, method(a.action), &request_path(&a), headers, body)
            .await
            .map_err(|e| secrets.scrub_error(e))?;
        if !is_success(&resp) {
            return Err(api_error("Google Sheets", &resp, &secrets));
        }
        let v = json_of(&resp);
        let text = match a.action {
            Action::Read => render_read(&a.range, &v),
            Action::Append => format!(
                "Appended {} row(s) to {}.",
                v.pointer("/updates/updatedRows")
                    .and_then(Value::as_u64)
                    .unwrap_or_default(),
                v.pointer("/updates/updatedRange")
                    .and_then(Value::as_str)
                    .unwrap_or(&a.range)
            ),
            Action::Update => format!(
                "Updated {} row(s) in {}.",
                v.get("updatedRows")
                    .and_then(Value::as_u64)
                    .unwrap_or_default(),
                v.get("updatedRange")
                    .and_then(Value::as_str)
                    .unwrap_or(&a.range)
            ),
        };
        Ok(ToolOutput::text(secrets.scrub(&text)).with_structured(secrets.scrub_value(v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_is_one_path_segment() {
        assert_eq!(segment("Sheet1!A1:B2"), "Sheet1%21A1%3AB2");
        assert_eq!(segment("My Sheet/x?y#z"), "My%20Sheet%2Fx%3Fy%23z");
        assert_eq!(segment("Ü"), "%C3%9C");
        let a = Args {
            spreadsheet_id: "abc-_1".into(),
            action: Action::Append,
            range: "S!A1".into(),
            values: Some(vec![vec!["x".into()]]),
        };
        assert_eq!(
            request_path(&a),
            "/v4/spreadsheets/abc-_1/values/S%21A1:append?valueInputOption=USER_ENTERED&insertDataOption=INSERT_ROWS"
        );
    }

    #[test]
    fn reads_render_rows_and_empty_ranges_say_so() {
        let v = json!({"values": [["a", "b"], ["c"], [1, true]]});
        assert_eq!(
            render_read("S!A1", &v),
            "Row 1: a | b\nRow 2: c\nRow 3: 1 | true"
        );
        assert_eq!(render_read("S!A1", &json!({})), "No values in S!A1.");
    }

    #[test]
    fn writes_need_values_and_ids_are_checked() {
        let mut a = Args {
            spreadsheet_id: "ok".into(),
            action: Action::Update,
            range: "A1".into(),
            values: Some(vec![]),
        };
        assert!(check(&a).is_err());
        a.values = Some(vec![vec!["1".into()]]);
        assert!(check(&a).is_ok());
        a.spreadsheet_id = "../x".into();
        assert!(check(&a).is_err());
    }
}
