//! The `services` tools end to end: the real host (pinning, caps, timeouts, operator URLs) in
//! front of local stand-ins for the WhatsApp Cloud, Google OAuth + Sheets v4, Stripe and r8r
//! APIs. Each stand-in checks the request as the real API documents it and answers with the
//! shapes those APIs send. Every output is grepped for the configured secrets.

use base64::Engine as _;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tackle_host::{HostConfig, NativeHostProvider};
use tackle_protocol::config::{R8rConfig, StripeConfig, WhatsappConfig};
use tackle_protocol::{CallScope, ErrorKind, HostProvider, Tool, ToolContext, ToolError};
use tackle_tools::services::{
    extension, GsheetsAuth, GsheetsSettings, ServiceAccountKey, ServicesSettings,
};
use wiremock::matchers::{
    body_json, body_string, header, header_exists, method, path, query_param,
};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const WA_TOKEN: &str = "EAAG-whatsapp-SECRET-token";
const STRIPE_KEY: &str = "sk_test_51SECRETstripeKEY";
const WEBHOOK_SECRET: &str = "whsec_SECRETwebhook";
const SHEETS_TOKEN: &str = "ya29.SECRET-sheets-token";
const R8R_TOKEN: &str = "r8r-SECRET-token";
const TEST_KEY: &str = include_str!("../src/services/testdata/service_account_key.pem");

/// Everything a test saw come back, for the secret grep at its end.
#[derive(Default)]
struct Seen(Mutex<Vec<String>>);

impl Seen {
    fn record(&self, out: &Result<tackle_protocol::ToolOutput, ToolError>) {
        let text = match out {
            Ok(o) => format!("{}\n{:?}", o.content, o.structured),
            Err(e) => format!("{e:?}"),
        };
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(text);
    }

    fn assert_clean(&self) {
        let all = self.0.lock().unwrap_or_else(|e| e.into_inner()).join("\n");
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{STRIPE_KEY}:"));
        for secret in [
            WA_TOKEN,
            STRIPE_KEY,
            WEBHOOK_SECRET,
            SHEETS_TOKEN,
            R8R_TOKEN,
            basic.as_str(),
            "PRIVATE KEY",
        ] {
            assert!(!all.contains(secret), "{secret} leaked:\n{all}");
        }
    }
}

struct Setup {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    cx: ToolContext,
    /// One extension for the whole test, as the registry holds one.
    services: Arc<dyn tackle_protocol::Extension>,
    seen: Seen,
}

impl Setup {
    /// A host whose operator list holds the fake's URL, with no network grant at all: the
    /// configured base needs none, though it is on 127.0.0.1.
    fn new(server: &MockServer, settings: ServicesSettings) -> Self {
        let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let state = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let mut config = HostConfig::new(state.path());
        config.operator_hosts = vec![server.uri()];
        config.operator_hosts.extend(settings.operator_urls());
        let scope = CallScope {
            tool: "services".into(),
            session_id: "s".into(),
            agent: "default".into(),
            workspace: ws.path().to_path_buf(),
            grants: Default::default(),
            cancel: Default::default(),
            approved: false,
        };
        let host = NativeHostProvider::new(config).scoped(&scope);
        Self {
            _dirs: (ws, state),
            cx: ToolContext::new(&scope, "test", host),
            services: extension(settings),
            seen: Seen::default(),
        }
    }

    fn tool(&self, name: &str) -> Arc<dyn Tool> {
        self.services
            .tools()
            .into_iter()
            .find(|t| t.spec().name == name)
            .unwrap_or_else(|| panic!("no tool {name}"))
    }

    async fn call(
        &self,
        name: &str,
        args: Value,
    ) -> Result<tackle_protocol::ToolOutput, ToolError> {
        let out = self.tool(name).call(args, &self.cx).await;
        self.seen.record(&out);
        out
    }
}

