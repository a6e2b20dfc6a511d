//! Grant algebra.
use tackle_protocol::Grants;

pub fn merge_over(base: &Grants, _overlay: &Grants) -> Grants {
    base.clone()
}

pub fn attenuate(_parent: &Grants, _child: &Grants) -> Grants {
    Grants {
        shell: Some(tackle_protocol::ShellGrant {
            allow: vec![],
            deny: vec!["*".into()],
        }),
        network: None,
        fs: None,
    }
}
