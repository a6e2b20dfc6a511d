fn main() {
    let g = tackle_protocol::ShellGrant { allow: vec!["cat".into(), "ls".into(), "[".into(), "test".into()], deny: vec!["rm".into()] };
    let body = "line of text with $HOME and stuff\n".repeat(1800);
    let big = format!("cat > f <<'EOF'\n{body}EOF");
    let big2 = format!("cat > f <<EOF\n{body}EOF");
    let words = "ls ".repeat(20000);
    let mut lines: Vec<String> = std::env::args().skip(1).collect();
    lines.extend([big, big2, words]);
    for line in lines {
        let t = std::time::Instant::now();
        let d = tackle_policy::shell::check_shell(&line, &g);
        println!("{:?} {:?} {} :: {}", d.verdict, t.elapsed(), line.len(), tackle_protocol::text::preview(&d.why, 150));
    }
}