fn base_settings() -> ServicesSettings {
    ServicesSettings {
        timeout: Duration::from_millis(1500),
        r8r_timeout: Duration::from_millis(1500),
        max_retry_after: Duration::from_secs(2),
        ..ServicesSettings::default()
    }
}

fn err_of(out: Result<tackle_protocol::ToolOutput, ToolError>) -> ToolError {
    match out {
        Ok(o) => panic!("expected an error, got {}", o.content),
        Err(e) => e,
    }
}

fn ok_of(out: Result<tackle_protocol::ToolOutput, ToolError>) -> tackle_protocol::ToolOutput {
    out.unwrap_or_else(|e| panic!("{:?}: {}", e.kind, e.message))
}

async fn received(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.unwrap_or_default()
}

// ---------------------------------------------------------------- whatsapp

fn whatsapp(server: &MockServer) -> Setup {
    let mut s = base_settings();
    s.whatsapp = Some(WhatsappConfig {
        access_token: WA_TOKEN.into(),
        phone_number_id: "106540352242922".into(),
        api_base: Some(server.uri()),
    });
    Setup::new(server, s)
}

fn wa_sent(id: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "messaging_product": "whatsapp",
        "contacts": [{"input": "14155550123", "wa_id": "14155550123"}],
        "messages": [{"id": id}]
    }))
}

#[tokio::test]
async fn whatsapp_sends_a_text_as_the_cloud_api_documents() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v18.0/106540352242922/messages"))
        .and(header(
            "authorization",
            format!("Bearer {WA_TOKEN}").as_str(),
        ))
        .and(header("content-type", "application/json"))
        .and(body_json(json!({
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": "14155550123",
            "type": "text",
            "text": {"preview_url": false, "body": "Your order shipped"}
        })))
        .respond_with(wa_sent("wamid.HBgLMTQxNTU1NTAxMjMVAgARGBI"))
        .expect(1)
        .mount(&server)
        .await;
    let s = whatsapp(&server);
    let out = ok_of(
        s.call(
            "whatsapp",
            json!({"to": "+1 415 555 0123", "message": "Your order shipped"}),
        )
        .await,
    );
    assert_eq!(
        out.content,
        "Sent WhatsApp message to 14155550123: message id wamid.HBgLMTQxNTU1NTAxMjMVAgARGBI"
    );
    s.seen.assert_clean();
}

#[tokio::test]
async fn whatsapp_sends_a_template_with_body_parameters() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v18.0/106540352242922/messages"))
        .and(body_json(json!({
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": "4915112345678",
            "type": "template",
            "template": {
                "name": "order_update",
                "language": {"code": "de"},
                "components": [{"type": "body", "parameters": [
                    {"type": "text", "text": "Ada"}, {"type": "text", "text": "42"}
                ]}]
            }
        })))
        .respond_with(wa_sent("wamid.T1"))
        .expect(1)
        .mount(&server)
        .await;
    let s = whatsapp(&server);
    let out = s
        .call(
            "whatsapp",
            json!({"to": "4915112345678", "template": "order_update",
                   "template_params": ["Ada", "42"], "language": "de"}),
        )
        .await;
    assert!(ok_of(out).content.ends_with("message id wamid.T1"));
    s.seen.assert_clean();
}

#[tokio::test]
async fn whatsapp_errors_carry_the_apis_message_and_never_the_token() {
    let server = MockServer::start().await;
    // A proxy that reflects the credential in its error must not hand it back.
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({
            "error": {
                "message": format!("(#131030) Recipient phone number not in allowed list; token {WA_TOKEN}"),
                "type": "OAuthException", "code": 131030, "fbtrace_id": "AbC"
            }
        })))
        .mount(&server)
        .await;
    let s = whatsapp(&server);
    let e = err_of(
        s.call("whatsapp", json!({"to": "14155550123", "message": "hi"}))
            .await,
    );
    assert_eq!(e.kind, ErrorKind::Failed);
    assert!(
        e.message.starts_with(
            "WhatsApp answered HTTP 400: (#131030) Recipient phone number not in allowed list"
        ),
        "{}",
        e.message
    );
    let e = err_of(
        s.call("whatsapp", json!({"to": "call me", "message": "hi"}))
            .await,
    );
    assert_eq!(e.kind, ErrorKind::InvalidArguments);
    let e = err_of(s.call("whatsapp", json!({"to": "14155550123"})).await);
    assert_eq!(e.kind, ErrorKind::InvalidArguments);
    assert_eq!(received(&server).await.len(), 1);
    s.seen.assert_clean();
}

