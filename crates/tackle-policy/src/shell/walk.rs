//! Walking a parsed shell program and collecting every command it would run.

use super::words::{self, arithmetic_reads_variables, Embedded, Word};
use super::ShellError;
use brush_parser::ast;

/// Nested programs (substitutions, `sh -c`, `eval`) and wrappers, together.
pub(crate) const MAX_DEPTH: usize = 24;
/// The longest line the analyser reads.
pub(crate) const MAX_LINE_BYTES: usize = 256 * 1024;
/// Brackets nested deeper than this would exhaust the parser's stack.
const MAX_NESTING: usize = 48;

/// One command the line would run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cmd {
    pub words: Vec<Word>,
    /// More arguments arrive at run time (e.g. from `xargs`' input).
    pub open_tail: bool,
    /// Only a candidate: text that a program may run as a command (an environment value, a
    /// word a wrapper may treat as its command). Deny rules see it; allow rules do not.
    pub maybe: bool,
}

/// Everything found in a line.
#[derive(Debug, Default)]
pub(crate) struct Analysis {
    pub cmds: Vec<Cmd>,
    /// Code that runs but cannot be seen, each as a phrase for the `why`.
    pub opaque: Vec<String>,
    /// The first reason the line cannot be analysed at all.
    pub error: Option<ShellError>,
    /// Files the line writes by redirection or `tee` (literal names only).
    pub written: Vec<String>,
    /// Script files and path-qualified programs the line runs (literal names only).
    pub run_files: Vec<String>,
}

pub(crate) struct Walker {
    pub depth: usize,
    pub out: Analysis,
    /// Commands found now are candidates only (see [`Cmd::maybe`]).
    pub maybe: bool,
    /// Candidate command lists checked so far for launchers read loosely.
    pub candidates: usize,
}

impl Walker {
    pub(crate) fn new() -> Self {
        Self {
            depth: 0,
            out: Analysis::default(),
            maybe: false,
            candidates: 0,
        }
    }

    /// Walks text that a program may run as a command line. What it names is checked against
    /// deny rules only, and text that is not a command line at all is not an error.
    pub(crate) fn maybe_line(&mut self, text: &str) {
        let text = text.trim_start_matches(['|', ' ', '\t', '!']);
        if text.trim().is_empty() {
            return;
        }
        let (was, opaque, error) = (self.maybe, self.out.opaque.len(), self.out.error.clone());
        self.maybe = true;
        self.walk_line(text);
        self.maybe = was;
        self.out.opaque.truncate(opaque);
        if matches!(self.out.error, Some(ShellError::Parse(_))) {
            self.out.error = error;
        }
    }

    pub(crate) fn fail(&mut self, e: ShellError) {
        if self.out.error.is_none() {
            self.out.error = Some(e);
        }
    }

    pub(crate) fn opaque(&mut self, what: impl Into<String>) {
        self.out.opaque.push(what.into());
    }

    /// Parses `text` as a program and walks it, one level deeper.
    pub(crate) fn walk_line(&mut self, text: &str) {
        if self.depth >= MAX_DEPTH {
            self.fail(ShellError::TooDeep(MAX_DEPTH));
            return;
        }
        if text.contains('\0') {
            // A shell that reads the line drops or stops at NUL bytes; what runs is unknowable.
            self.fail(ShellError::Parse("the line contains a NUL byte".into()));
            return;
        }
        // Bash 5.3 runs `${ cmd; }` and `${| cmd; }` in the current shell; the parser does not
        // know them (and quoted text that merely looks like one is refused too, erring wide).
        if ["${ ", "${\t", "${\n", "${|"]
            .iter()
            .any(|f| text.contains(f))
        {
            self.opaque("a `${ …; }` command substitution, which the analyser cannot read");
        }
        match parse(text) {
            Ok(program) => {
                self.depth += 1;
                for list in &program.complete_commands {
                    self.walk_list(list);
                }
                self.depth -= 1;
            }
            Err(e) => self.fail(e),
        }
    }

