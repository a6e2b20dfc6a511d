//! A child's approver: the root front end's, with every question labelled with the child's
//! path in the tree (`default › researcher`). Without a front end that can ask, the child's
//! call ends `needs_approval`: never a hang, never a yes carried over from the parent.

use async_trait::async_trait;
use std::sync::Arc;
use tackle_protocol::{ApprovalAnswer, ApprovalRequest, ApprovalUnavailable, Approver, FormAsker};

/// An approver that asks the root's front end, each question labelled with a child's path;
/// with no front end a call ends `needs_approval`.
pub struct Labelled {
    inner: Option<Arc<dyn Approver>>,
    label: String,
}

impl Labelled {
    /// Asks through `inner` (`None`: nobody can be asked), labelling questions with `label`.
    pub fn new(inner: Option<Arc<dyn Approver>>, label: impl Into<String>) -> Self {
        Self {
            inner,
            label: label.into(),
        }
    }
}

#[async_trait]
impl Approver for Labelled {
    fn name(&self) -> &str {
        self.inner.as_ref().map_or("none", |a| a.name())
    }

    async fn ask(&self, req: &ApprovalRequest) -> Result<ApprovalAnswer, ApprovalUnavailable> {
        let Some(inner) = &self.inner else {
            return Err(ApprovalUnavailable(format!(
                "`{}` asked to approve `{}`, and no one can be asked from here",
                self.label, req.tool
            )));
        };
        let mut labelled = req.clone();
        labelled.summary = format!("[{}] {}", self.label, req.summary);
        labelled.why = format!("{} (asked by `{}`)", req.why, self.label);
        inner.ask(&labelled).await
    }

    fn forms(&self) -> Option<Arc<dyn FormAsker>> {
        self.inner.as_ref().and_then(|a| a.forms())
    }
}