#[tokio::test]
async fn whatsapp_times_out_and_is_not_configured_without_its_section() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(wa_sent("wamid.late").set_delay(Duration::from_secs(5)))
        .mount(&server)
        .await;
    let s = whatsapp(&server);
    let e = err_of(
        s.call("whatsapp", json!({"to": "14155550123", "message": "hi"}))
            .await,
    );
    assert_eq!(e.kind, ErrorKind::Timeout, "{}", e.message);
    let bare = Setup::new(&server, base_settings());
    let e = err_of(
        bare.call("whatsapp", json!({"to": "14155550123", "message": "hi"}))
            .await,
    );
    assert_eq!(
        (e.kind, e.message.as_str()),
        (
            ErrorKind::Failed,
            "services.whatsapp is not configured; add a `services.whatsapp` section to the config"
        )
    );
    s.seen.assert_clean();
}

// ---------------------------------------------------------------- gsheets

/// Google's token endpoint: a `jwt-bearer` grant whose assertion verifies with the key's
/// public half and carries the expected claims.
struct ValidAssertion {
    aud: String,
}

impl wiremock::Match for ValidAssertion {
    fn matches(&self, req: &Request) -> bool {
        let form: Vec<(String, String)> = url::form_urlencoded::parse(&req.body)
            .into_owned()
            .collect();
        let get = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        if get("grant_type").as_deref() != Some("urn:ietf:params:oauth:grant-type:jwt-bearer") {
            return false;
        }
        let Some(jwt) = get("assertion") else {
            return false;
        };
        let parts: Vec<&str> = jwt.split('.').collect();
        let [h, c, sig] = parts.as_slice() else {
            return false;
        };
        let dec = |s: &str| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(s)
                .unwrap_or_default()
        };
        use rustls_pki_types::pem::PemObject;
        let Ok(der) = rustls_pki_types::PrivatePkcs8KeyDer::from_pem_slice(TEST_KEY.as_bytes())
        else {
            return false;
        };
        let Ok(pair) = ring::signature::RsaKeyPair::from_pkcs8(der.secret_pkcs8_der()) else {
            return false;
        };
        let public = ring::signature::UnparsedPublicKey::new(
            &ring::signature::RSA_PKCS1_2048_8192_SHA256,
            pair.public().as_ref().to_vec(),
        );
        let signed = format!("{h}.{c}");
        let claims: Value = serde_json::from_slice(&dec(c)).unwrap_or_default();
        public.verify(signed.as_bytes(), &dec(sig)).is_ok()
            && claims["iss"] == "sheets-bot@proj.iam.gserviceaccount.com"
            && claims["aud"] == self.aud.as_str()
            && claims["scope"] == "https://www.googleapis.com/auth/spreadsheets"
    }
}

fn key_json(token_uri: &str) -> String {
    json!({
        "type": "service_account",
        "project_id": "proj",
        "private_key_id": "0123abcd",
        "private_key": TEST_KEY,
        "client_email": "sheets-bot@proj.iam.gserviceaccount.com",
        "client_id": "1234567890",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": token_uri,
    })
    .to_string()
}

fn gsheets(server: &MockServer, auth: GsheetsAuth) -> Setup {
    let mut s = base_settings();
    s.gsheets = Some(GsheetsSettings {
        api_base: Some(server.uri()),
        auth,
        token_uri: None,
    });
    Setup::new(server, s)
}

