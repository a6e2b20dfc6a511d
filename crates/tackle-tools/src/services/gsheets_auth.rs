//! Google service-account tokens: the key's PEM private key signs an RS256 JWT
//! (`iss` = client_email, `scope`, `aud` = token_uri, one hour), which the key's `token_uri`
//! exchanges for an OAuth access token (RFC 7523 `jwt-bearer` grant). The token is cached
//! until shortly before it expires, so a run of calls mints one token.

use base64::Engine as _;
use ring::signature::{RsaKeyPair, RSA_PKCS1_SHA256};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::PrivatePkcs8KeyDer;
use serde::Deserialize;
use serde_json::json;
use std::fmt;
use std::time::{Duration, Instant};

/// What the Sheets tool asks for: read and write spreadsheets, nothing else.
pub(crate) const SCOPE: &str = "https://www.googleapis.com/auth/spreadsheets";
/// A token is renewed this long before Google says it expires, so a call never races it.
const EARLY: Duration = Duration::from_secs(60);
const LIFETIME_SECS: u64 = 3600;

/// Why a service-account key cannot be used.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// The file is not a service-account JSON key.
    #[error("not a service-account JSON key: {0}")]
    Json(String),
    /// A required field is missing or empty.
    #[error("the key's `{0}` is missing or empty")]
    Missing(&'static str),
    /// `private_key` is not a PEM PKCS#8 RSA key.
    #[error("the key's private_key is not a PEM PKCS#8 RSA key: {0}")]
    Key(String),
    /// `token_uri` is not an http(s) URL.
    #[error("the key's token_uri `{0}` is not an http(s) URL")]
    TokenUri(String),
    /// Signing the token request failed.
    #[error("signing the token request failed")]
    Sign,
}

/// The fields of a service-account key file that minting a token needs.
#[derive(Clone, Deserialize)]
pub struct ServiceAccountKey {
    /// The account the token is minted for.
    pub client_email: String,
    /// The PEM PKCS#8 RSA key that signs the request; secret.
    pub private_key: String,
    /// The key's id, sent as the JWT `kid` when present.
    #[serde(default)]
    pub private_key_id: Option<String>,
    /// Where tokens are requested (Google's endpoint when the file has none).
    #[serde(default = "default_token_uri")]
    pub token_uri: String,
}

fn default_token_uri() -> String {
    "https://oauth2.googleapis.com/token".into()
}

// Never prints the private key, wherever a key ends up in a debug line.
impl fmt::Debug for ServiceAccountKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceAccountKey")
            .field("client_email", &self.client_email)
            .field("token_uri", &self.token_uri)
            .finish_non_exhaustive()
    }
}

impl ServiceAccountKey {
    /// Parse and check a key file's text: the private key must load, the token URI be http(s).
    pub fn from_json(text: &str) -> Result<Self, AuthError> {
        let key: Self = serde_json::from_str(text).map_err(|e| AuthError::Json(e.to_string()))?;
        if key.client_email.trim().is_empty() {
            return Err(AuthError::Missing("client_email"));
        }
        if key.private_key.trim().is_empty() {
            return Err(AuthError::Missing("private_key"));
        }
        key_pair(&key.private_key)?;
        match url::Url::parse(&key.token_uri) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(key),
            _ => Err(AuthError::TokenUri(key.token_uri)),
        }
    }

    /// The signed JWT asking `aud` for a token with [`SCOPE`], issued at `now` (Unix seconds).
    pub(crate) fn assertion(&self, aud: &str, now: u64) -> Result<String, AuthError> {
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let mut header = json!({"alg": "RS256", "typ": "JWT"});
        if let Some(kid) = self.private_key_id.as_deref().filter(|k| !k.is_empty()) {
            header["kid"] = json!(kid);
        }
        let claims = json!({
            "iss": self.client_email,
            "scope": SCOPE,
            "aud": aud,
            "iat": now,
            "exp": now + LIFETIME_SECS,
        });
        let signing_input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let pair = key_pair(&self.private_key)?;
        let mut sig = vec![0u8; pair.public().modulus_len()];
        pair.sign(
            &RSA_PKCS1_SHA256,
            &ring::rand::SystemRandom::new(),
            signing_input.as_bytes(),
            &mut sig,
        )
        .map_err(|_| AuthError::Sign)?;
        Ok(format!("{signing_input}.{}", b64(&sig)))
    }
}

