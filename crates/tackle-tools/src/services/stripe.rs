//! `stripe {action, …}`: payment intents, customers, refunds and the balance over Stripe's
//! form-encoded API, and `verify_webhook` (no request). Medium and always approved: it moves
//! money. Creates carry one `Idempotency-Key`, reused on the single retry after a 429, so a
//! retried create cannot charge twice. `client_secret` (which lets a browser confirm a
//! payment) is dropped from every answer.

use super::client::{api_error, is_success, json_of, unix_now, Api, Body};
use super::secrets::Secrets;
use super::stripe_webhook;
use super::{not_configured, path_id, ServicesSettings, NAME};
use async_trait::async_trait;
use base64::Engine as _;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;
use tackle_protocol::text::preview;
use tackle_protocol::{
    ApprovalMode, Capability, HttpResponse, Risk, Tool, ToolContext, ToolError, ToolOutput,
    ToolSpec,
};

const DEFAULT_API: &str = "https://api.stripe.com";
const ACTIONS: &[&str] = &[
    "create_payment",
    "get_payment",
    "list_payments",
    "create_customer",
    "get_customer",
    "list_customers",
    "create_refund",
    "get_balance",
    "verify_webhook",
];

pub(crate) struct Stripe {
    target: Option<Target>,
    max_retry_after: Duration,
}

struct Target {
    api: Api,
    /// `Basic base64(secret_key:)`.
    authorization: String,
    /// The key is empty (an unset `${VAR}`): every request would be refused.
    key_missing: bool,
    webhook_secret: Option<String>,
    currency: String,
}

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Debug)]
#[schemars(inline)]
#[serde(rename_all = "snake_case")]
enum Action {
    CreatePayment,
    GetPayment,
    ListPayments,
    CreateCustomer,
    GetCustomer,
    ListCustomers,
    CreateRefund,
    GetBalance,
    VerifyWebhook,
}

// Arguments of `stripe`; which fields each action reads is in their descriptions.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    action: Action,
    #[schemars(
        range(min = 1),
        description = "In the currency's smallest unit (cents). create_payment: required; create_refund: optional (default: all)."
    )]
    amount: Option<i64>,
    /// Three-letter ISO code, e.g. usd. Default from config.
    currency: Option<String>,
    description: Option<String>,
    /// get_payment: the payment intent id (pi_…).
    payment_id: Option<String>,
    /// create_refund: the payment intent to refund.
    payment_intent_id: Option<String>,
    /// get_customer: the customer id (cus_…).
    customer_id: Option<String>,
    /// create_customer: required.
    email: Option<String>,
    /// create_customer: the customer's name.
    name: Option<String>,
    /// list_*: how many (1-100, default 10).
    limit: Option<i64>,
    /// verify_webhook: the raw request body.
    payload: Option<String>,
    /// verify_webhook: the Stripe-Signature header.
    signature: Option<String>,
}

impl Action {
    /// The action as the model writes it (the enum's order is [`ACTIONS`]'s).
    fn name(self) -> &'static str {
        ACTIONS.get(self as usize).copied().unwrap_or("?")
    }
}

/// One API request an action makes.
struct Request {
    method: &'static str,
    path: String,
    form: Option<Vec<(String, String)>>,
}

impl Stripe {
    pub(crate) fn new(settings: &ServicesSettings) -> Self {
        let target = settings.stripe.as_ref().map(|c| {
            let key = c.secret_key.trim().to_string();
            let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{key}:"));
            let authorization = format!("Basic {encoded}");
            let webhook_secret = c
                .webhook_secret
                .as_deref()
                .map(str::to_string)
                .filter(|s| !s.trim().is_empty());
            let secrets = Secrets::new(
                [key, encoded, authorization.clone()]
                    .into_iter()
                    .chain(webhook_secret.clone()),
            );
            Target {
                key_missing: c.secret_key.trim().is_empty(),
                api: Api::new(
                    c.api_base.as_deref(),
                    DEFAULT_API,
                    settings.timeout,
                    secrets,
                ),
                authorization,
                webhook_secret,
                currency: c
                    .currency
                    .clone()
                    .filter(|c| !c.trim().is_empty())
                    .unwrap_or_else(|| "usd".into()),
            }
        });
        Self {
            target,
            max_retry_after: settings.max_retry_after,
        }
    }
}

fn need<'a>(action: Action, field: &str, value: &'a Option<String>) -> Result<&'a str, ToolError> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ToolError::invalid_arguments(format!("{} needs `{field}`", action.name())))
}