fn service_account(server: &MockServer) -> GsheetsAuth {
    let key = ServiceAccountKey::from_json(&key_json(&format!("{}/token", server.uri())))
        .unwrap_or_else(|e| panic!("{e}"));
    GsheetsAuth::ServiceAccount(Box::new(key))
}

#[tokio::test]
async fn gsheets_mints_one_token_from_the_key_and_reads_rows() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/token"))
        .and(header("content-type", "application/x-www-form-urlencoded"))
        .and(ValidAssertion {
            aud: format!("{}/token", server.uri()),
        })
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "access_token": SHEETS_TOKEN, "expires_in": 3599, "token_type": "Bearer"
        })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v4/spreadsheets/1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms/values/Class%20Data%21A1%3AB3"))
        .and(header("authorization", format!("Bearer {SHEETS_TOKEN}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "range": "'Class Data'!A1:B3",
            "majorDimension": "ROWS",
            "values": [["Student Name", "Gender"], ["Alexandra", "Female"], ["Andrew"]]
        })))
        .expect(2)
        .mount(&server)
        .await;
    let s = gsheets(&server, service_account(&server));
    let args = json!({"spreadsheet_id": "1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms",
                      "action": "read", "range": "Class Data!A1:B3"});
    let out = ok_of(s.call("gsheets", args.clone()).await);
    assert_eq!(
        out.content,
        "Row 1: Student Name | Gender\nRow 2: Alexandra | Female\nRow 3: Andrew"
    );
    // The second call reuses the cached token: the token endpoint expects one request.
    ok_of(s.call("gsheets", args).await);
    s.seen.assert_clean();
}

#[tokio::test]
async fn gsheets_appends_and_updates_with_user_entered_values() {
    let server = MockServer::start().await;
    let values = json!([["2024-01-05", "=SUM(1,2)"]]);
    Mock::given(method("POST"))
        .and(path("/v4/spreadsheets/sheet_1/values/Log%21A1:append"))
        .and(query_param("valueInputOption", "USER_ENTERED"))
        .and(query_param("insertDataOption", "INSERT_ROWS"))
        .and(header(
            "authorization",
            format!("Bearer {SHEETS_TOKEN}").as_str(),
        ))
        .and(body_json(json!({"values": values})))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "spreadsheetId": "sheet_1",
            "tableRange": "Log!A1:B4",
            "updates": {"spreadsheetId": "sheet_1", "updatedRange": "Log!A5:B5",
                        "updatedRows": 1, "updatedColumns": 2, "updatedCells": 2}
        })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("PUT"))
        .and(path("/v4/spreadsheets/sheet_1/values/Log%21A1%3AB2"))
        .and(query_param("valueInputOption", "USER_ENTERED"))
        .and(body_json(json!({"values": [["a", "b"], ["c", "d"]]})))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "spreadsheetId": "sheet_1", "updatedRange": "Log!A1:B2",
            "updatedRows": 2, "updatedColumns": 2, "updatedCells": 4
        })))
        .expect(1)
        .mount(&server)
        .await;
    let s = gsheets(&server, GsheetsAuth::Token(SHEETS_TOKEN.into()));
    let out = s
        .call(
            "gsheets",
            json!({"spreadsheet_id": "sheet_1", "action": "append", "range": "Log!A1", "values": values}),
        )
        .await;
    assert_eq!(ok_of(out).content, "Appended 1 row(s) to Log!A5:B5.");
    let out = s
        .call(
            "gsheets",
            json!({"spreadsheet_id": "sheet_1", "action": "update", "range": "Log!A1:B2",
                   "values": [["a", "b"], ["c", "d"]]}),
        )
        .await;
    assert_eq!(ok_of(out).content, "Updated 2 row(s) in Log!A1:B2.");
    s.seen.assert_clean();
}

