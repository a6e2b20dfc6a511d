//! `presets:` at load: every reference checked (the error names its key path), then each
//! agent's and worker template's preset folded into its own fields, so everything that reads
//! an agent or a template (backend and model selection, tool profile, iteration pool) sees the
//! resolved values and no second place resolves presets.
//!
//! Precedence: the entry's own field, else its preset's, else the default. A preset's
//! `system_prompt` is not folded: it is appended at run time to the entry's prompt, or to the
//! built-in default prompt when the entry has none (`LoopConfig::prompt_addition`).

use tackle_protocol::config::{Config, PresetConfig};

/// A reference that does not resolve: `(key path, message)`.
pub type Invalid = (String, String);

/// Every name a preset, agent or worker template gives to `presets:`, `backends:` and
/// `tool_profiles:` exists.
pub fn check(config: &Config) -> Result<(), Invalid> {
    for (name, preset) in &config.presets {
        let at = format!("presets.{name}");
        check_backend(config, &at, preset.backend.as_deref())?;
        check_profile(config, &at, preset.tool_profile.as_deref())?;
    }
    for (i, agent) in config.agents.iter().enumerate() {
        check_preset(config, &format!("agents[{i}]"), agent.preset.as_deref())?;
        for (j, worker) in agent.workers.iter().enumerate() {
            let at = format!("agents[{i}].workers[{j}]");
            check_preset(config, &at, worker.preset.as_deref())?;
            check_backend(config, &at, worker.backend.as_deref())?;
            check_profile(config, &at, worker.tool_profile.as_deref())?;
        }
    }
    Ok(())
}

fn check_preset(config: &Config, at: &str, name: Option<&str>) -> Result<(), Invalid> {
    let Some(name) = name else { return Ok(()) };
    if config.presets.contains_key(name) {
        return Ok(());
    }
    let known: Vec<String> = config.presets.keys().map(|k| format!("`{k}`")).collect();
    Err((
        format!("{at}.preset"),
        format!(
            "no preset named `{name}` under `presets:`; {}",
            if known.is_empty() {
                "none are configured".to_string()
            } else {
                format!("configured: {}", known.join(", "))
            }
        ),
    ))
}

fn check_backend(config: &Config, at: &str, name: Option<&str>) -> Result<(), Invalid> {
    match name {
        Some(b) if !config.backends.iter().any(|c| c.name == b) => Err((
            format!("{at}.backend"),
            format!("no backend named `{b}`; add it under `backends:` or fix the name"),
        )),
        _ => Ok(()),
    }
}

fn check_profile(config: &Config, at: &str, name: Option<&str>) -> Result<(), Invalid> {
    match name {
        Some(p) if !config.tool_profiles.contains_key(p) => Err((
            format!("{at}.tool_profile"),
            format!("no profile named `{p}` under `tool_profiles:`"),
        )),
        _ => Ok(()),
    }
}

/// Fill each agent's and worker template's unset backend, model, tool profile and
/// `max_iterations` from its preset. Call after [`check`].
pub fn apply(config: &mut Config) {
    let presets = config.presets.clone();
    let get = |name: &Option<String>| -> Option<&PresetConfig> {
        name.as_deref().and_then(|n| presets.get(n))
    };
    for agent in &mut config.agents {
        if let Some(p) = get(&agent.preset) {
            fill(&mut agent.backend, &p.backend);
            fill(&mut agent.tool_profile, &p.tool_profile);
            fill(&mut agent.max_iterations, &p.max_iterations);
            // A model belongs to a backend: a preset's model does not follow an agent that
            // names its own backend onto it unless the preset names that backend too.
            if agent.backend == p.backend || p.backend.is_none() {
                fill(&mut agent.model, &p.model);
            }
        }
        for worker in &mut agent.workers {
            if let Some(p) = get(&worker.preset) {
                fill(&mut worker.backend, &p.backend);
                fill(&mut worker.tool_profile, &p.tool_profile);
                fill(&mut worker.max_iterations, &p.max_iterations);
                if worker.backend == p.backend || p.backend.is_none() {
                    fill(&mut worker.model, &p.model);
                }
            }
        }
    }
}

