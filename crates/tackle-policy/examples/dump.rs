fn main() {
    let g = tackle_protocol::ShellGrant {
        allow: vec!["git".into(), "ls".into()],
        deny: vec!["rm".into()],
    };
    for line in std::env::args().skip(1) {
        println!("{:?}", tackle_policy::shell::commands(&line));
        println!("{:?}", tackle_policy::shell::check_shell(&line, &g));
    }
}