#[tokio::test]
async fn gsheets_reports_refused_tokens_api_errors_and_bad_arguments() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/token"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({
            "error": "invalid_grant", "error_description": "Invalid JWT Signature."
        })))
        .mount(&server)
        .await;
    let s = gsheets(&server, service_account(&server));
    let args = json!({"spreadsheet_id": "abc", "action": "read", "range": "A1"});
    let e = err_of(s.call("gsheets", args.clone()).await);
    assert_eq!(
        e.message,
        "Google refused the service-account token (HTTP 400): Invalid JWT Signature."
    );
    let server2 = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(403).set_body_json(json!({
            "error": {"code": 403, "message": "The caller does not have permission", "status": "PERMISSION_DENIED"}
        })))
        .mount(&server2)
        .await;
    let s2 = gsheets(&server2, GsheetsAuth::Token(SHEETS_TOKEN.into()));
    let e = err_of(s2.call("gsheets", args).await);
    assert_eq!(
        e.message,
        "Google Sheets answered HTTP 403: The caller does not have permission"
    );
    let e = err_of(
        s2.call(
            "gsheets",
            json!({"spreadsheet_id": "a/../b", "action": "read", "range": "A1"}),
        )
        .await,
    );
    assert_eq!(e.kind, ErrorKind::InvalidArguments);
    let e = err_of(
        s2.call(
            "gsheets",
            json!({"spreadsheet_id": "abc", "action": "append", "range": "A1"}),
        )
        .await,
    );
    assert!(e.message.contains("needs `values`"), "{}", e.message);
    assert_eq!(received(&server2).await.len(), 1);
    s.seen.assert_clean();
    s2.seen.assert_clean();
}

// ---------------------------------------------------------------- stripe

fn stripe(server: &MockServer, webhook_secret: Option<&str>) -> Setup {
    let mut s = base_settings();
    s.stripe = Some(StripeConfig {
        secret_key: STRIPE_KEY.into(),
        api_base: Some(server.uri()),
        webhook_secret: webhook_secret.map(Into::into),
        currency: None,
    });
    Setup::new(server, s)
}

fn basic() -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{STRIPE_KEY}:"))
    )
}

fn payment_intent() -> Value {
    json!({
        "id": "pi_3MtwBwLkdIwHu7ix28a3tqPa",
        "object": "payment_intent",
        "amount": 2000,
        "currency": "usd",
        "status": "requires_payment_method",
        "client_secret": "pi_3MtwBwLkdIwHu7ix28a3tqPa_secret_YrKJUKribcBjcG8HVhfZluoGH",
        "description": "Order 42",
        "livemode": false
    })
}

#[tokio::test]
async fn stripe_creates_a_payment_form_encoded_and_never_echoes_client_secret() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/payment_intents"))
        .and(header("authorization", basic().as_str()))
        .and(header("content-type", "application/x-www-form-urlencoded"))
        .and(header_exists("idempotency-key"))
        .and(body_string("amount=2000&currency=usd&description=Order+42"))
        .respond_with(ResponseTemplate::new(200).set_body_json(payment_intent()))
        .expect(1)
        .mount(&server)
        .await;
    let s = stripe(&server, None);
    let out = ok_of(
        s.call(
            "stripe",
            json!({"action": "create_payment", "amount": 2000, "description": "Order 42"}),
        )
        .await,
    );
    assert!(
        out.content
            .starts_with("Created payment_intent pi_3MtwBwLkdIwHu7ix28a3tqPa."),
        "{}",
        out.content
    );
    let all = format!("{}{:?}", out.content, out.structured);
    assert!(
        !all.contains("client_secret") && !all.contains("_secret_"),
        "{all}"
    );
    s.seen.assert_clean();
}