/// A Stripe object id for a URL path: `pi_…`, `cus_…`.
fn object_id(action: Action, field: &str, value: &Option<String>) -> Result<String, ToolError> {
    path_id(field, need(action, field, value)?, "_")
}

fn positive(field: &str, amount: i64) -> Result<String, ToolError> {
    if amount > 0 {
        Ok(amount.to_string())
    } else {
        Err(ToolError::invalid_arguments(format!(
            "`{field}` is in the currency's smallest unit (cents) and must be above 0, got {amount}"
        )))
    }
}

fn currency(code: &str) -> Result<String, ToolError> {
    let code = code.trim().to_ascii_lowercase();
    if code.len() == 3 && code.chars().all(|c| c.is_ascii_lowercase()) {
        Ok(code)
    } else {
        Err(ToolError::invalid_arguments(format!(
            "`currency` must be a three-letter ISO code such as usd, got `{}`",
            preview(&code, 10)
        )))
    }
}

fn pairs(items: &[(&str, Option<String>)]) -> Vec<(String, String)> {
    items
        .iter()
        .filter_map(|(k, v)| v.clone().map(|v| (k.to_string(), v)))
        .collect()
}

impl Target {
    fn request(&self, a: &Args) -> Result<Request, ToolError> {
        let limit = || format!("?limit={}", a.limit.unwrap_or(10).clamp(1, 100));
        let get = |path: String| Request {
            method: "GET",
            path,
            form: None,
        };
        let post = |path: &str, form| Request {
            method: "POST",
            path: path.to_string(),
            form: Some(form),
        };
        Ok(match a.action {
            Action::CreatePayment => {
                let amount = a.amount.ok_or_else(|| {
                    ToolError::invalid_arguments("create_payment needs `amount` (in cents)")
                })?;
                let form = pairs(&[
                    ("amount", Some(positive("amount", amount)?)),
                    (
                        "currency",
                        Some(currency(a.currency.as_deref().unwrap_or(&self.currency))?),
                    ),
                    ("description", a.description.clone()),
                ]);
                post("/v1/payment_intents", form)
            }
            Action::GetPayment => get(format!(
                "/v1/payment_intents/{}",
                object_id(a.action, "payment_id", &a.payment_id)?
            )),
            Action::ListPayments => get(format!("/v1/payment_intents{}", limit())),
            Action::CreateCustomer => {
                let email = need(a.action, "email", &a.email)?;
                let form = pairs(&[("email", Some(email.to_string())), ("name", a.name.clone())]);
                post("/v1/customers", form)
            }
            Action::GetCustomer => get(format!(
                "/v1/customers/{}",
                object_id(a.action, "customer_id", &a.customer_id)?
            )),
            Action::ListCustomers => get(format!("/v1/customers{}", limit())),
            Action::CreateRefund => {
                let intent = object_id(a.action, "payment_intent_id", &a.payment_intent_id)?;
                let amount = a.amount.map(|n| positive("amount", n)).transpose()?;
                post(
                    "/v1/refunds",
                    pairs(&[("payment_intent", Some(intent)), ("amount", amount)]),
                )
            }
            Action::GetBalance => get("/v1/balance".into()),
            Action::VerifyWebhook => {
                return Err(ToolError::invalid_arguments(
                    "verify_webhook makes no request",
                ))
            }
        })
    }

    /// One request, and one retry after a 429 that asks for at most `max_wait`.
    async fn send(
        &self,
        cx: &ToolContext,
        req: Request,
        max_wait: Duration,
    ) -> Result<HttpResponse, ToolError> {
        let mut headers = vec![("Authorization".to_string(), self.authorization.clone())];
        if req.method == "POST" {
            headers.push(("Idempotency-Key".to_string(), idempotency_key()?));
        }
        let send = |form: Option<Vec<(String, String)>>| {
            self.api.send(
                cx,
                req.method,
                &req.path,
                headers.clone(),
                form.map(Body::Form),
            )
        };
        let resp = send(req.form.clone()).await?;
        if resp.status != 429 {
            return Ok(resp);
        }
        let wait = retry_after(&resp);
        if wait > max_wait {
            return Err(ToolError::failed(format!(
                "Stripe is rate limiting and asks to retry after {} s, longer than the {} s this tool waits; try again later",
                wait.as_secs(),
                max_wait.as_secs()
            )));
        }
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = cx.cancel.cancelled() => return Err(ToolError::failed("the request was cancelled")),
        }
        let resp = send(req.form).await?;
        if resp.status == 429 {
            return Err(ToolError::failed(
                "Stripe is still rate limiting after one retry; try again later",
            ));
        }
        Ok(resp)
    }

    fn verify_webhook(&self, a: &Args) -> Result<ToolOutput, ToolError> {
        let Some(secret) = &self.webhook_secret else {
            return Err(ToolError::failed(
                "services.stripe.webhook_secret is not configured, so webhook signatures cannot be checked",
            ));
        };
        let payload = a.payload.as_deref().ok_or_else(|| {
            ToolError::invalid_arguments("verify_webhook needs `payload` (the raw request body)")
        })?;
        let signature = need(a.action, "signature", &a.signature)?;
        let t =
            stripe_webhook::verify(secret, payload, signature, unix_now() as i64).map_err(|e| {
                self.api.secrets.scrub_error(ToolError::failed(format!(
                    "webhook signature is not valid: {e}"
                )))
            })?;
        let event: Value = serde_json::from_str(payload).unwrap_or(Value::Null);
        let id = event.get("id").and_then(Value::as_str).unwrap_or("?");
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("?");
        Ok(ToolOutput::text(self.api.secrets.scrub(&format!(
            "Webhook signature is valid (t={t}); event {} of type {}.",
            preview(id, 80),
            preview(kind, 80)
        )))
        .with_structured(json!({"valid": true, "timestamp": t})))
    }
}