fn key_pair(pem: &str) -> Result<RsaKeyPair, AuthError> {
    let der = PrivatePkcs8KeyDer::from_pem_slice(pem.as_bytes())
        .map_err(|e| AuthError::Key(e.to_string()))?;
    RsaKeyPair::from_pkcs8(der.secret_pkcs8_der()).map_err(|e| AuthError::Key(e.to_string()))
}

/// A minted token and when to stop using it.
#[derive(Default)]
pub(crate) struct TokenCache(std::sync::Mutex<Option<(String, Instant)>>);

impl TokenCache {
    pub(crate) fn get(&self) -> Option<String> {
        let slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        slot.as_ref()
            .filter(|(_, until)| Instant::now() < *until)
            .map(|(t, _)| t.clone())
    }

    /// Keep `token` for `expires_in` seconds (Google's answer), less a safety margin.
    pub(crate) fn put(&self, token: String, expires_in: u64) {
        let keep = Duration::from_secs(expires_in).saturating_sub(EARLY);
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *slot = Some((token, Instant::now() + keep));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A 2048-bit RSA key made for these tests only (`openssl genpkey -algorithm RSA`).
    pub(crate) const TEST_KEY: &str = include_str!("testdata/service_account_key.pem");

    pub(crate) fn key_json(token_uri: &str) -> String {
        json!({
            "type": "service_account",
            "client_email": "bot@proj.iam.gserviceaccount.com",
            "private_key_id": "kid-1",
            "private_key": TEST_KEY,
            "token_uri": token_uri,
        })
        .to_string()
    }

    #[test]
    fn the_assertion_is_an_rs256_jwt_that_verifies_with_the_public_key() {
        let key = ServiceAccountKey::from_json(&key_json("https://oauth2.example/token"))
            .unwrap_or_else(|e| panic!("{e}"));
        let jwt = key
            .assertion("https://oauth2.example/token", 1_700_000_000)
            .unwrap_or_else(|e| panic!("{e}"));
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let dec = |s: &str| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(s)
                .unwrap_or_default()
        };
        let header: serde_json::Value = serde_json::from_slice(&dec(parts[0])).unwrap_or_default();
        assert_eq!(
            header,
            json!({"alg": "RS256", "typ": "JWT", "kid": "kid-1"})
        );
        let claims: serde_json::Value = serde_json::from_slice(&dec(parts[1])).unwrap_or_default();
        assert_eq!(claims["iss"], "bot@proj.iam.gserviceaccount.com");
        assert_eq!(claims["scope"], SCOPE);
        assert_eq!(claims["aud"], "https://oauth2.example/token");
        assert_eq!(claims["exp"], 1_700_003_600u64);
        let pair = key_pair(TEST_KEY).unwrap_or_else(|e| panic!("{e}"));
        let public = ring::signature::UnparsedPublicKey::new(
            &ring::signature::RSA_PKCS1_2048_8192_SHA256,
            pair.public().as_ref().to_vec(),
        );
        let signed = format!("{}.{}", parts[0], parts[1]);
        assert!(public.verify(signed.as_bytes(), &dec(parts[2])).is_ok());
    }

    #[test]
    fn bad_keys_are_named_and_never_printed() {
        let err =
            ServiceAccountKey::from_json(r#"{"client_email":"a","private_key":"nope"}"#).err();
        assert!(matches!(err, Some(AuthError::Key(_))), "{err:?}");
        let err = ServiceAccountKey::from_json(&key_json("file:///etc/passwd")).err();
        assert!(matches!(err, Some(AuthError::TokenUri(_))), "{err:?}");
        let key = ServiceAccountKey::from_json(&key_json("https://t.example/"));
        let shown = format!("{key:?}");
        assert!(!shown.contains("PRIVATE KEY"), "{shown}");
    }

    #[test]
    fn a_cached_token_is_used_until_near_expiry() {
        let cache = TokenCache::default();
        assert_eq!(cache.get(), None);
        cache.put("tok".into(), 3600);
        assert_eq!(cache.get().as_deref(), Some("tok"));
        cache.put("short".into(), 30);
        assert_eq!(cache.get(), None);
    }
}