#[tokio::test]
async fn stripe_retries_one_429_after_retry_after_with_the_same_idempotency_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/customers"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("Retry-After", "1")
                .set_body_json(
                    json!({"error": {"message": "Too many requests", "type": "rate_limit_error"}}),
                ),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/customers"))
        .and(body_string("email=ada%40example.com&name=Ada+Lovelace"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "cus_NffrFeUfNV2Hib", "object": "customer", "email": "ada@example.com", "name": "Ada Lovelace"
        })))
        .mount(&server)
        .await;
    let s = stripe(&server, None);
    let started = std::time::Instant::now();
    let out = s
        .call(
            "stripe",
            json!({"action": "create_customer", "email": "ada@example.com", "name": "Ada Lovelace"}),
        )
        .await;
    assert!(ok_of(out)
        .content
        .starts_with("Created customer cus_NffrFeUfNV2Hib."));
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "did not wait"
    );
    let reqs = received(&server).await;
    assert_eq!(reqs.len(), 2);
    let key = |r: &Request| {
        r.headers
            .get("idempotency-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    assert!(key(&reqs[0]).is_some());
    assert_eq!(key(&reqs[0]), key(&reqs[1]));
    s.seen.assert_clean();
}

#[tokio::test]
async fn stripe_gives_up_on_long_retry_after_and_on_a_second_429() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/balance"))
        .respond_with(ResponseTemplate::new(429).insert_header("Retry-After", "60"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v1/customers"))
        .respond_with(ResponseTemplate::new(429).insert_header("Retry-After", "0"))
        .mount(&server)
        .await;
    let s = stripe(&server, None);
    let e = err_of(s.call("stripe", json!({"action": "get_balance"})).await);
    assert!(e.message.contains("retry after 60 s"), "{}", e.message);
    let e = err_of(s.call("stripe", json!({"action": "list_customers"})).await);
    assert!(e.message.contains("still rate limiting"), "{}", e.message);
    assert_eq!(received(&server).await.len(), 3);
    s.seen.assert_clean();
}

#[tokio::test]
async fn stripe_gets_and_lists_as_json_and_reports_card_errors() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/payment_intents/pi_3MtwBwLkdIwHu7ix28a3tqPa"))
        .and(header("authorization", basic().as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(payment_intent()))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v1/customers"))
        .and(query_param("limit", "100"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "object": "list", "url": "/v1/customers", "has_more": false,
            "data": [{"id": "cus_1", "object": "customer"}]
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/refunds"))
        .and(body_string("payment_intent=pi_3MtwBwLkdIwHu7ix28a3tqPa&amount=500"))
        .respond_with(ResponseTemplate::new(402).set_body_json(json!({
            "error": {"code": "charge_already_refunded", "message": format!("Charge has already been refunded (key {STRIPE_KEY})"), "type": "invalid_request_error"}
        })))
        .mount(&server)
        .await;
    let s = stripe(&server, None);
    let out = ok_of(
        s.call(
            "stripe",
            json!({"action": "get_payment", "payment_id": "pi_3MtwBwLkdIwHu7ix28a3tqPa"}),
        )
        .await,
    );
    let v: Value = serde_json::from_str(&out.content).unwrap_or_default();
    assert_eq!(v["status"], "requires_payment_method");
    assert!(v.get("client_secret").is_none());
    let out = ok_of(
        s.call("stripe", json!({"action": "list_customers", "limit": 500}))
            .await,
    );
    assert!(out.content.contains("cus_1"));
    let e = err_of(
        s.call(
            "stripe",
            json!({"action": "create_refund", "payment_intent_id": "pi_3MtwBwLkdIwHu7ix28a3tqPa", "amount": 500}),
        )
        .await,
    );
    assert_eq!(
        e.message,
        "Stripe answered HTTP 402: Charge has already been refunded (key [redacted])"
    );
    let e = err_of(
        s.call(
            "stripe",
            json!({"action": "get_customer", "customer_id": "cus_1/../../balance"}),
        )
        .await,
    );
    assert_eq!(e.kind, ErrorKind::InvalidArguments);
    s.seen.assert_clean();
}

#[tokio::test]
async fn stripe_times_out_and_verifies_webhooks_without_a_request() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(5)))
        .mount(&server)
        .await;
    let s = stripe(&server, Some(WEBHOOK_SECRET));
    let e = err_of(s.call("stripe", json!({"action": "get_balance"})).await);
    assert_eq!(e.kind, ErrorKind::Timeout, "{}", e.message);
    let before = received(&server).await.len();

    let payload = r#"{"id":"evt_1","type":"payment_intent.succeeded"}"#;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default();
    let sign = |t: i64, secret: &str| {
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
        let tag = ring::hmac::sign(&key, format!("{t}.{payload}").as_bytes());
        tag.as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let verify =
        |sig: String| json!({"action": "verify_webhook", "payload": payload, "signature": sig});
    let good = format!(
        "t={now},v1={},v1={}",
        sign(now, "whsec_old"),
        sign(now, WEBHOOK_SECRET)
    );
    let out = ok_of(s.call("stripe", verify(good)).await);
    assert!(out
        .content
        .contains("event evt_1 of type payment_intent.succeeded"));
    let old = now - 301;
    let e = err_of(
        s.call(
            "stripe",
            verify(format!("t={old},v1={}", sign(old, WEBHOOK_SECRET))),
        )
        .await,
    );
    assert!(e.message.contains("more than the 300 s"), "{}", e.message);
    let e = err_of(
        s.call(
            "stripe",
            verify(format!("t={now},v1={}", sign(now, "whsec_x"))),
        )
        .await,
    );
    assert!(
        e.message.contains("no `v1` signature matches"),
        "{}",
        e.message
    );
    assert_eq!(received(&server).await.len(), before);
    s.seen.assert_clean();
}

// ---------------------------------------------------------------- r8r

fn r8r(server: &MockServer) -> Setup {
    let mut s = base_settings();
    s.r8r = Some(R8rConfig {
        url: Some(server.uri()),
        token: Some(R8R_TOKEN.into()),
    });
    Setup::new(server, s)
}

#[tokio::test]
async fn r8r_lists_shows_creates_and_emits() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/workflows"))
        .and(header(
            "authorization",
            format!("Bearer {R8R_TOKEN}").as_str(),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([
            {"name": "daily-report", "description": "Mail the numbers", "enabled": true},
            {"name": "cleanup", "description": "", "enabled": false}
        ])))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/workflows/daily-report"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "name": "daily-report", "definition": "nodes: []", "enabled": true
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/workflows"))
        .and(body_json(json!({"name": "notify", "definition": "trigger: manual\nnodes: []\n", "enabled": true})))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": "wf_9", "node_count": 0, "trigger_count": 1})))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/events/publish"))
        .and(body_json(
            json!({"event": "order.created", "data": {"id": 7}, "source": "tackle"}),
        ))
        .respond_with(ResponseTemplate::new(202).set_body_json(json!({"accepted": true})))
        .mount(&server)
        .await;
    let s = r8r(&server);
    let out = ok_of(s.call("r8r", json!({"action": "list"})).await);
    assert_eq!(
        out.content,
        "daily-report (enabled) — Mail the numbers\ncleanup (disabled)"
    );
    let out = ok_of(
        s.call("r8r", json!({"action": "show", "workflow": "daily-report"}))
            .await,
    );
    assert!(
        out.content.contains("\"definition\": \"nodes: []\""),
        "{}",
        out.content
    );
    let out = s
        .call(
            "r8r",
            json!({"action": "create", "workflow": "notify", "definition": "trigger: manual\nnodes: []\n"}),
        )
        .await;
    assert_eq!(
        ok_of(out).content,
        "Created workflow `notify` (id wf_9, 0 node(s), 1 trigger(s))."
    );
    let out = s
        .call(
            "r8r",
            json!({"action": "emit", "event": "order.created", "data": {"id": 7}}),
        )
        .await;
    assert_eq!(ok_of(out).content, "Published event `order.created`.");
    s.seen.assert_clean();
}