/// A fresh random key: the same one goes with a create's retry, so Stripe runs it once.
fn idempotency_key() -> Result<String, ToolError> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| ToolError::failed("no randomness for an idempotency key"))?;
    Ok(format!(
        "tackle-{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ))
}

/// `Retry-After` in seconds or as an HTTP date; without one, a second.
fn retry_after(resp: &HttpResponse) -> Duration {
    let Some(v) = resp.header("retry-after").map(str::trim) else {
        return Duration::from_secs(1);
    };
    if let Ok(secs) = v.parse::<u64>() {
        return Duration::from_secs(secs);
    }
    if let Ok(secs) = v.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Duration::from_secs_f64(secs.min(86_400.0));
        }
    }
    match chrono::DateTime::parse_from_rfc2822(v) {
        Ok(at) => {
            let secs = (at.timestamp() - unix_now() as i64).max(0);
            Duration::from_secs(secs.unsigned_abs())
        }
        // Unreadable: treat as too long rather than hammer the API.
        Err(_) => Duration::MAX,
    }
}

/// `client_secret` anywhere in an answer, removed: with it, anyone can confirm the payment.
fn strip_client_secrets(v: &mut Value) {
    match v {
        Value::Object(o) => {
            o.remove("client_secret");
            o.values_mut().for_each(strip_client_secrets);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_client_secrets),
        _ => {}
    }
}