    fn walk_list(&mut self, list: &ast::CompoundList) {
        for item in &list.0 {
            let and_or = &item.0;
            self.walk_pipeline(&and_or.first);
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.walk_pipeline(p),
                }
            }
        }
    }

    fn walk_pipeline(&mut self, p: &ast::Pipeline) {
        for cmd in &p.seq {
            self.walk_command(cmd);
        }
    }

    fn walk_command(&mut self, cmd: &ast::Command) {
        match cmd {
            ast::Command::Simple(s) => self.walk_simple(s),
            ast::Command::Compound(c, redirects) => {
                self.walk_compound(c);
                self.walk_redirects(redirects.as_ref());
            }
            ast::Command::Function(f) => {
                self.walk_compound(&f.body.0);
                self.walk_redirects(f.body.1.as_ref());
            }
            ast::Command::ExtendedTest(t, redirects) => {
                self.walk_test(&t.expr);
                self.walk_redirects(redirects.as_ref());
            }
        }
    }

    fn walk_compound(&mut self, c: &ast::CompoundCommand) {
        use ast::CompoundCommand as C;
        match c {
            C::Arithmetic(a) => self.arithmetic(&a.expr.value),
            C::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&e.value);
                }
                self.walk_list(&f.body.list);
            }
            C::BraceGroup(b) => self.walk_list(&b.list),
            C::Subshell(s) => self.walk_list(&s.list),
            C::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(w);
                }
                self.walk_list(&f.body.list);
            }
            C::CaseClause(c) => {
                self.word(&c.value);
                for item in &c.cases {
                    for p in &item.patterns {
                        self.word(p);
                    }
                    if let Some(list) = &item.cmd {
                        self.walk_list(list);
                    }
                }
            }
            C::IfClause(i) => {
                self.walk_list(&i.condition);
                self.walk_list(&i.then);
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.walk_list(c);
                    }
                    self.walk_list(&e.body);
                }
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                self.walk_list(&w.0);
                self.walk_list(&w.1.list);
            }
            C::Coprocess(c) => {
                if let Some(n) = &c.name {
                    self.word(n);
                }
                self.walk_command(&c.body);
            }
        }
    }

    fn walk_test(&mut self, t: &ast::ExtendedTestExpr) {
        use ast::ExtendedTestExpr as T;
        match t {
            T::And(a, b) | T::Or(a, b) => {
                self.walk_test(a);
                self.walk_test(b);
            }
            T::Not(a) | T::Parenthesized(a) => self.walk_test(a),
            T::UnaryTest(pred, w) => {
                let w = self.word(w);
                let names_variable = matches!(
                    pred,
                    ast::UnaryPredicate::ShellVariableIsSetAndAssigned
                        | ast::UnaryPredicate::ShellVariableIsSetAndNameRef
                );
                if names_variable && (w.dynamic || w.text.contains('[')) {
                    self.opaque(format!(
                        "the test `-v {}`, whose subscript bash evaluates as code",
                        w.text
                    ));
                }
            }
            T::BinaryTest(pred, l, r) => {
                let (l, r) = (self.word(l), self.word(r));
                if is_arithmetic_test(pred) {
                    for w in [l, r] {
                        if w.dynamic || arithmetic_reads_variables(&w.text) {
                            self.opaque(format!(
                                "the arithmetic test on `{}`, which evaluates a variable's value as code",
                                w.text
                            ));
                        }
                    }
                }
            }
        }
    }

    fn walk_simple(&mut self, s: &ast::SimpleCommand) {
        let mut assigned = Vec::new();
        for item in s.prefix.iter().flat_map(|p| p.0.iter()) {
            self.walk_item(item, true, &mut assigned, &mut Vec::new());
        }
        let mut words = Vec::new();
        if let Some(w) = &s.word_or_name {
            let w = self.word(w);
            words.push(w);
        }
        for item in s.suffix.iter().flat_map(|p| p.0.iter()) {
            self.walk_item(item, false, &mut Vec::new(), &mut words);
        }
        for name in assigned {
            self.check_assignment_name(&name);
        }
        if !words.is_empty() {
            self.command(Cmd {
                words,
                open_tail: false,
                maybe: false,
            });
        }
    }

    fn walk_item(
        &mut self,
        item: &ast::CommandPrefixOrSuffixItem,
        prefix: bool,
        assigned: &mut Vec<String>,
        words: &mut Vec<Word>,
    ) {
        use ast::CommandPrefixOrSuffixItem as I;
        match item {
            I::IoRedirect(r) => self.walk_redirect(r),
            I::Word(w) => {
                let w = self.word(w);
                words.push(w);
            }
            I::AssignmentWord(a, w) => {
                assigned.push(assignment_name(a));
                if prefix {
                    self.walk_assignment(a);
                } else {
                    // An argument such as `export A=$(x)`: the word holds the whole assignment.
                    let w = self.word(w);
                    words.push(w);
                }
            }
            I::ProcessSubstitution(_, sub) => {
                self.nested(|me| me.walk_list(&sub.list));
                words.push(Word::unknown("<(…)"));
            }
        }
    }

    fn walk_assignment(&mut self, a: &ast::Assignment) {
        if let ast::AssignmentName::ArrayElementName(_, index) = &a.name {
            self.arithmetic(index);
        }
        match &a.value {
            ast::AssignmentValue::Scalar(w) => {
                // Programs read variables as commands (`PAGER`, `RUSTC_WRAPPER`, …).
                let value = self.word(w);
                if !value.dynamic {
                    self.maybe_line(&value.text);
                }
            }
            ast::AssignmentValue::Array(items) => {
                for (k, v) in items {
                    if let Some(k) = k {
                        self.word(k);
                    }
                    self.word(v);
                }
            }
        }
    }

    fn walk_redirects(&mut self, list: Option<&ast::RedirectList>) {
        for r in list.iter().flat_map(|l| l.0.iter()) {
            self.walk_redirect(r);
        }
    }

    fn walk_redirect(&mut self, r: &ast::IoRedirect) {
        use ast::IoFileRedirectTarget as T;
        match r {
            ast::IoRedirect::File(_, kind, target) => match target {
                T::Filename(w) | T::Duplicate(w) => {
                    let w = self.word(w);
                    let writes = !matches!(
                        kind,
                        ast::IoFileRedirectKind::Read | ast::IoFileRedirectKind::DuplicateInput
                    );
                    if writes && !w.dynamic {
                        self.out.written.push(file_key(&w.text));
                    }
                    if w.text.starts_with("/dev/tcp/") || w.text.starts_with("/dev/udp/") {
                        self.opaque(format!(
                            "a network connection through `{}`, which no shell rule covers",
                            w.text
                        ));
                    }
                }
                T::Fd(_) => {}
                T::ProcessSubstitution(_, sub) => self.nested(|me| me.walk_list(&sub.list)),
            },
            ast::IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    match words::scan_heredoc(&doc.doc.value) {
                        Some(scan) => self.embedded(scan.embedded),
                        None => self.fail(ShellError::Parse(
                            "a here-document body cannot be read".into(),
                        )),
                    }
                }
            }
            ast::IoRedirect::HereString(_, w) | ast::IoRedirect::OutputAndError(w, _) => {
                self.word(w);
            }
        }
    }

    /// Reads a word, walks the code inside it, and returns what the command would see.
    pub(crate) fn word(&mut self, w: &ast::Word) -> Word {
        match words::scan_word(&w.value) {
            Some(mut scan) => {
                let embedded = std::mem::take(&mut scan.embedded);
                self.embedded(embedded);
                scan.into_word(&w.value)
            }
            None => {
                self.fail(ShellError::Parse(format!(
                    "the word `{}` cannot be read",
                    w.value
                )));
                Word::unknown(w.value.clone())
            }
        }
    }

    fn embedded(&mut self, found: Vec<Embedded>) {
        for e in found {
            match e {
                Embedded::Program(text) => self.walk_line(&text),
                Embedded::Arithmetic(text) => self.arithmetic(&text),
                Embedded::Opaque(what) => self.opaque(what),
            }
        }
    }

    /// Arithmetic runs substitutions inside it, and variables' values as code.
    fn arithmetic(&mut self, text: &str) {
        if let Some(scan) = words::scan_word(text) {
            let programs: Vec<_> = scan
                .embedded
                .into_iter()
                .filter(|e| matches!(e, Embedded::Program(_)))
                .collect();
            self.embedded(programs);
        } else if text.contains(['$', '`']) {
            self.fail(ShellError::Parse(format!(
                "the arithmetic `{text}` cannot be read"
            )));
        }
        if arithmetic_reads_variables(text) {
            self.opaque(format!(
                "the arithmetic `{text}`, which evaluates variables' values as code"
            ));
        }
    }

    fn nested(&mut self, f: impl FnOnce(&mut Self)) {
        if self.depth >= MAX_DEPTH {
            self.fail(ShellError::TooDeep(MAX_DEPTH));
            return;
        }
        self.depth += 1;
        f(self);
        self.depth -= 1;
    }

    /// Variables that change which program runs or what a shell does at start-up.
    pub(crate) fn check_assignment_name(&mut self, name: &str) {
        if risky_variable(name) {
            self.opaque(format!(
                "setting `{name}`, which changes which program runs"
            ));
        }
    }
}

