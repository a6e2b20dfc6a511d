//! Adversarial cases for the secret redactor: every secret here must disappear from the
//! output, every ordinary text must come back unchanged, and nothing may panic or slow down.

use std::time::{Duration, Instant};
use tackle_policy::secrets::{SecretRedactor, REDACTED};

fn redact(text: &str) -> String {
    SecretRedactor::new(vec!["c0nfig/Secret+Value \"q\"".into()])
        .redact(text)
        .into_owned()
}

/// Asserts that `secret` no longer appears in the redacted form of `text`.
fn assert_hidden(text: &str, secret: &str) {
    let out = redact(text);
    assert!(
        !out.contains(secret),
        "`{secret}` survived in `{out}` (input `{text}`)"
    );
    assert!(out.contains(REDACTED), "nothing redacted in `{out}`");
}

#[test]
fn a_pgp_private_key_block_is_redacted() {
    let key = "lQOYBF1234567890abcdefSECRETKEYMATERIAL";
    assert_hidden(
        &format!(
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{key}\n-----END PGP PRIVATE KEY BLOCK-----\n"
        ),
        key,
    );
}

#[test]
fn a_url_encoded_pem_private_key_is_redacted() {
    let body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7";
    assert_hidden(
        &format!("key=-----BEGIN%20PRIVATE%20KEY-----%0A{body}%0A-----END%20PRIVATE%20KEY-----"),
        body,
    );
    assert_hidden(
        &format!("key=-----BEGIN+RSA+PRIVATE+KEY-----%0A{body}"),
        body,
    );
}

#[test]
fn a_base64_encoded_pem_private_key_is_redacted() {
    // base64 of "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAsecretsecret\n-----END RSA PRIVATE KEY-----\n"
    let b64 = "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVBc2VjcmV0c2VjcmV0Ci0tLS0tRU5EIFJTQSBQUklWQVRFIEtFWS0tLS0tCg==";
    assert_hidden(&format!("data:\n  blob: {b64}\n"), b64);
    // The same for a certificate stays: it is public.
    let cert = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJJakFOQmdrcWhraUc5dzBCQVFFRkFBT0NBUThBTUlJQkNnS0NBUUVB";
    assert_eq!(redact(&format!("ca: {cert}")), format!("ca: {cert}"));
}

#[test]
fn a_gcp_service_account_private_key_in_json_is_redacted() {
    let body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDabc";
    let json = format!(
        r#"{{"type": "service_account", "private_key_id": "0123456789abcdef0123456789abcdef01234567", "private_key": "-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n", "client_email": "x@y.iam.gserviceaccount.com"}}"#
    );
    assert_hidden(&json, body);
    assert_hidden(&json, "0123456789abcdef0123456789abcdef01234567");
}

#[test]
fn json_escaped_aws_secret_is_redacted() {
    assert_hidden(
        r#"{"aws_secret_access_key": "wJalrXUtnFEMI\/K7MDENG\/bPxRfiCYEXAMPLEKEY"}"#,
        "bPxRfiCYEXAMPLEKEY",
    );
    assert_hidden(
        r#"{"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}"#,
        "bPxRfiCYEXAMPLEKEY",
    );
}