#[async_trait]
impl Tool for Stripe {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "stripe",
            "Stripe payments: create_payment (amount in cents, currency, description), \
             get_payment (payment_id), list_payments, create_customer (email, name), \
             get_customer (customer_id), list_customers (limit), create_refund \
             (payment_intent_id, optional amount), get_balance, and verify_webhook (payload, \
             signature: the Stripe-Signature header). Answers are Stripe's JSON.",
            NAME,
        )
        .parameters(crate::args::schema::<Args>())
        .risk(Risk::Medium)
        .approval(ApprovalMode::Always)
    }

    fn planned_capabilities(&self, args: &Value, _cx: &ToolContext) -> Vec<Capability> {
        let (Some(t), Ok(a)) = (&self.target, serde_json::from_value::<Args>(args.clone())) else {
            return Vec::new();
        };
        if a.action == Action::VerifyWebhook {
            return Vec::new();
        }
        match t.request(&a) {
            Ok(req) => t.api.planned(req.method, &req.path),
            Err(_) => t.api.planned("GET", "/v1/"),
        }
    }

    fn timeout(&self) -> Option<Duration> {
        let t = self.target.as_ref()?;
        Some(t.api.timeout * 2 + self.max_retry_after + Duration::from_secs(5))
    }

    async fn call(&self, args: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let a: Args = crate::args::parse_for("stripe", args)?;
        let Some(t) = &self.target else {
            return Err(not_configured("stripe"));
        };
        if a.action == Action::VerifyWebhook {
            return t.verify_webhook(&a);
        }
        if t.key_missing {
            return Err(ToolError::failed(
                "services.stripe.secret_key is empty (is its variable set?)",
            ));
        }
        let req = t.request(&a)?;
        let created = req.method == "POST";
        let resp = t.send(cx, req, self.max_retry_after).await?;
        if !is_success(&resp) {
            return Err(api_error("Stripe", &resp, &t.api.secrets));
        }
        let mut value = json_of(&resp);
        strip_client_secrets(&mut value);
        let value = t.api.secrets.scrub_value(value);
        let pretty = serde_json::to_string_pretty(&value).unwrap_or_default();
        let text = if created {
            format!(
                "Created {} {}.\n{pretty}",
                value
                    .get("object")
                    .and_then(Value::as_str)
                    .unwrap_or("object"),
                value.get("id").and_then(Value::as_str).unwrap_or("?")
            )
        } else {
            pretty
        };
        Ok(ToolOutput::text(text).with_structured(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_host::{http_json, MockHost};
    use std::sync::Arc;
    use tackle_protocol::config::StripeConfig;
    use tackle_protocol::ErrorKind;

    const KEY: &str = "sk_test_UNIT_SECRET_KEY";

    fn tool(webhook_secret: Option<&str>) -> Stripe {
        Stripe::new(&ServicesSettings {
            stripe: Some(StripeConfig {
                secret_key: KEY.into(),
                api_base: Some("http://127.0.0.1:9".into()),
                webhook_secret: webhook_secret.map(Into::into),
                currency: Some("eur".into()),
            }),
            ..ServicesSettings::default()
        })
    }

    #[tokio::test]
    async fn a_payment_is_a_form_post_with_basic_auth_and_an_idempotency_key() {
        let host = Arc::new(MockHost::new());
        host.reply_http(Ok(http_json(
            200,
            r#"{"id":"pi_1","object":"payment_intent","client_secret":"pi_1_secret_XYZ","amount":500}"#,
        )));
        let out = tool(None)
            .call(
                json!({"action": "create_payment", "amount": 500, "description": "a & b"}),
                &host.context(),
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            out.content.starts_with("Created payment_intent pi_1."),
            "{}",
            out.content
        );
        assert!(!format!("{}{:?}", out.content, out.structured).contains("secret_XYZ"));
        let req = &host.http_requests()[0];
        assert_eq!(req.url, "http://127.0.0.1:9/v1/payment_intents");
        assert_eq!(
            req.body.as_deref(),
            Some(b"amount=500&currency=eur&description=a+%26+b".as_slice())
        );
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{KEY}:"));
        assert!(req
            .headers
            .contains(&("Authorization".into(), format!("Basic {basic}"))));
        assert!(req
            .headers
            .iter()
            .any(|(k, v)| k == "Idempotency-Key" && v.starts_with("tackle-")));
    }

    #[tokio::test]
    async fn ids_that_would_change_the_path_are_refused_before_any_request() {
        let host = Arc::new(MockHost::new());
        let err = tool(None)
            .call(
                json!({"action": "get_payment", "payment_id": "../balance"}),
                &host.context(),
            )
            .await
            .err();
        assert_eq!(err.map(|e| e.kind), Some(ErrorKind::InvalidArguments));
        assert!(host.http_requests().is_empty());
    }

    #[tokio::test]
    async fn a_long_retry_after_fails_without_waiting() {
        let host = Arc::new(MockHost::new());
        let mut busy = http_json(429, r#"{"error":{"message":"slow down"}}"#);
        busy.headers.push(("Retry-After".into(), "31".into()));
        host.reply_http(Ok(busy));
        let err = tool(None)
            .call(json!({"action": "get_balance"}), &host.context())
            .await
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert!(err.contains("retry after 31 s"), "{err}");
        assert_eq!(host.http_requests().len(), 1);
    }

    #[tokio::test]
    async fn webhooks_need_a_secret_and_a_matching_signature() {
        let host = Arc::new(MockHost::new());
        let args =
            |sig: &str| json!({"action": "verify_webhook", "payload": "{}", "signature": sig});
        let err = tool(None)
            .call(args("t=1,v1=00"), &host.context())
            .await
            .err();
        assert!(err.is_some_and(|e| e.message.contains("webhook_secret is not configured")));
        let now = unix_now() as i64;
        let sig = format!(
            "t={now},v1={}",
            stripe_webhook::sign("whsec_abcdef", "{}", now)
        );
        let out = tool(Some("whsec_abcdef"))
            .call(args(&sig), &host.context())
            .await
            .map(|o| o.content);
        assert!(out.is_ok_and(|c| c.starts_with("Webhook signature is valid")));
        let err = tool(Some("whsec_other1"))
            .call(args(&sig), &host.context())
            .await
            .err();
        assert!(err.is_some_and(|e| e.kind == ErrorKind::Failed && e.message.contains("no `v1`")));
        assert!(host.http_requests().is_empty());
    }
}