/// Variables that name a program to run, code to load, or configuration that does either.
fn risky_variable(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "PATH",
        "BASH_ENV",
        "ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "PS0",
        "PS1",
        "PS2",
        "PS4",
        "PROMPT_COMMAND",
        "ZDOTDIR",
        "SHELL",
        "VISUAL",
        "BROWSER",
        "GIT_SSH",
        "GIT_DIR",
        "GIT_EXEC_PATH",
        "GIT_CONFIG",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_PARAMETERS",
        "GIT_TEMPLATE_DIR",
        "GIT_EXTERNAL_DIFF",
        "LESSOPEN",
        "LESSCLOSE",
        "MANOPT",
        "NODE_OPTIONS",
        "PERL5OPT",
        "PERL5LIB",
        "PERLLIB",
        "RUBYOPT",
        "RUBYLIB",
        "PYTHONSTARTUP",
        "PYTHONHOME",
        "GCONV_PATH",
        "RUSTC",
        "RUSTDOC",
        "BASH_LOADABLES_PATH",
        "FCEDIT",
        "LESS",
        "MORE",
        "LESSKEY",
        "MANPAGER",
    ];
    const PREFIXES: &[&str] = &[
        "LD_",
        "DYLD_",
        "BASH_FUNC_",
        "GIT_CONFIG_KEY_",
        "GIT_CONFIG_VALUE_",
    ];
    const SUFFIXES: &[&str] = &[
        "_COMMAND", "_CMD", "WRAPPER", "EDITOR", "PAGER", "_RUNNER", "_LINKER", "_PROGRAM",
        "ASKPASS", "_SHELL",
    ];
    let upper = name.to_ascii_uppercase();
    EXACT.contains(&upper.as_str())
        || PREFIXES.iter().any(|p| upper.starts_with(p))
        || SUFFIXES.iter().any(|p| upper.ends_with(p))
}

