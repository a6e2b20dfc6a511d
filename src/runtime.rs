//! Everything `run` and `chat` need: the app, a provider, the session store, the loop.

use crate::app::{App, AppBuilder, Selection};
use crate::cli::Global;
use crate::exit::usage;
use anyhow::Result;
use std::sync::Arc;
use tackle_agent::tree::Budget;
use tackle_agent::{AgentLoop, BudgetMode, Compactor, LoopConfig, Session, Tree, TreeSettings};
use tackle_llm::{provider_from_config, EnvSnapshot, LlmError, Provider};
use tackle_protocol::config::{AgentConfig, BackendConfig, Config};
use tackle_store::Store;

pub struct Runtime {
    pub app: App,
    pub agent_loop: AgentLoop,
    pub store: Store,
    pub compactor: Arc<Compactor>,
    pub agent_name: String,
    /// The tree of agents this run's agent may start (`spawn_*`, `delegate`, `spawn`).
    pub tree: Arc<Tree>,
}

impl Runtime {
    /// Load the config, open the store and build the agent's runtime ([`AppBuilder::runtime`]).
    pub async fn build(global: &Global, selection: &Selection) -> Result<Self> {
        AppBuilder::new(global, selection)?.runtime().await
    }

    /// Whether the store holds a session with this id.
    pub async fn session_exists(&self, id: &str) -> Result<bool> {
        Ok(self
            .store
            .session_exists(&tackle_store::SessionId(id.to_string()))
            .await?)
    }

    /// Resume `--session ID` or start a new stored session.
    pub async fn session(&self, id: Option<&str>) -> Result<Session> {
        let session = match id {
            Some(id) => Session::resume(self.store.clone(), id, &self.agent_name).await?,
            None => Session::create(self.store.clone(), &self.agent_name).await?,
        };
        Ok(session)
    }
}

impl AppBuilder<'_> {
    /// The agent's runtime: its model (the command line's choice, else the agent's, else
    /// discovery), the tree of agents it may start, the app with the agent tools served, and
    /// the loop.
    pub async fn runtime(self) -> Result<Runtime> {
        let (provider, model, stream) = select_provider_with(
            &self.loaded.config,
            self.agent.as_ref(),
            &self.selection.llm,
        )
        .await?;
        let store = self.store.clone();
        let (loaded, agent, selection) = (&self.loaded, self.agent.clone(), self.selection);
        let compactor = Arc::new(Compactor::new(
            Arc::clone(&provider),
            model.clone(),
            Some(store.clone()),
        ));
        let max_iterations = agent
            .as_ref()
            .and_then(|a| a.max_iterations)
            .map_or(LoopConfig::new("").max_iterations, |n| n.max(1));
        // The preset's prompt addition (its other fields were folded into the agent at load).
        let presets = loaded.config.presets.clone();
        // The backend `select_provider_with` chose, in its order.
        let backend = selection
            .llm
            .backend
            .clone()
            .or_else(|| agent.as_ref().and_then(|a| a.backend.clone()))
            .or_else(|| loaded.config.backends.first().map(|b| b.name.clone()));
        // The window the operator wrote for this model (`backends[].models[].context_window`).
        let context_tokens = context_window(&loaded.config, backend.as_deref(), &model)
            .unwrap_or(LoopConfig::new("").context_tokens);
        let tree = Tree::new(TreeSettings {
            config: Arc::new(loaded.config.clone()),
            agent: agent.clone(),
            provider: Arc::clone(&provider),
            backend,
            model: model.clone(),
            stream,
            tool_profile: crate::profiles::for_agent(&loaded.config, agent.as_ref())?,
            context_tokens,
            store: store.clone(),
            compactor: Some(Arc::clone(&compactor)),
        });
        let budget = Arc::new(Budget::new(max_iterations));
        let root = tree.root_node(Arc::clone(&budget));
        let app = self.build(Some(root as Arc<dyn tackle_protocol::AgentServices>))?;
        tree.attach(&app.dispatcher);
        app.settle_mcp().await;
        let mut config = LoopConfig::new(model);
        config.budget = BudgetMode::PerTurn(budget);
        config.stream = stream;
        config.context_tokens = context_tokens;
        config.tool_profile = app.tool_profile.clone();
        config.system_prompt = agent.as_ref().and_then(|a| a.system_prompt.clone());
        config.prompt_addition = agent
            .as_ref()
            .and_then(|a| a.preset.as_deref())
            .and_then(|p| presets.get(p))
            .and_then(|p| p.system_prompt.clone());
        if let Some(n) = agent.as_ref().and_then(|a| a.max_iterations) {
            config.max_iterations = n.max(1);
        }
        let agent_name = agent
            .as_ref()
            .map(|a| a.name.clone())
            .unwrap_or_else(|| "default".into());
        if agent.as_ref().is_some_and(|a| a.inject_pinned_memory) {
            let pinned = store
                .longterm_pinned(&agent_name)
                .await
                .map_err(|e| anyhow::anyhow!("cannot read pinned memory: {e}"))?;
            config.memory_block = tackle_store::pinned_block(&pinned);
        }
        let agent_loop = AgentLoop::new(provider, Arc::clone(&app.dispatcher), config)
            .with_compactor(Arc::clone(&compactor))
            .with_inbox(Arc::clone(tree.inbox()));
        Ok(Runtime {
            app,
            agent_loop,
            store,
            compactor,
            agent_name,
            tree,
        })
    }
}

