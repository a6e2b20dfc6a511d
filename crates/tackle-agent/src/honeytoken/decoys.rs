//! The decoy credentials themselves: made once per state directory from the kernel's random
//! generator, kept there (0600) so they are the same on every run, and shaped like the real
//! thing so that an injected instruction looking for keys takes them. They open nothing.

use super::HoneytokenError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tackle_store::private_file::Publish;

/// The directory under the state directory that holds the decoys and the trip log.
pub const DIR: &str = "honeytokens";
const DECOYS_FILE: &str = "decoys.json";
/// The decoy `~/.aws/credentials`, shown to commands read-only inside the sandbox.
const AWS_FILE: &str = "aws-credentials";
/// Where, under the sandbox's home, the decoy AWS file appears.
pub const AWS_FILE_IN_HOME: &str = ".aws/credentials";

const UPPER_DIGITS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const AWS_SECRET_CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// One decoy: what it is called in refusals and the audit log, and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoy {
    /// What it is called in refusals and the audit log (`AWS access key id`); never its value.
    pub label: &'static str,
    /// The decoy value itself.
    pub value: String,
    /// How much of the value is a fixed, well-known start (`AKIA`, `ghp_`, `sk-`): what
    /// follows is random on its own and is matched on its own too.
    pub prefix_len: usize,
}

/// The decoys of one state directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decoys {
    /// Shaped like an AWS access key id (`AKIA…`).
    pub aws_access_key_id: String,
    /// Shaped like an AWS secret access key.
    pub aws_secret_access_key: String,
    /// Shaped like a GitHub token (`ghp_…`).
    pub github_token: String,
    /// Shaped like an OpenAI API key (`sk-…`).
    pub openai_api_key: String,
    #[serde(skip)]
    dir: PathBuf,
}

impl Decoys {
    /// The decoys kept in `state_dir`, made (and written, 0600) on first use.
    pub fn load_or_create(state_dir: &Path) -> Result<Self, HoneytokenError> {
        let dir = state_dir.join(DIR);
        let file = dir.join(DECOYS_FILE);
        let corrupt = |e: serde_json::Error| HoneytokenError::Corrupt {
            path: file.clone(),
            why: e.to_string(),
        };
        let read = |file: &Path| {
            tackle_store::private_file::read_private(file).map_err(|e| HoneytokenError::io(file, e))
        };
        let mut decoys = match read(&file)? {
            Some(text) => serde_json::from_str::<Decoys>(&text).map_err(corrupt)?,
            None => {
                let made = Self::generate()?;
                let text = serde_json::to_string_pretty(&made).map_err(corrupt)?;
                if write_private(&file, &text, Publish::IfAbsent)? {
                    made
                } else {
                    // Another process made them first: theirs are the ones.
                    let text = read(&file)?.unwrap_or_default();
                    serde_json::from_str::<Decoys>(&text).map_err(corrupt)?
                }
            }
        };
        decoys.dir = dir;
        // Rewritten each start from the kept values: one source, and a file removed by hand
        // comes back.
        write_private(
            &decoys.aws_file(),
            &decoys.aws_credentials(),
            Publish::Replace,
        )?;
        Ok(decoys)
    }

    fn generate() -> Result<Self, HoneytokenError> {
        let bytes = tackle_store::private_file::random_bytes(144)
            .map_err(|e| HoneytokenError::io(Path::new("/dev/urandom"), e))?;
        let mut random = bytes.iter().copied();
        let mut pick = |n: usize, alphabet: &[u8]| -> String {
            (&mut random)
                .take(n)
                .map(|b| char::from(alphabet[usize::from(b) % alphabet.len()]))
                .collect()
        };
        Ok(Self {
            aws_access_key_id: format!("AKIA{}", pick(16, UPPER_DIGITS)),
            aws_secret_access_key: pick(40, AWS_SECRET_CHARS),
            github_token: format!("ghp_{}", pick(36, ALNUM)),
            // The shape of OpenAI's user keys: `T3BlbkFJ` ("OpenAI" in base64) in the middle.
            openai_api_key: format!("sk-{}T3BlbkFJ{}", pick(20, ALNUM), pick(20, ALNUM)),
            dir: PathBuf::new(),
        })
    }

