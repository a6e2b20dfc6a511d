//! Where oversized MCP results are kept in full: a file in the state directory whose path the
//! model is given.

use async_trait::async_trait;
use std::path::PathBuf;
use tackle_mcp::{ResultSpill, SpillError};

pub struct StateDirSpill {
    pub dir: PathBuf,
}

#[async_trait]
impl ResultSpill for StateDirSpill {
    async fn spill(&self, tool: &str, content: &str) -> Result<PathBuf, SpillError> {
        let safe: String = tool
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let path = self.dir.join(format!("{safe}-{stamp}.txt"));
        let dir = self.dir.clone();
        let body = content.to_string();
        let target = path.clone();
        tokio::task::spawn_blocking(move || {
            std::fs::create_dir_all(&dir)?;
            std::fs::write(&target, body)
        })
        .await
        .map_err(|e| SpillError(e.to_string()))?
        .map_err(|e| SpillError(format!("{}: {e}", path.display())))?;
        Ok(path)
    }
}
