//! The loop's own overhead per turn: a fake provider that answers instantly (one calculate
//! call, then a final answer), so what is measured is the loop, the dispatcher and the event
//! stream. Run: `cargo bench --bench agent_loop`.

mod common;

use async_trait::async_trait;
use criterion::{criterion_group, criterion_main, Criterion};
use futures::stream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tackle_agent::approvers::NonInteractiveApprover;
use tackle_agent::{AgentLoop, LoopConfig, Session};
use tackle_llm::{ChatRequest, EventStream, LlmError, Provider, StopReason, StreamEvent};

/// Odd requests get a tool call, even ones a final answer.
struct InstantModel(AtomicUsize);

#[async_trait]
impl Provider for InstantModel {
    fn name(&self) -> &str {
        "instant"
    }

    async fn stream(&self, _req: ChatRequest) -> Result<EventStream, LlmError> {
        let n = self.0.fetch_add(1, Ordering::Relaxed);
        let events: Vec<Result<StreamEvent, LlmError>> = if n.is_multiple_of(2) {
            vec![
                Ok(StreamEvent::ToolCallStart {
                    index: 0,
                    id: format!("c{n}"),
                    name: "calculate".into(),
                }),
                Ok(StreamEvent::ToolCallArgsDelta {
                    index: 0,
                    delta: r#"{"expression":"6*7"}"#.into(),
                }),
                Ok(StreamEvent::ToolCallEnd { index: 0 }),
                Ok(StreamEvent::Stop(StopReason::ToolUse)),
            ]
        } else {
            vec![
                Ok(StreamEvent::TextDelta("The answer is 42.".into())),
                Ok(StreamEvent::Stop(StopReason::EndTurn)),
            ]
        };
        Ok(Box::pin(stream::iter(events)))
    }
}

fn bench(c: &mut Criterion) {
    let state = tempfile::tempdir().expect("tempdir");
    let dispatcher = Arc::new(common::dispatcher(state.path()));
    let agent = AgentLoop::new(
        Arc::new(InstantModel(AtomicUsize::new(0))),
        dispatcher,
        LoopConfig::new("instant"),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let cancel = tokio_util::sync::CancellationToken::new();
    c.bench_function("agent turn: tool call + answer, instant model", |b| {
        b.iter(|| {
            rt.block_on(async {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
                let mut session = Session::ephemeral("bench");
                let out = agent
                    .run_turn(
                        &mut session,
                        "what is 6*7?",
                        Arc::new(NonInteractiveApprover),
                        &tx,
                        &cancel,
                    )
                    .await
                    .expect("turn");
                drop(tx);
                let _ = drain.await;
                out
            })
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