    /// Every decoy with its name.
    pub fn all(&self) -> [Decoy; 4] {
        [
            Decoy {
                label: "AWS access key id",
                value: self.aws_access_key_id.clone(),
                prefix_len: 4,
            },
            Decoy {
                label: "AWS secret access key",
                value: self.aws_secret_access_key.clone(),
                prefix_len: 0,
            },
            Decoy {
                label: "GitHub token",
                value: self.github_token.clone(),
                prefix_len: 4,
            },
            Decoy {
                label: "OpenAI API key",
                value: self.openai_api_key.clone(),
                prefix_len: 3,
            },
        ]
    }

    /// The variables planted in every command's environment (where the operator's own
    /// environment passes none of that name).
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            (
                "AWS_ACCESS_KEY_ID".to_string(),
                self.aws_access_key_id.clone(),
            ),
            (
                "AWS_SECRET_ACCESS_KEY".to_string(),
                self.aws_secret_access_key.clone(),
            ),
            ("GITHUB_TOKEN".to_string(), self.github_token.clone()),
            ("OPENAI_API_KEY".to_string(), self.openai_api_key.clone()),
        ]
    }

    /// Files shown to commands under the sandbox's home: (file in the state directory, path
    /// relative to the home).
    pub fn home_files(&self) -> Vec<(PathBuf, PathBuf)> {
        vec![(self.aws_file(), PathBuf::from(AWS_FILE_IN_HOME))]
    }

    fn aws_file(&self) -> PathBuf {
        self.dir.join(AWS_FILE)
    }

    fn aws_credentials(&self) -> String {
        format!(
            "[default]\naws_access_key_id = {}\naws_secret_access_key = {}\nregion = us-east-1\n",
            self.aws_access_key_id, self.aws_secret_access_key
        )
    }
}

/// Writes a private file of the state directory (the store owns its I/O).
fn write_private(path: &Path, text: &str, publish: Publish) -> Result<bool, HoneytokenError> {
    tackle_store::private_file::write_private(path, text, publish)
        .map_err(|e| HoneytokenError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn decoys_look_real_are_private_and_stay_the_same_per_state_directory() {
        let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let first = Decoys::load_or_create(state.path()).unwrap_or_else(|e| panic!("{e}"));
        let again = Decoys::load_or_create(state.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(first, again);
        let other = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let elsewhere = Decoys::load_or_create(other.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(first.aws_access_key_id, elsewhere.aws_access_key_id);

        let redactor = tackle_policy::secrets::SecretRedactor::new(vec![]);
        for decoy in first.all() {
            // The redactor's patterns are the shapes of real keys.
            if decoy.prefix_len > 0 {
                assert_eq!(
                    redactor.redact(&decoy.value),
                    tackle_policy::secrets::REDACTED,
                    "{} does not look real",
                    decoy.label
                );
            }
        }
        for name in [DECOYS_FILE, AWS_FILE] {
            let mode = std::fs::metadata(state.path().join(DIR).join(name))
                .map(|m| m.permissions().mode() & 0o777)
                .unwrap_or(0);
            assert_eq!(mode, 0o600, "{name}");
        }
        let aws =
            std::fs::read_to_string(state.path().join(DIR).join(AWS_FILE)).unwrap_or_default();
        assert!(aws.contains(&first.aws_secret_access_key));
    }

    #[test]
    fn two_first_starts_at_once_end_with_one_set_of_decoys() {
        for _ in 0..20 {
            let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let path = state.path().to_path_buf();
            let starts: Vec<_> = (0..4)
                .map(|_| {
                    let p = path.clone();
                    std::thread::spawn(move || Decoys::load_or_create(&p))
                })
                .collect();
            let made: Vec<Decoys> = starts
                .into_iter()
                .map(|t| {
                    t.join()
                        .unwrap_or_else(|_| panic!("a start panicked"))
                        .unwrap_or_else(|e| panic!("{e}"))
                })
                .collect();
            let kept = Decoys::load_or_create(&path).unwrap_or_else(|e| panic!("{e}"));
            assert!(
                made.iter().all(|d| *d == kept),
                "a start planted other decoys"
            );
        }
    }
}