#[tokio::test]
async fn r8r_runs_report_output_failure_and_pending_executions() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/workflows/daily-report/execute"))
        .and(body_json(json!({"input": {"day": "mon"}, "wait": true})))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "execution_id": "ex_1", "status": "completed", "output": {"sent": 3}, "duration_ms": 41
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/workflows/broken/execute"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "execution_id": "ex_2", "status": "failed", "error": "node http-1: connection refused"
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/workflows/slow/execute"))
        .and(body_json(json!({"input": {}, "wait": false})))
        .respond_with(
            ResponseTemplate::new(202)
                .set_body_json(json!({"execution_id": "ex_3", "status": "running"})),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/executions/ex_3"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"execution_id": "ex_3", "status": "pending"})),
        )
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/workflows/missing/execute"))
        .respond_with(ResponseTemplate::new(404).set_body_json(json!({
            "code": "WORKFLOW_NOT_FOUND", "message": "workflow 'missing' not found"
        })))
        .mount(&server)
        .await;
    let s = r8r(&server);
    let out = ok_of(
        s.call(
            "r8r",
            json!({"workflow": "daily-report", "inputs": {"day": "mon"}}),
        )
        .await,
    );
    assert!(
        out.content
            .starts_with("workflow `daily-report` execution ex_1 completed in 41 ms.\nOutput:"),
        "{}",
        out.content
    );
    let e = err_of(s.call("r8r", json!({"workflow": "broken"})).await);
    assert_eq!(
        e.message,
        "workflow `broken` execution ex_2 failed: node http-1: connection refused"
    );
    let out = ok_of(
        s.call("r8r", json!({"workflow": "slow", "wait": false}))
            .await,
    );
    assert!(out.content.contains("is running"), "{}", out.content);
    let out = ok_of(
        s.call("r8r", json!({"action": "status", "execution_id": "ex_3"}))
            .await,
    );
    assert!(out.content.contains("is pending"), "{}", out.content);
    let e = err_of(s.call("r8r", json!({"workflow": "missing"})).await);
    assert_eq!(
        e.message,
        "r8r answered HTTP 404: WORKFLOW_NOT_FOUND workflow 'missing' not found"
    );
    let e = err_of(s.call("r8r", json!({"workflow": "../../etc"})).await);
    assert_eq!(e.kind, ErrorKind::InvalidArguments);
    s.seen.assert_clean();
}

