//! Adversarial checks of the path guard beyond the corpus: odd workspaces and grant entries
//! must only ever narrow what is allowed.

use std::path::Path;
use tackle_policy::path::{check_path, normalize, roots, Access};
use tackle_protocol::FsGrant;

#[test]
fn a_relative_or_empty_workspace_opens_nothing() {
    for ws in [".", "", "ws", "./ws/..", "../x"] {
        let r = roots(None, Path::new(ws), None);
        for p in ["/etc/passwd", "/", "/work/ws/x"] {
            let d = check_path(Path::new(p), Access::Read, &r);
            assert!(d.is_denied(), "workspace {ws:?} allowed {p}: {}", d.why);
        }
    }
}

#[test]
fn grant_entries_that_cannot_be_made_absolute_open_nothing() {
    let grant = FsGrant {
        allow_read: vec![
            "~".into(),
            "~/x".into(),
            "~root".into(),
            "".into(),
            "  ".into(),
        ],
        allow_write: vec!["../..".into()],
    };
    let r = roots(Some(&grant), Path::new("rel"), None);
    for p in ["/", "/etc/passwd", "/home/u/x", "/root/x"] {
        assert!(
            check_path(Path::new(p), Access::Read, &r).is_denied(),
            "{p}"
        );
        assert!(
            check_path(Path::new(p), Access::Write, &r).is_denied(),
            "{p}"
        );
    }
}

#[test]
fn dot_dot_never_climbs_above_the_root_of_an_absolute_path() {
    assert_eq!(normalize(Path::new("/../../../etc")), Path::new("/etc"));
    let r = roots(None, Path::new("/work/ws/../../.."), None);
    assert_eq!(r.read, vec![Path::new("/").to_path_buf()]);
}

#[test]
fn paths_with_nul_bytes_or_newlines_compare_by_whole_components() {
    let r = roots(None, Path::new("/work/ws"), None);
    for p in [
        "/work/ws\0/x",
        "/work/ws\n/x",
        "/work/ws /x",
        "/work/ws\u{200b}/x",
    ] {
        assert!(
            check_path(Path::new(p), Access::Read, &r).is_denied(),
            "{p:?}"
        );
    }
    assert!(check_path(Path::new("/work/ws/a\0b"), Access::Read, &r).is_allowed());
}
