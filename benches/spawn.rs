//! What starting a worker costs in-process: from the `spawn_worker` call entering the
//! dispatcher (validation, policy, approval) through the child's plan, its stored session and
//! its dispatcher, to the child's first model request; and the whole round trip with a model
//! that answers at once. The store is a real SQLite file. Run: `cargo bench --bench spawn`.

use async_trait::async_trait;
use criterion::{criterion_group, criterion_main, Criterion};
use futures::stream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tackle_agent::approvers::AutoApprover;
use tackle_agent::tree::Budget;
use tackle_agent::{
    CallRequest, Dispatcher, DispatcherConfig, Registry, Sanitizer, Session, Tree, TreeSettings,
};
use tackle_llm::{ChatRequest, EventStream, LlmError, Provider, StopReason, StreamEvent};
use tackle_protocol::config::Config;
use tackle_protocol::{AgentServices, ToolCall};

/// Answers at once, noting when the first request of a run arrived.
struct Instant0(Arc<Mutex<Option<Instant>>>);

#[async_trait]
impl Provider for Instant0 {
    fn name(&self) -> &str {
        "instant"
    }

    async fn stream(&self, _req: ChatRequest) -> Result<EventStream, LlmError> {
        let mut first = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if first.is_none() {
            *first = Some(Instant::now());
        }
        Ok(Box::pin(stream::iter(vec![
            Ok(StreamEvent::TextDelta("done".into())),
            Ok(StreamEvent::Stop(StopReason::EndTurn)),
        ])))
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let config: Config = serde_saphyr::from_str(
        "agents:\n  - name: default\n    workers:\n      - name: w\n        system_prompt: Work.\n        tools: [calculate]\n",
    )
    .expect("config");
    let store = tackle_store::Store::open(dir.path()).expect("store");
    let first = Arc::new(Mutex::new(None));
    let provider: Arc<dyn Provider> = Arc::new(Instant0(Arc::clone(&first)));
    let tree = Tree::new(TreeSettings {
        config: Arc::new(config.clone()),
        agent: config.agents.first().cloned(),
        provider,
        backend: None,
        model: "instant".into(),
        stream: true,
        tool_profile: tackle_agent::ToolProfile::full(),
        context_tokens: 100_000,
        store: store.clone(),
        compactor: None,
    });
    let root = tree.root_node(Arc::new(Budget::new(u32::MAX)));
    let registry = Registry::new(vec![
        tackle_tools::core::extension(),
        tackle_tools::system::extension(),
    ])
    .expect("registry");
    let host = tackle_host::NativeHostProvider::new(tackle_host::HostConfig::new(dir.path()));
    let dispatcher = Arc::new(
        Dispatcher::new(
            Arc::new(registry),
            Arc::new(host),
            DispatcherConfig {
                workspace: std::env::temp_dir(),
                security: Default::default(),
                agent: "default".into(),
                agent_grants: None,
                default_timeout: Duration::from_secs(10),
                sanitizer: Sanitizer::default(),
            },
        )
        .with_audit(Arc::new(store.clone()))
        .with_agents(root as Arc<dyn AgentServices>),
    );
    tree.attach(&dispatcher);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let session = rt
        .block_on(Session::create(store.clone(), "default"))
        .expect("session");
    c.bench_function("spawn_worker: call → child's first model request", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                *first.lock().unwrap_or_else(|e| e.into_inner()) = None;
                let started = Instant::now();
                let out = rt.block_on(spawn(&dispatcher, session.id()));
                assert!(out.is_ok(), "{out:?}");
                let reached = first
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .unwrap_or(started);
                total += reached - started;
            }
            total
        })
    });
    c.bench_function("spawn_worker: whole call, instant model", |b| {
        b.iter(|| rt.block_on(spawn(&dispatcher, session.id())))
    });
}

/// One `spawn_worker` call through the root dispatcher.
async fn spawn(
    d: &Dispatcher,
    session: &str,
) -> Result<tackle_protocol::ToolOutput, tackle_protocol::ToolError> {
    let call = ToolCall {
        id: "s".into(),
        name: "spawn_worker".into(),
        arguments: serde_json::json!({"name": "w", "task": "go"}),
    };
    d.dispatch(CallRequest::new(call, Arc::new(AutoApprover)).session(session))
        .await
}

criterion_group!(benches, bench);
criterion_main!(benches);