#[test]
fn authorization_headers_in_every_shape_are_redacted() {
    for (text, secret) in [
        (
            r#"{"Authorization": "Basic dXNlcjpodW50ZXIy"}"#,
            "dXNlcjpodW50ZXIy",
        ),
        (
            r#"headers = {'authorization': 'Bearer shorttok123'}"#,
            "shorttok123",
        ),
        ("authorization: Bearer abcdefgh12", "abcdefgh12"),
        ("Proxy-Authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
        (
            "Authorization: 9f8e7d6c5b4a39281706",
            "9f8e7d6c5b4a39281706",
        ),
        (
            "Cookie: session=8f14e45fceea167a5a36dedd4bea2543; theme=dark",
            "8f14e45fceea167a5a36dedd4bea2543",
        ),
        (
            "set-cookie: sid=Zm9vYmFyYmF6cXV4; HttpOnly",
            "Zm9vYmFyYmF6cXV4",
        ),
    ] {
        assert_hidden(text, secret);
    }
}

#[test]
fn passwords_in_urls_are_redacted_even_with_an_at_sign_inside() {
    assert_hidden("postgres://app:p@ss-w0rd@db.example.com/x", "ss-w0rd");
    assert_hidden(
        "DATABASE_URL=mysql://root:hunter22@127.0.0.1:3306/db",
        "hunter22",
    );
    assert_hidden("https://user:p%40ss%3Aw0rd@example.com/", "p%40ss%3Aw0rd");
}

#[test]
fn quoted_values_with_spaces_and_escapes_are_redacted_whole() {
    assert_hidden(
        r#"PASSWORD="correct horse battery staple""#,
        "battery staple",
    );
    assert_hidden(r#"db_password: 'correct horse battery'"#, "horse battery");
    assert_hidden(r#"{"password": "ab\"cdef ghij"}"#, "cdef ghij");
}

#[test]
fn passwords_that_start_like_placeholders_are_still_redacted() {
    for text in [
        "PASSWORD=$ecretP4ss!",
        "password: %Zx81!kqA",
        "SECRET=*a9Kp2!zQ",
        "db_password=(Tr0ub4dor)&3",
        "PASSWORD=[h4x0r]-pass",
    ] {
        let value = text
            .split_once(['=', ':'])
            .map(|(_, v)| v.trim())
            .unwrap_or("");
        assert_hidden(text, value);
    }
}

#[test]
fn placeholders_and_references_stay() {
    for text in [
        "PASSWORD=${DB_PASSWORD}",
        "password: $DB_PASSWORD",
        "password: <your-password>",
        "password: {{ vault_password }}",
        "PASSWORD=%DB_PASSWORD%",
        "password: ********",
        "password: [redacted]",
        "MAX_TOKENS=4096",
        "keyboard=qwerty12",
    ] {
        assert_eq!(redact(text), text);
    }
}

#[test]
fn keys_glued_to_other_word_characters_are_redacted() {
    for (text, secret) in [
        ("id=%22AKIAIOSFODNN7EXAMPLE%22", "AKIAIOSFODNN7EXAMPLE"),
        ("xAKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
        ("AKIAIOSFODNN7EXAMPLE_suffix", "AKIAIOSFODNN7EXAMPLE"),
        (
            "OPENAI_sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv",
            "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv",
        ),
        (
            "token%3Dsk-Ab3dEf6hIj9kLm2nOp5qRs8tUvWx",
            "Ab3dEf6hIj9kLm2nOp5qRs8tUvWx",
        ),
        (
            "Xghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "abcdefghijklmnopqrstuvwxyz0123456789",
        ),
    ] {
        assert_hidden(text, secret);
    }
}

#[test]
fn kebab_case_words_containing_sk_dash_are_not_redacted() {
    for text in [
        "the risk-assessment-for-quarterly-report is due",
        "see task-management-and-scheduling-notes",
    ] {
        assert_eq!(redact(text), text);
    }
}

#[test]
fn other_well_known_token_shapes_are_redacted() {
    for secret in [
        "glpat-Ab3dEf6hIj9kLm2nOp5q",
        "npm_Ab3dEf6hIj9kLm2nOp5qRs8tUvWx1yZ2aB3c",
        "hf_Ab3dEf6hIj9kLm2nOp5qRs8tUvWx1yZ2a",
        "ya29.a0Ab3dEf6hIj9kLm2nOp5qRs8tUvWx",
        "SG.Ab3dEf6hIj9kLm2nOp5qRs.Ab3dEf6hIj9kLm2nOp5qRs8tUvWx1yZ2aB3cD4eF5gH6i",
        "whsec_Ab3dEf6hIj9kLm2nOp5qRs8tUvWx",
        "xapp-1-A0123456789-0123456789012-abcdef0123456789",
    ] {
        assert_hidden(&format!("value {secret} end"), secret);
    }
}

#[test]
fn env_file_lines_are_redacted() {
    let env = "OPENAI_API_KEY=sk-Ab3dEf6hIj9kLm2nOp5qRs8tUvWx\nexport AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nSTRIPE_KEY=\"sk_live_Ab3dEf6hIj9kLm2nOp5q\"\nSECRET_KEY_BASE=9f8e7d6c5b4a39281706f5e4d3c2b1a0\nDEBUG=true\n";
    let out = redact(env);
    for secret in [
        "Ab3dEf6hIj9kLm2nOp5qRs8tUvWx",
        "bPxRfiCYEXAMPLEKEY",
        "sk_live_Ab3dEf6hIj9kLm2nOp5q",
        "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
    ] {
        assert!(!out.contains(secret), "{secret} survived in {out}");
    }
    assert!(out.contains("DEBUG=true"));
}

#[test]
fn a_config_secret_is_redacted_when_url_or_json_encoded() {
    for text in [
        "c0nfig/Secret+Value \"q\"",
        "x=c0nfig%2FSecret%2BValue%20%22q%22",
        "x=c0nfig%2fSecret%2bValue+%22q%22",
        r#"{"v": "c0nfig\/Secret+Value \"q\""}"#,
        r#"{"v": "c0nfig\u002fSecret\u002BValue \u0022q\u0022"}"#,
    ] {
        let out = redact(text);
        assert!(!out.contains("Secret"), "{out}");
    }
}

#[test]
fn redaction_never_panics_on_hostile_text_and_stays_linear() {
    let pieces = [
        "-----BEGIN PRIVATE KEY-----",
        "LS0tLS1CRUdJTi",
        "password=",
        "\"",
        "\\",
        "%",
        "Authorization: ",
        "Bearer ",
        "://a:",
        "@",
        "é",
        "\u{10FFFF}",
        "sk-",
        "AKIA",
        "=",
    ];
    let mut text = String::new();
    for i in 0..20_000 {
        text.push_str(pieces[i % pieces.len()]);
    }
    let start = Instant::now();
    let _ = redact(&text);
    let big = "LS0tLS1CRUdJTi".to_string() + &"A".repeat(2_000_000);
    let _ = redact(&big);
    let pw = "password=\"".to_string() + &"\\\"".repeat(500_000);
    let _ = redact(&pw);
    eprintln!("hostile inputs (~3.7 MB) redacted in {:?}", start.elapsed());
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_pem_body_read_from_an_offset_is_redacted_up_to_its_end_line() {
    let body = "MIIEowIBAAKCAQEAx4Secretsecretsecretsecret\nQZ8bLrX2eyJhbGciOiJIUzI1NiJ9abcdefgh\n";
    assert_hidden(
        &format!("{body}-----END RSA PRIVATE KEY-----\n"),
        "Secretsecret",
    );
    let openssh = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz\nc2gtZWQyNTUxOQAAACDsecretsecretsecret\n";
    assert_hidden(openssh, "c2gtZWQyNTUxOQAAACDsecretsecretsecret");
}

#[test]
fn curl_user_passwords_are_redacted() {
    assert_hidden("$ curl -u admin:hunter22 https://x.example", "hunter22");
    assert_hidden("curl --user 'admin:s3cr3t!' https://x.example", "s3cr3t!");
    assert_eq!(redact("run -u 1000 as user"), "run -u 1000 as user");
}

#[test]
fn a_huge_list_of_config_secrets_never_switches_redaction_off() {
    let many: Vec<String> = (0..3_000)
        .map(|i| format!("cfg/secret+value-{i:05}-with.some=punctuation&more/chars!"))
        .collect();
    let r = SecretRedactor::new(many);
    let out = r.redact("key ghp_abcdefghijklmnopqrstuvwxyz0123456789 and cfg/secret+value-00042-with.some=punctuation&more/chars! end");
    assert!(!out.contains("ghp_"), "{out}");
    assert!(!out.contains("00042"), "{out}");
}

#[test]
fn webhooks_bot_tokens_and_signed_url_signatures_are_redacted() {
    for (text, secret) in [
        (
            "https://discord.com/api/webhooks/123456789012345678/Ab3dEf6hIj9kLm2nOp5qRs8tUv",
            "Ab3dEf6hIj9kLm2nOp5qRs8tUv",
        ),
        (
            "bot 1234567890:AAAb3dEf6hIj9kLm2nOp5qRs8tUvWx1yZ2a ready",
            "AAAb3dEf6hIj9kLm2nOp5qRs8tUvWx1yZ2a",
        ),
        (
            "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2030&sig=Ab3dEf6hIj9kLm2nOp5q%2BRs8tUv%3D",
            "Ab3dEf6hIj9kLm2nOp5q",
        ),
        (
            "https://b.s3.amazonaws.com/k?X-Amz-Signature=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "0123456789abcdef0123456789abcdef",
        ),
    ] {
        assert_hidden(text, secret);
    }
}