/// `--backend NAME` / `--model NAME`: what the command line says over the agent's config.
#[derive(Debug, Clone, Default)]
pub struct LlmChoice {
    pub backend: Option<String>,
    pub model: Option<String>,
}

/// The agent's backend and model; with no backend configured, discovery from the environment
/// and local servers (README, "Using it"; exit 2 saying what to set when nothing is found).
pub(crate) async fn select_provider(
    config: &Config,
    agent: Option<&AgentConfig>,
) -> Result<(Arc<dyn Provider>, String, bool)> {
    select_provider_with(config, agent, &LlmChoice::default()).await
}

/// As [`select_provider`], with the command line's choice first. A model named on the command
/// line or by the agent is used as is, also on a discovered backend: the model discovery
/// suggests is only the default.
pub(crate) async fn select_provider_with(
    config: &Config,
    agent: Option<&AgentConfig>,
    choice: &LlmChoice,
) -> Result<(Arc<dyn Provider>, String, bool)> {
    let wanted = choice
        .backend
        .as_deref()
        .or_else(|| agent.and_then(|a| a.backend.as_deref()));
    let backend: Option<&BackendConfig> = match wanted {
        Some(name) => Some(
            config
                .backends
                .iter()
                .find(|b| b.name == name)
                .ok_or_else(|| unknown_backend(config, name))?,
        ),
        None => config.backends.first(),
    };
    let (backend, default_model) = match backend {
        Some(b) => (b.clone(), b.models.first().map(|m| m.name.clone())),
        None => {
            let env = EnvSnapshot::from_vars(std::env::vars());
            let found = tackle_llm::discover(&env).await.map_err(llm_usage)?;
            tracing::info!("using {} ({})", found.backend.name, found.source);
            (found.backend, Some(found.model))
        }
    };
    let model = choice
        .model
        .clone()
        .or_else(|| agent.and_then(|a| a.model.clone()))
        .or(default_model)
        .ok_or_else(|| usage(format!("backend `{}` lists no models and the agent sets no `model`; add `models: [{{name: …}}]` to the backend or `model:` to the agent, or pass --model", backend.name)))?;
    let provider = provider_from_config(&backend).map_err(llm_usage)?;
    Ok((provider, model, backend.stream.unwrap_or(true)))
}

/// The context window `backend` declares for `model`, in tokens; `None` when it says none.
fn context_window(config: &Config, backend: Option<&str>, model: &str) -> Option<usize> {
    let backend = config
        .backends
        .iter()
        .find(|b| Some(b.name.as_str()) == backend)?;
    let window = backend
        .models
        .iter()
        .find(|m| m.name == model)?
        .context_window?;
    usize::try_from(window).ok().filter(|w| *w > 0)
}

fn unknown_backend(config: &Config, name: &str) -> anyhow::Error {
    let names: Vec<&str> = config.backends.iter().map(|b| b.name.as_str()).collect();
    if names.is_empty() {
        return crate::exit::not_found(format!(
            "no backend named `{name}`: the config has no `backends:` (without one, the backend is found from the environment; drop --backend)"
        ));
    }
    let near = tackle_protocol::suggest::nearest(name, names.iter().copied(), 0.7);
    let hint = match tackle_protocol::suggest::hint(&near) {
        h if h.is_empty() => format!("; configured: {}", names.join(", ")),
        h => h,
    };
    crate::exit::not_found(format!("no backend named `{name}` under `backends:`{hint}"))
}

fn llm_usage(e: LlmError) -> anyhow::Error {
    usage(e.to_string())
}
