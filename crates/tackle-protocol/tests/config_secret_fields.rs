//! Every config field named like a credential is typed `Secret`, so the output redactor (which
//! finds credentials by type) knows it. A new `api_key: Option<String>` fails here.

use tackle_protocol::config::Config;

/// `(file name, source)` of every file of `src/config/`, so a section added in a new file is
/// scanned too.
fn sources() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/config");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect();
    out.sort();
    assert!(
        out.len() > 1,
        "no config sources found in {}",
        dir.display()
    );
    out
}

/// Field names that hold a credential: the last word is one of these.
const CREDENTIAL_WORDS: &[&str] = &[
    "key",
    "keys",
    "token",
    "tokens",
    "secret",
    "secrets",
    "password",
    "passwd",
    "passphrase",
    "authorization",
    "auth",
    "cookie",
    "cookies",
    "credential",
    "credentials",
    "headers",
    "env",
];

/// Fields whose name says credential but whose value is not one, each with why (an entry here
/// must say what the field holds instead).
const NOT_SECRET: &[(&str, &str)] = &[(
    "tokens",
    "gateway.tokens: each token's name, scopes and SHA-256 hash; the token itself is never in the config",
)];

fn looks_like_credential(name: &str) -> bool {
    let last = name.rsplit('_').next().unwrap_or(name);
    CREDENTIAL_WORDS.contains(&last)
}

/// `(line number, field name, type)` of every `name: Type,` line of a struct or enum variant.
fn fields(source: &str) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    for (i, line) in source.lines().enumerate() {
        let line = line.trim();
        if line.starts_with("//") || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("pub ").unwrap_or(line);
        let Some((name, ty)) = line.split_once(':') else {
            continue;
        };
        let is_ident = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        // A field declaration ends with `,` and its type starts with a type name (not `:`).
        if !is_ident || !line.ends_with(',') || ty.starts_with(':') {
            continue;
        }
        out.push((
            i + 1,
            name.to_string(),
            ty.trim().trim_end_matches(',').to_string(),
        ));
    }
    out
}

#[test]
fn every_field_named_like_a_credential_is_typed_secret() {
    let mut wrong = Vec::new();
    for (file, source) in sources() {
        for (line, name, ty) in fields(&source) {
            if !looks_like_credential(&name) || NOT_SECRET.iter().any(|(n, _)| *n == name) {
                continue;
            }
            if !ty.contains("Secret") {
                wrong.push(format!("config/{file}:{line}: `{name}: {ty}`"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "credential fields not typed `Secret` (the redactor would not know them):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_scan_sees_the_fields_it_must_see() {
    // The check above is only as good as its parser: it must find the known credential fields.
    let names: Vec<String> = sources()
        .iter()
        .flat_map(|(_, source)| fields(source))
        .map(|(_, n, _)| n)
        .collect();
    for want in [
        "api_key",
        "bearer_token",
        "client_secret",
        "bot_token",
        "access_token",
        "secret_key",
        "webhook_secret",
        "token",
        "headers",
        "env",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} not found");
    }
    assert!(looks_like_credential("api_key") && !looks_like_credential("token_uri"));
}

#[test]
fn every_credential_of_a_full_config_is_found_by_type() {
    let yaml = serde_json::json!({
        "backends": [{"name": "b", "type": "openai", "api_key": "backend-key"}],
        "web_search": {"backends": [{"type": "brave", "api_key": "search-key"}]},
        "mcp_servers": {"m": {"url": "http://127.0.0.1:1/mcp",
            "headers": {"Authorization": "Bearer mcp-header"},
            "env": {"TOKEN": "mcp-env"},
            "oauth": {"client_secret": "oauth-secret"}}},
        "mcp": {"bearer_token": "serve-token"},
        "transcribe": {"api_key": "transcribe-key"},
        "channels": {
            "w": {"type": "webhook", "url": "http://127.0.0.1:1/hook-url", "headers": {"X-Key": "hook-header"}},
            "t": {"type": "telegram", "bot_token": "tg-token"}
        },
        "services": {
            "whatsapp": {"access_token": "wa-token", "phone_number_id": "1"},
            "gsheets": {"access_token": "gs-token"},
            "stripe": {"secret_key": "stripe-key", "webhook_secret": "stripe-whsec"},
            "r8r": {"token": "r8r-token"},
            "github": {"token": "gh-token"}
        }
    });
    let config: Config = serde_json::from_value(yaml).unwrap();
    let mut found: Vec<String> = config.secrets().into_iter().map(|f| f.value).collect();
    found.sort();
    let mut want = vec![
        "backend-key",
        "search-key",
        "Bearer mcp-header",
        "mcp-env",
        "oauth-secret",
        "serve-token",
        "transcribe-key",
        "http://127.0.0.1:1/hook-url",
        "hook-header",
        "tg-token",
        "wa-token",
        "gs-token",
        "stripe-key",
        "stripe-whsec",
        "r8r-token",
        "gh-token",
    ];
    want.sort();
    assert_eq!(found, want);
    let paths: Vec<String> = config.secrets().into_iter().map(|f| f.path).collect();
    assert!(
        paths.contains(&"transcribe.api_key".to_string()),
        "{paths:?}"
    );
    assert!(
        paths.contains(&"mcp_servers.m.headers.Authorization".to_string()),
        "{paths:?}"
    );
}