fn fill<T: Clone>(own: &mut Option<T>, preset: &Option<T>) {
    if own.is_none() {
        own.clone_from(preset);
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use tackle_protocol::config::Config;

    const BACKENDS: &str = "backends:\n  - name: big\n    type: openai\n    models: [{name: big-model}]\n  - name: small\n    type: openai\n    models: [{name: small-model}]\ntool_profiles:\n  lean:\n    tools:\n      shell: hidden\n  wide: {}\n";

    fn load(rest: &str) -> Result<Config, String> {
        parse(&format!("{BACKENDS}{rest}"), "test.yaml", &|_| None, &[])
            .map(|(c, _)| c)
            .map_err(|e| e.to_string())
    }

    fn ok(rest: &str) -> Config {
        load(rest).unwrap_or_else(|e| panic!("{e}"))
    }

    fn err(rest: &str) -> String {
        match load(rest) {
            Ok(_) => panic!("expected a load error for:\n{rest}"),
            Err(e) => e,
        }
    }

    const FAST: &str = "presets:\n  fast:\n    backend: small\n    model: small-model\n    tool_profile: lean\n    max_iterations: 4\n    system_prompt: Be brief.\n";

    #[test]
    fn an_agent_takes_what_it_does_not_set_from_its_preset() {
        let c = ok(&format!("{FAST}agents:\n  - name: a\n    preset: fast\n"));
        let a = &c.agents[0];
        assert_eq!(a.backend.as_deref(), Some("small"));
        assert_eq!(a.model.as_deref(), Some("small-model"));
        assert_eq!(a.tool_profile.as_deref(), Some("lean"));
        assert_eq!(a.max_iterations, Some(4));
        // The prompt is not folded: it is appended at run time (to the default when unset).
        assert_eq!(a.system_prompt, None);
    }

    #[test]
    fn an_agents_own_fields_win_over_its_presets() {
        let c = ok(&format!(
            "{FAST}agents:\n  - name: a\n    preset: fast\n    tool_profile: wide\n    max_iterations: 9\n    system_prompt: Own.\n"
        ));
        let a = &c.agents[0];
        assert_eq!(a.tool_profile.as_deref(), Some("wide"));
        assert_eq!(a.max_iterations, Some(9));
        assert_eq!(a.system_prompt.as_deref(), Some("Own."));
        assert_eq!(a.backend.as_deref(), Some("small"));
    }

    #[test]
    fn a_presets_model_does_not_follow_an_agent_onto_another_backend() {
        let c = ok(&format!(
            "{FAST}agents:\n  - name: a\n    preset: fast\n    backend: big\n"
        ));
        assert_eq!(c.agents[0].backend.as_deref(), Some("big"));
        // Unset: the agent's backend's first model, not the preset's `small-model`.
        assert_eq!(c.agents[0].model, None);
    }

    #[test]
    fn without_a_preset_nothing_is_filled() {
        let c = ok(&format!("{FAST}agents:\n  - name: a\n"));
        assert_eq!(c.agents[0].backend, None);
        assert_eq!(c.agents[0].tool_profile, None);
        assert_eq!(c.agents[0].max_iterations, None);
    }

    #[test]
    fn a_worker_template_takes_its_presets_fields_under_its_own() {
        let c = ok(&format!(
            "{FAST}agents:\n  - name: a\n    workers:\n      - name: w\n        preset: fast\n        max_iterations: 2\n      - name: v\n        backend: big\n"
        ));
        let w = &c.agents[0].workers[0];
        assert_eq!(w.backend.as_deref(), Some("small"));
        assert_eq!(w.model.as_deref(), Some("small-model"));
        assert_eq!(w.tool_profile.as_deref(), Some("lean"));
        assert_eq!(w.max_iterations, Some(2));
        assert_eq!(c.agents[0].workers[1].backend.as_deref(), Some("big"));
    }

    #[test]
    fn an_unknown_preset_is_a_load_error_naming_its_path_and_the_presets() {
        let e = err(&format!("{FAST}agents:\n  - name: a\n    preset: slow\n"));
        assert!(e.contains("agents[0].preset"), "{e}");
        assert!(e.contains("`slow`") && e.contains("`fast`"), "{e}");
        let e = err(&format!(
            "{FAST}agents:\n  - name: a\n    workers:\n      - name: w\n        preset: slow\n"
        ));
        assert!(e.contains("agents[0].workers[0].preset"), "{e}");
        let e = err("agents:\n  - name: a\n    preset: slow\n");
        assert!(e.contains("none are configured"), "{e}");
    }

    #[test]
    fn a_preset_naming_an_unknown_backend_or_profile_is_a_load_error_naming_its_path() {
        let e = err("presets:\n  p:\n    backend: nosuch\n");
        assert!(
            e.contains("presets.p.backend") && e.contains("`nosuch`"),
            "{e}"
        );
        let e = err("presets:\n  p:\n    tool_profile: nosuch\n");
        assert!(
            e.contains("presets.p.tool_profile") && e.contains("`nosuch`"),
            "{e}"
        );
        let e = err("presets:\n  p:\n    temperature: 1\n");
        assert!(e.contains("presets.p") && e.contains("temperature"), "{e}");
    }

    #[test]
    fn a_worker_naming_an_unknown_backend_or_profile_is_a_load_error_naming_its_path() {
        let e =
            err("agents:\n  - name: a\n    workers:\n      - name: w\n        backend: nosuch\n");
        assert!(
            e.contains("agents[0].workers[0].backend") && e.contains("`nosuch`"),
            "{e}"
        );
        let e = err(
            "agents:\n  - name: a\n    workers:\n      - name: w\n        tool_profile: nosuch\n",
        );
        assert!(e.contains("agents[0].workers[0].tool_profile"), "{e}");
    }

    #[test]
    fn the_example_files_presets_load_and_apply() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config.example.yaml");
        let text = std::fs::read_to_string(path).expect("config.example.yaml");
        let text: String = text
            .lines()
            .map(|l| l.strip_prefix("# ").unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n");
        let env = |k: &str| (k == "OPENROUTER_API_KEY").then(|| "sk-or-test".to_string());
        let (c, _) = parse(&text, "example", &env, &[]).unwrap_or_else(|e| panic!("{e}"));
        assert!(c.presets.contains_key("quick"), "{:?}", c.presets.keys());
        let worker = c
            .agents
            .iter()
            .flat_map(|a| &a.workers)
            .find(|w| w.preset.as_deref() == Some("quick"))
            .unwrap_or_else(|| panic!("no worker of the example names `quick`"));
        assert_eq!(worker.tool_profile, c.presets["quick"].tool_profile);
    }
}
