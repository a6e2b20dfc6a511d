//! `tools call --explain --json`: each planned capability is an object with named fields
//! (`capability`, `decision`), not a two-element array a reader must know the order of.

mod common;

use common::{run, Sandbox};
use serde_json::Value;

#[test]
fn explained_capabilities_are_objects_with_named_fields() {
    let sb = Sandbox::new();
    let config = sb.config("");
    let r = run(sb.tackle(
        &config,
        &[
            "tools",
            "call",
            "shell",
            r#"{"command": "rm -rf ~"}"#,
            "--explain",
            "--json",
        ],
    ));
    assert_eq!(r.code, 0, "{r}");
    let v: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}\n{r}"));
    let caps = v["capabilities"].as_array().expect("capabilities");
    assert!(!caps.is_empty(), "{v:#}");
    for c in caps {
        assert!(c.is_object(), "{c}");
        assert_eq!(c["capability"]["kind"], "shell", "{c}");
        assert_eq!(c["capability"]["command"], "rm -rf ~", "{c}");
        assert!(c["decision"]["verdict"].is_string(), "{c}");
        assert!(c["decision"]["why"].is_string(), "{c}");
    }
}