#[tokio::test]
async fn r8r_times_out() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(5)))
        .mount(&server)
        .await;
    let s = r8r(&server);
    let e = err_of(s.call("r8r", json!({"workflow": "w"})).await);
    assert_eq!(e.kind, ErrorKind::Timeout, "{}", e.message);
    s.seen.assert_clean();
}

/// A base the operator did not configure is checked like any URL: loopback is refused.
#[tokio::test]
async fn an_unlisted_local_base_is_denied_by_the_ssrf_guard() {
    let server = MockServer::start().await;
    let mut settings = base_settings();
    settings.whatsapp = Some(WhatsappConfig {
        access_token: WA_TOKEN.into(),
        phone_number_id: "1".into(),
        api_base: Some(server.uri()),
    });
    let mut s = Setup::new(&server, settings);
    // The same tool, on a host whose operator list does not hold the fake.
    let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let scope = CallScope {
        tool: "whatsapp".into(),
        session_id: "s".into(),
        agent: "default".into(),
        workspace: ws.path().to_path_buf(),
        grants: Default::default(),
        cancel: Default::default(),
        approved: false,
    };
    let host = NativeHostProvider::new(HostConfig::new(ws.path())).scoped(&scope);
    s.cx = ToolContext::new(&scope, "test", host);
    let e = err_of(
        s.call("whatsapp", json!({"to": "14155550123", "message": "hi"}))
            .await,
    );
    assert_eq!(e.kind, ErrorKind::Denied, "{}", e.message);
    assert!(received(&server).await.is_empty());
    s.seen.assert_clean();
}
