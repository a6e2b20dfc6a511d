//! The terminal approver: an inline `y/n/a` prompt on stderr, answered on stdin.

use async_trait::async_trait;
use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;
use tackle_agent::approvers::{AutoApprover, NonInteractiveApprover};
use tackle_protocol::{ApprovalAnswer, ApprovalRequest, ApprovalUnavailable, Approver};

/// `--yes` approves; a terminal on stdin asks; anything else cannot ask (exit 4, never a hang).
pub fn approver_for_cli(yes: bool) -> Arc<dyn Approver> {
    if yes {
        Arc::new(AutoApprover)
    } else if std::io::stdin().is_terminal() {
        Arc::new(TtyApprover::default())
    } else {
        Arc::new(NonInteractiveApprover)
    }
}

/// Asks one question at a time even when several calls run concurrently.
#[derive(Default)]
pub struct TtyApprover {
    lock: tokio::sync::Mutex<()>,
}

#[async_trait]
impl Approver for TtyApprover {
    fn name(&self) -> &str {
        "tty"
    }

    async fn ask(&self, req: &ApprovalRequest) -> Result<ApprovalAnswer, ApprovalUnavailable> {
        let _one_at_a_time = self.lock.lock().await;
        let prompt = render(req);
        tokio::task::spawn_blocking(move || prompt_blocking(&prompt))
            .await
            .map_err(|e| ApprovalUnavailable(format!("the approval prompt failed: {e}")))?
    }
}

pub fn render(req: &ApprovalRequest) -> String {
    let grants = serde_json::to_string(&req.grants).unwrap_or_default();
    let mut s = format!("\n⚠ `{}` needs approval: {}\n", req.tool, req.why);
    for line in req.summary.lines() {
        s.push_str(&format!("  {line}\n"));
    }
    if grants != "{}" {
        s.push_str(&format!("  grants in force: {grants}\n"));
    }
    s.push_str("Allow? [y] once  [n] deny  [a] always for this session: ");
    s
}

fn prompt_blocking(prompt: &str) -> Result<ApprovalAnswer, ApprovalUnavailable> {
    let mut stderr = std::io::stderr();
    let stdin = std::io::stdin();
    loop {
        let _ = write!(stderr, "{prompt}");
        let _ = stderr.flush();
        let mut line = String::new();
        match stdin.lock().read_line(&mut line) {
            Ok(0) => {
                return Err(ApprovalUnavailable(
                    "stdin closed before the approval was answered".into(),
                ))
            }
            Ok(_) => {}
            Err(e) => return Err(ApprovalUnavailable(format!("cannot read the answer: {e}"))),
        }
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => return Ok(ApprovalAnswer::Once),
            "n" | "no" => return Ok(ApprovalAnswer::Deny),
            "a" | "always" => return Ok(ApprovalAnswer::ForSession),
            _ => {
                let _ = writeln!(stderr, "Please answer y, n or a.");
            }
        }
    }
}
