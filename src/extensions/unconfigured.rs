//! Tools that cannot work until their config section exists (`services.whatsapp`,
//! `web_search.backends`, …) are not offered: the model is not sent their schemas (dozens of
//! them for a "hi") and cannot waste a turn calling them. Named, they still answer with what
//! to add to the config, through the extension's `unavailable`.

use std::collections::BTreeMap;
use std::sync::Arc;
use tackle_protocol::config::Config;
use tackle_protocol::{Extension, Tool};

/// Each tool of the built-in extensions that needs configuration, with the message naming
/// what to add, when that configuration is missing (each row's `unconfigured`).
pub fn missing(config: &Config) -> BTreeMap<&'static str, String> {
    super::CATALOGUE
        .iter()
        .flat_map(|row| (row.unconfigured)(config))
        .collect()
}

/// `inner` without the tools in `missing`; asked for one of them, it says what to configure.
pub fn without(
    inner: Arc<dyn Extension>,
    missing: &BTreeMap<&'static str, String>,
) -> Arc<dyn Extension> {
    let own: BTreeMap<String, String> = inner
        .tools()
        .iter()
        .map(|t| t.spec().name)
        .filter_map(|name| missing.get(name.as_str()).map(|why| (name, why.clone())))
        .collect();
    if own.is_empty() {
        return inner;
    }
    Arc::new(Without {
        inner,
        missing: own,
    })
}

struct Without {
    inner: Arc<dyn Extension>,
    missing: BTreeMap<String, String>,
}

impl Extension for Without {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools = self.inner.tools();
        tools.retain(|t| !self.missing.contains_key(&t.spec().name));
        tools
    }

    fn unavailable(&self, tool: &str) -> Option<String> {
        self.missing
            .get(tool)
            .cloned()
            .or_else(|| self.inner.unavailable(tool))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unconfigured_service_is_not_offered_but_says_what_to_add() {
        let config = Config::default();
        let missing = missing(&config);
        let ext = without(
            tackle_tools::services::extension(Default::default()),
            &missing,
        );
        assert!(ext.tools().is_empty(), "no service is configured");
        assert!(ext
            .unavailable("r8r")
            .is_some_and(|w| w.starts_with("services.r8r is not configured")));
        let web = without(tackle_tools::web::extension(Default::default()), &missing);
        let names: Vec<String> = web.tools().iter().map(|t| t.spec().name).collect();
        assert_eq!(names, ["web_fetch", "http_request"]);
    }
}