fn assignment_name(a: &ast::Assignment) -> String {
    match &a.name {
        ast::AssignmentName::VariableName(n) | ast::AssignmentName::ArrayElementName(n, _) => {
            n.clone()
        }
    }
}

fn is_arithmetic_test(p: &ast::BinaryPredicate) -> bool {
    use ast::BinaryPredicate as B;
    matches!(
        p,
        B::ArithmeticEqualTo
            | B::ArithmeticNotEqualTo
            | B::ArithmeticLessThan
            | B::ArithmeticLessThanOrEqualTo
            | B::ArithmeticGreaterThan
            | B::ArithmeticGreaterThanOrEqualTo
    )
}

/// Parses a whole program, refusing input that would exhaust the parser's stack.
pub(crate) fn parse(text: &str) -> Result<ast::Program, ShellError> {
    if text.len() > MAX_LINE_BYTES {
        return Err(ShellError::TooLong(MAX_LINE_BYTES));
    }
    if bracket_nesting(text) > MAX_NESTING {
        return Err(ShellError::TooDeep(MAX_NESTING));
    }
    let opts = words::options();
    let parsed = std::panic::catch_unwind(|| {
        let tokens = brush_parser::uncached_tokenize_str(text, &opts.tokenizer_options())
            .map_err(|e| ShellError::Parse(e.to_string()))?;
        if keyword_nesting(&tokens) > MAX_NESTING {
            return Err(ShellError::TooDeep(MAX_NESTING));
        }
        brush_parser::parse_tokens(&tokens, &opts).map_err(|e| ShellError::Parse(e.to_string()))
    });
    parsed.unwrap_or_else(|_| Err(ShellError::Parse("the parser failed on this input".into())))
}

/// The deepest bracket nesting in the raw text, counted over-generously (quotes are ignored).
/// Brackets nest inside words too (`$(…)`, `${…}`), where tokens cannot see them.
fn bracket_nesting(text: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for c in text.chars() {
        match c {
            '(' | '{' | '[' | '`' => {
                depth += 1;
                max = max.max(depth);
            }
            ')' | '}' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// The deepest nesting of compound commands, from tokens (so here-document bodies and quoted
/// text do not count). A closer only closes its own opener: the `)` ending a `case` pattern
/// cannot hide an open `if`.
fn keyword_nesting(tokens: &[brush_parser::Token]) -> usize {
    let mut open: Vec<&'static str> = Vec::new();
    let mut max = 0;
    for t in tokens {
        let closer = match t.to_str() {
            "if" => Some("fi"),
            "while" | "until" | "for" | "select" => Some("done"),
            "case" => Some("esac"),
            "{" => Some("}"),
            "[[" => Some("]]"),
            "(" | "((" | "$(" => Some(")"),
            other => {
                if open
                    .last()
                    .is_some_and(|c| *c == other || (*c == ")" && other == "))"))
                {
                    open.pop();
                }
                None
            }
        };
        if let Some(c) = closer {
            open.push(c);
            max = max.max(open.len());
        }
    }
    max
}

/// A file name as compared between writing and running it: `./x` and `x` are the same file.
pub(crate) fn file_key(path: &str) -> String {
    let mut p = path;
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    p.to_string()
}
