//! The skills check: every `skills.dirs` directory read as `tackle run` reads it, one line for
//! what loads and one failure per skill file that is skipped, its error whole (a YAML error's
//! snippet keeps its lines).

use super::Check;
use std::path::Path;
use std::sync::Arc;
use tackle_protocol::config::SkillsConfig;
use tackle_tools::skills::{Catalogue, DirSource, SkillSource};

pub(super) fn checks(config: &SkillsConfig, workspace: &Path, home: Option<&Path>) -> Vec<Check> {
    let settings = crate::skills::settings(config, workspace, home);
    let sources: Vec<Arc<dyn SkillSource>> = settings
        .dirs
        .iter()
        .map(|d| {
            Arc::new(DirSource {
                label: d.label.clone(),
                dir: d.path.clone(),
                disk: settings.disk.clone(),
            }) as Arc<dyn SkillSource>
        })
        .collect();
    let catalogue = Catalogue::load(&sources);
    let n = catalogue.entries.len();
    let dirs: Vec<&str> = settings.dirs.iter().map(|d| d.label.as_str()).collect();
    let mut out = vec![Check::ok(
        "skills",
        format!(
            "{n} skill{} from {}",
            if n == 1 { "" } else { "s" },
            dirs.join(", ")
        ),
    )];
    out.extend(
        catalogue
            .warnings
            .iter()
            .map(|w| Check::fail("skills", w.clone()).quoting()),
    );
    out
}
