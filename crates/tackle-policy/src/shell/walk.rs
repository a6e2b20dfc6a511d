//! Walking a parsed shell program and collecting every command it would run.

use super::nesting::{possible_nesting, MAX_POSSIBLE_NESTING};
use super::words::{self, Embedded, Word};
use super::ShellError;
use brush_parser::ast;
use brush_parser::word::{WordPiece, WordPieceWithSource};

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
    /// A file the line writes whose name is computed at run time (its spelling).
    pub written_dynamic: Option<String>,
    /// Programs the line runs that read files of their own which can name programs, with
    /// those files' patterns (see `runners::Runner::reads`).
    pub reads: Vec<(String, &'static [&'static str])>,
    /// Variables whose values arithmetic evaluates, with the arithmetic that reads them.
    pub arithmetic_reads: Vec<(String, String)>,
    /// Every value the line gives each variable (`None`: computed at run time).
    pub assigned: Vec<(String, Option<String>)>,
    /// Functions the line defines, with the number of commands found before the definition.
    pub functions: Vec<(String, usize)>,
    /// Every function name the line defines anywhere (nested, conditional, in inner shells).
    pub defined_functions: Vec<String>,
    /// Programs whose output arithmetic takes as a count (see `counting_output`), with the
    /// arithmetic text: fine only while no function of the line shadows them.
    pub counted: Vec<(String, String)>,
    /// Invocations of a program whose subcommand configuration the analyser cannot see may
    /// rename or re-route (a `git` alias, a hook, a planted config file), each with a phrase
    /// for the `why`. Harmless to a rule naming only the program, which the sandbox enforces
    /// at exec; opaque while a rule names the program with arguments (`git push`), which only
    /// the analyser can enforce.
    pub config_routed: Vec<(String, String)>,
}

impl Analysis {
    /// Arithmetic evaluates a variable's value as an expression (whose subscripts run
    /// commands): fine only for a variable the line sets, and only ever to integers. One it
    /// leaves alone has a value from elsewhere (the environment, or bash itself: `$_` is the
    /// previous command's last argument).
    pub(crate) fn settle_arithmetic(&mut self) {
        for (program, text) in std::mem::take(&mut self.counted) {
            // A function of the same name (or the handler bash calls for a missing program)
            // would print whatever it likes in place of the count.
            let shadowed = self
                .defined_functions
                .iter()
                .any(|f| *f == program || f == "command_not_found_handle");
            if shadowed {
                self.opaque.push(format!(
                    "the arithmetic `{text}`, which evaluates the output of `{program}`, a name the line defines as a function"
                ));
            }
        }
        for (name, text) in std::mem::take(&mut self.arithmetic_reads) {
            let mut values = self.assigned.iter().filter(|(n, _)| n == &name).peekable();
            // Bash keeps some variables integers itself (`$RANDOM`, `$SECONDS`): fine unless
            // the line assigns or unsets them (then their values count). Others it sets after
            // the line's own assignments (`$_` is the previous command's last argument,
            // `BASH_REMATCH` what `=~` matched): whatever the line assigned, their values come
            // from elsewhere.
            let unsafe_value = (values.peek().is_none()
                && !ALWAYS_INTEGER.contains(&name.as_str()))
                || SET_BY_BASH.contains(&name.as_str())
                || values.any(|(_, v)| !v.as_deref().is_some_and(words::inert_arithmetic_value));
            if unsafe_value {
                self.opaque.push(format!(
                    "the arithmetic `{text}`, which evaluates the value of `{name}` as code"
                ));
            }
        }
    }
}

pub(crate) struct Walker {
    pub depth: usize,
    pub out: Analysis,
    /// Commands found now are candidates only (see [`Cmd::maybe`]).
    pub maybe: bool,
    /// Candidate command lists checked so far for launchers read loosely.
    pub candidates: usize,
    /// The literal text the current simple command gets as its input (a here-document with a
    /// quoted delimiter, or a here-string without expansions).
    pub stdin_literal: Option<String>,
    /// How many compound commands (groups, loops, conditionals, function bodies) enclose the
    /// command being walked.
    pub compound: usize,
    /// The current command's input may come from the line (a pipe, a redirection, a
    /// here-document). Otherwise it is empty: the host runs shell lines with no input.
    pub fed: bool,
}

impl Walker {
    pub(crate) fn new() -> Self {
        Self {
            depth: 0,
            out: Analysis::default(),
            maybe: false,
            candidates: 0,
            stdin_literal: None,
            compound: 0,
            fed: false,
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
        let routed = self.out.config_routed.len();
        self.maybe = true;
        self.walk_line(text);
        self.maybe = was;
        self.out.opaque.truncate(opaque);
        self.out.config_routed.truncate(routed);
        if matches!(self.out.error, Some(ShellError::Parse(_))) {
            self.out.error = error;
        }
    }

    /// Records a file the line writes.
    pub(crate) fn note_written(&mut self, w: &Word) {
        if let Some(program) = Some(w)
            .filter(|w| !w.dynamic)
            .and_then(|w| super::git::config_place(&w.text))
        {
            // Even without the program in this line: a later line's run reads what it planted.
            self.routed(
                program,
                format!(
                    "it writes `{}`, {}",
                    w.text,
                    super::git::config_place_phrase(program)
                ),
            );
        }
        if w.dynamic {
            self.out
                .written_dynamic
                .get_or_insert_with(|| w.text.clone());
        } else {
            self.out.written.push(file_key(&w.text));
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

    /// Notes an invocation of `program` that configuration may re-route (see
    /// [`Analysis::config_routed`]).
    pub(crate) fn routed(&mut self, program: &str, what: impl Into<String>) {
        self.out
            .config_routed
            .push((program.to_string(), what.into()));
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
        // know them (its tokenizer even drops the blanks inside). Only text the shell reads
        // literally may hold one: a single-quoted string, `$'…'`, or the body of a
        // here-document with a quoted delimiter (JavaScript template strings, commit messages).
        if funsub_outside_literal_text(text) {
            self.opaque("a `${ …; }` command substitution, which the analyser cannot read");
        }
        if heredoc_inside_backquotes(text) {
            self.fail(ShellError::Parse(
                "a here-document inside a backquoted command substitution, which shells read differently; use $( … ) instead".into(),
            ));
            return;
        }
        if let Some(delim) = heredoc_with_odd_delimiter(text) {
            self.fail(ShellError::Parse(if delim.is_empty() {
                "a here-document operator `<<` with no delimiter word after it".into()
            } else {
                format!(
                    "the here-document delimiter `{delim}` is not a plain word, and shells read such bodies differently"
                )
            }));
            return;
        }
        if let Some(delim) = heredoc_with_unbalanced_brackets(text) {
            // Parsers find the end of `$(…)` by its brackets and disagree with bash when a
            // here-document body inside it opens more than it closes.
            self.fail(ShellError::Parse(format!(
                "the here-document `{delim}` inside a command substitution has unbalanced brackets, which shells and parsers read differently"
            )));
            return;
        }
        for region in double_paren_regions(text) {
            // Bash reads `((…))` as arithmetic first, expanding what is inside (quotes
            // included, see `arithmetic`), even when it then runs it as nested subshells,
            // which is how the parser reads it. Its substitutions are checked either way.
            self.substitutions_in_arithmetic(region);
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
            self.note_function(item);
            self.walk_pipeline(&and_or.first);
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.walk_pipeline(p),
                }
            }
        }
    }

    /// A function defined unconditionally in the line's own shell: later calls run its body
    /// (whose commands are checked), not a program. One defined in a subshell, a pipeline, a
    /// background job, a nested shell or a conditional may not exist when it is called.
    fn note_function(&mut self, item: &ast::CompoundListItem) {
        let top = self.depth == 1 && self.compound == 0 && !self.maybe;
        let sequential = matches!(item.1, ast::SeparatorOperator::Sequence);
        let and_or = &item.0;
        if !top || !sequential || !and_or.additional.is_empty() {
            return;
        }
        if let [ast::Command::Function(f)] = and_or.first.seq.as_slice() {
            if !and_or.first.bang {
                self.out
                    .functions
                    .push((f.fname.value.clone(), self.out.cmds.len()));
            }
        }
    }

    fn walk_pipeline(&mut self, p: &ast::Pipeline) {
        for (i, cmd) in p.seq.iter().enumerate() {
            // A later part of a pipeline reads what the earlier parts write.
            let outer = self.fed;
            self.fed |= i > 0;
            self.walk_command(cmd);
            self.fed = outer;
        }
    }

    /// Runs `f` with the input marked as fed by the line when `fed`.
    fn with_input(&mut self, fed: bool, f: impl FnOnce(&mut Self)) {
        let outer = self.fed;
        self.fed |= fed;
        f(self);
        self.fed = outer;
    }

    fn walk_command(&mut self, cmd: &ast::Command) {
        match cmd {
            ast::Command::Simple(s) => self.walk_simple(s),
            ast::Command::Compound(c, redirects) => {
                let fed = redirects
                    .as_ref()
                    .is_some_and(|l| l.0.iter().any(reads_input));
                self.with_input(fed, |me| me.walk_compound(c));
                self.walk_redirects(redirects.as_ref());
            }
            ast::Command::Function(f) => {
                self.out.defined_functions.push(f.fname.value.clone());
                // A function's input is whatever its callers give it.
                self.with_input(true, |me| me.walk_compound(&f.body.0));
                self.walk_redirects(f.body.1.as_ref());
            }
            ast::Command::ExtendedTest(t, redirects) => {
                self.walk_test(&t.expr);
                self.walk_redirects(redirects.as_ref());
            }
        }
    }

    fn walk_compound(&mut self, c: &ast::CompoundCommand) {
        self.compound += 1;
        self.walk_compound_body(c);
        self.compound -= 1;
    }

    fn walk_compound_body(&mut self, c: &ast::CompoundCommand) {
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
                    let w = self.word(w);
                    let value = (!w.dynamic).then_some(w.text.as_str());
                    self.assigned(&f.variable_name, value);
                }
                if f.values.is_none() {
                    // `for x; do` takes the positional parameters.
                    self.assigned(&f.variable_name, None);
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
                // The shell writes to a coprocess's input.
                self.with_input(true, |me| me.walk_command(&c.body));
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
                        self.arithmetic_reads(&w.text);
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
            let outer = self.stdin_literal.take();
            self.stdin_literal = literal_input(s);
            let fed = s
                .prefix
                .iter()
                .flat_map(|p| p.0.iter())
                .chain(s.suffix.iter().flat_map(|p| p.0.iter()))
                .any(|item| matches!(item, ast::CommandPrefixOrSuffixItem::IoRedirect(r) if reads_input(r)));
            self.with_input(fed, |me| {
                me.command(Cmd {
                    words,
                    open_tail: false,
                    maybe: false,
                })
            });
            self.stdin_literal = outer;
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
                let name = assignment_name(a);
                if value.dynamic {
                    match self.integer_value(&w.value, &name) {
                        // `n=$(wc -l < f)`, `t=$((a + b))`: an integer whatever the input.
                        IntegerValue::Base => self.assigned(&name, Some("0")),
                        // `i=$((i + 1))` is an integer too, but only as safe as the value `i`
                        // had before: it gives `i` no value of its own.
                        IntegerValue::FromItself => self.check_assignment_name(&name),
                        IntegerValue::No => self.assigned(&name, None),
                    }
                    return;
                }
                self.assigned(&name, Some(value.text.as_str()));
                self.assigned_value(&name, &value.text);
            }
            ast::AssignmentValue::Array(items) => {
                self.assigned(&assignment_name(a), None);
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
                    if writes {
                        self.note_written(&w);
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

    /// The programs an arithmetic expression's substitutions run, checked like any other.
    /// Bash expands arithmetic as if it were in double quotes: a single quote there quotes
    /// nothing, so `(( '$(cmd)' ))` runs cmd. Scanned with the quotes blanked, what is inside
    /// them is seen as bash sees it.
    fn substitutions_in_arithmetic(&mut self, text: &str) {
        let unquoted = text.replace('\'', " ");
        if let Some(scan) = words::scan_word(&unquoted) {
            let programs: Vec<_> = scan
                .embedded
                .into_iter()
                .filter(|e| matches!(e, Embedded::Program(_)))
                .collect();
            self.embedded(programs);
        } else if unquoted.contains(['$', '`']) {
            self.fail(ShellError::Parse(format!(
                "the arithmetic `{unquoted}` cannot be read"
            )));
        }
    }

    /// Arithmetic runs substitutions inside it, and variables' values as code.
    fn arithmetic(&mut self, text: &str) {
        self.substitutions_in_arithmetic(text);
        self.arithmetic_reads(&text.replace('\'', " "));
    }

    /// Notes the variables arithmetic `text` evaluates (settled once the whole line is read).
    pub(crate) fn arithmetic_reads(&mut self, text: &str) {
        let counted = counted_arithmetic(text);
        for program in counted.programs {
            self.out.counted.push((program, text.to_string()));
        }
        match words::arithmetic_variables(&counted.text) {
            Some(names) => {
                // `i=0` inside arithmetic gives `i` an integer.
                for n in words::arithmetic_assignments(text) {
                    self.assigned(&n, Some("0"));
                }
                for n in names {
                    self.out.arithmetic_reads.push((n, text.to_string()));
                }
            }
            None => self.opaque(format!(
                "the arithmetic `{text}`, which evaluates text from outside the line as code"
            )),
        }
    }

    /// Whether an assignment's value (its source `raw`) is always an integer: one arithmetic
    /// expansion, or one command substitution whose output is a count, quoted or not.
    fn integer_value(&mut self, raw: &str, name: &str) -> IntegerValue {
        let Some(pieces) =
            words::guarded(|| brush_parser::word::parse(raw, &words::options()).ok())
        else {
            return IntegerValue::No;
        };
        let mut only = &pieces[..];
        if let [one] = only {
            if let WordPiece::DoubleQuotedSequence(inner) = &one.piece {
                only = inner;
            }
        }
        let [one] = only else {
            return IntegerValue::No;
        };
        match &one.piece {
            WordPiece::ArithmeticExpression(e) => {
                let counted = counted_arithmetic(&e.value.replace('\'', " "));
                match words::arithmetic_variables(&counted.text) {
                    Some(names) if !names.iter().any(|n| n == name) => IntegerValue::Base,
                    _ => IntegerValue::FromItself,
                }
            }
            WordPiece::ParameterExpansion(_) => {
                let piece = raw.get(one.start_index..one.end_index).unwrap_or("");
                match integer_expansion(piece) {
                    Some(None) => IntegerValue::Base,
                    // `start=$SECONDS` is as safe as `$SECONDS` in arithmetic is.
                    Some(Some(var)) if var != name => {
                        self.out.arithmetic_reads.push((var, raw.to_string()));
                        IntegerValue::Base
                    }
                    _ => IntegerValue::No,
                }
            }
            WordPiece::CommandSubstitution(body)
            | WordPiece::BackquotedCommandSubstitution(body) => match counting_output(body) {
                Some(program) => {
                    self.out.counted.push((program, raw.to_string()));
                    IntegerValue::Base
                }
                None => IntegerValue::No,
            },
            _ => IntegerValue::No,
        }
    }

    /// Notes a value the line gives a variable.
    pub(crate) fn assigned(&mut self, name: &str, value: Option<&str>) {
        // Every way of setting a variable counts (`printf -v PS4`, `read PATH`, `for BASH_ENV`).
        self.check_assignment_name(name);
        self.out
            .assigned
            .push((name.to_string(), value.map(str::to_string)));
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

    /// The value given to variable `name`: a command where programs run the variable as one
    /// (`CC=clang make` runs clang: the allow list must cover it), otherwise a candidate.
    pub(crate) fn assigned_value(&mut self, name: &str, value: &str) {
        if program_variable(name) {
            if !value.trim().is_empty() {
                self.walk_line(value);
            }
        } else {
            self.maybe_line(value);
        }
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

/// Variables bash itself sets as the line runs, whatever the line assigned them.
const SET_BY_BASH: &[&str] = &[
    "_",
    "BASH_REMATCH",
    "REPLY",
    "OPTARG",
    "MAPFILE",
    "COPROC",
    "PWD",
    "OLDPWD",
    "BASH_COMMAND",
    "BASH_ARGV",
    "BASH_ARGV0",
    "BASH_SOURCE",
    "BASH_EXECUTION_STRING",
    "FUNCNAME",
    "DIRSTACK",
    "READLINE_LINE",
    "COMP_LINE",
    "COMP_WORDS",
    "HOSTNAME",
];

/// Variables bash keeps as integers itself, until the line assigns or unsets them.
const ALWAYS_INTEGER: &[&str] = &[
    "RANDOM",
    "SRANDOM",
    "SECONDS",
    "EPOCHSECONDS",
    "LINENO",
    "BASHPID",
    "PPID",
    "UID",
    "EUID",
    "HISTCMD",
];

/// An expansion that is always an integer: `Some(None)` for a length (`${#x}`, `${#a[@]}`,
/// `$#`), `Some(Some(name))` for a variable bash keeps an integer (`$SECONDS`), whose own
/// assignments the caller still has to settle.
fn integer_expansion(raw: &str) -> Option<Option<String>> {
    let is_name = |n: &str| {
        !n.is_empty()
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !n.starts_with(|c: char| c.is_ascii_digit())
    };
    if raw == "$#" || raw == "${#}" {
        return Some(None);
    }
    if let Some(inner) = raw.strip_prefix("${#").and_then(|r| r.strip_suffix('}')) {
        let name = inner
            .strip_suffix("[@]")
            .or_else(|| inner.strip_suffix("[*]"))
            .unwrap_or(inner);
        return (is_name(name) || matches!(name, "@" | "*")).then_some(None);
    }
    let name = raw
        .strip_prefix("${")
        .and_then(|r| r.strip_suffix('}'))
        .or_else(|| raw.strip_prefix('$'))?;
    ALWAYS_INTEGER
        .contains(&name)
        .then(|| Some(name.to_string()))
}

/// How an assignment's value reads in arithmetic.
enum IntegerValue {
    /// Always an integer, computed without the variable's own earlier value.
    Base,
    /// An integer computed from the variable's own earlier value (`i=$((i + 1))`).
    FromItself,
    /// Anything.
    No,
}

/// Arithmetic text with each command substitution whose output is a count replaced by `1`.
struct CountedArithmetic {
    text: String,
    /// The programs whose output was taken as a count.
    programs: Vec<String>,
}

/// Arithmetic evaluates text as an expression, and an expression can run code (`a[$(cmd)]`
/// evaluates its subscript), so text from a command's output is refused in general. Output
/// that is only ever a count (`$(wc -l < f)`, `$(ls | wc -l)`, `$(grep -c x f)`) is a number:
/// replaced by one, the rest of the text is judged as before. Double quotes, which arithmetic
/// removes, are removed; anything else stays as written for `arithmetic_variables` to judge.
fn counted_arithmetic(text: &str) -> CountedArithmetic {
    let mut out = CountedArithmetic {
        text: String::new(),
        programs: Vec::new(),
    };
    if !text.contains(['$', '`']) {
        out.text = text.to_string();
        return out;
    }
    let Some(pieces) = words::guarded(|| brush_parser::word::parse(text, &words::options()).ok())
    else {
        out.text = text.to_string();
        return out;
    };
    fn rewrite(pieces: &[WordPieceWithSource], source: &str, out: &mut CountedArithmetic) {
        for p in pieces {
            let raw = source.get(p.start_index..p.end_index).unwrap_or("");
            match &p.piece {
                WordPiece::CommandSubstitution(body)
                | WordPiece::BackquotedCommandSubstitution(body) => match counting_output(body) {
                    Some(program) => {
                        out.programs.push(program);
                        out.text.push_str(" 1 ");
                    }
                    None => out.text.push_str(raw),
                },
                WordPiece::DoubleQuotedSequence(inner) => rewrite(inner, source, out),
                // `${#arr[@]}`: a length is a number, and no subscript is evaluated.
                WordPiece::ParameterExpansion(_) if integer_expansion(raw) == Some(None) => {
                    out.text.push_str(" 1 ")
                }
                _ => out.text.push_str(raw),
            }
        }
    }
    rewrite(&pieces, text, &mut out);
    out
}

/// The program whose output is the whole output of command substitution `body`, when that
/// output can only be a count: the last command of a single pipeline is `wc` counting one
/// thing on its input, `grep -c` on its input or one file, `date +%s`-like formats, `nproc`,
/// or `git rev-list --count`, every word of it literal, with no redirection that could put
/// other text on its output. Whatever earlier commands of the pipeline print goes into it.
fn counting_output(body: &str) -> Option<String> {
    let program = parse(body).ok()?;
    let [list] = &program.complete_commands[..] else {
        return None;
    };
    let [item] = &list.0[..] else {
        return None;
    };
    if !matches!(item.1, ast::SeparatorOperator::Sequence) || !item.0.additional.is_empty() {
        return None;
    }
    let pipeline = &item.0.first;
    if pipeline.timed.is_some() {
        return None;
    }
    let ast::Command::Simple(last) = pipeline.seq.last()? else {
        return None;
    };
    let mut words = Vec::new();
    let items = last
        .prefix
        .iter()
        .flat_map(|p| p.0.iter())
        .chain(last.suffix.iter().flat_map(|p| p.0.iter()));
    for item in items {
        use ast::CommandPrefixOrSuffixItem as I;
        use ast::IoFileRedirectKind as K;
        use ast::IoFileRedirectTarget as T;
        match item {
            I::Word(w) => words.push(w),
            I::IoRedirect(ast::IoRedirect::File(fd, K::Read, T::Filename(_)))
                if fd.is_none_or(|n| n == 0) => {}
            I::IoRedirect(
                ast::IoRedirect::HereDocument(fd, _) | ast::IoRedirect::HereString(fd, _),
            ) if fd.is_none_or(|n| n == 0) => {}
            I::IoRedirect(ast::IoRedirect::File(
                Some(2),
                K::Write | K::Append | K::Clobber,
                T::Filename(w),
            )) if w.value == "/dev/null" => {}
            _ => return None,
        }
    }
    let mut literal = Vec::new();
    for w in last.word_or_name.iter().chain(words) {
        let scan = words::scan_word(&w.value)?;
        if !scan.embedded.is_empty() {
            return None;
        }
        let word = scan.into_word(&w.value);
        if word.dynamic {
            return None;
        }
        literal.push(word.text);
    }
    let (name, args) = literal.split_first()?;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let counts = match name.as_str() {
        "wc" => matches!(
            args[..],
            ["-l" | "-c" | "-w" | "-m" | "--lines" | "--bytes" | "--words" | "--chars"]
        ),
        "grep" => grep_counts(&args),
        "date" => date_counts(&args),
        "nproc" => matches!(args[..], [] | ["--all"]),
        "git" => {
            args.first() == Some(&"rev-list")
                && args.contains(&"--count")
                && args.iter().skip(1).all(|a| {
                    !a.starts_with('-')
                        || matches!(
                            *a,
                            "--count" | "--all" | "--no-merges" | "--merges" | "--first-parent"
                        )
                })
        }
        _ => false,
    };
    counts.then(|| name.clone())
}

/// `grep -c PATTERN [FILE]` with options that change neither what it prints nor where it
/// reads: one count, never a file name (which `-r`, `-H` or a second file would add).
fn grep_counts(args: &[&str]) -> bool {
    const LONG: &[&str] = &[
        "--count",
        "--ignore-case",
        "--invert-match",
        "--word-regexp",
        "--line-regexp",
        "--extended-regexp",
        "--fixed-strings",
        "--basic-regexp",
        "--perl-regexp",
        "--no-messages",
    ];
    let mut count = false;
    let mut operands = 0;
    let mut options_end = false;
    for a in args {
        if options_end || !a.starts_with('-') || *a == "-" {
            operands += 1;
        } else if *a == "--" {
            options_end = true;
        } else if let Some(long) = a.strip_prefix("--") {
            if !LONG.contains(a) {
                return false;
            }
            count |= long == "count";
        } else {
            let letters = a.get(1..).unwrap_or("");
            if !letters.chars().all(|c| "civwxEFGPsaIU".contains(c)) {
                return false;
            }
            count |= letters.contains('c');
        }
    }
    count && (1..=2).contains(&operands)
}

/// `date [-u] +FORMAT` where the format is only digits and conversions that print numbers.
fn date_counts(args: &[&str]) -> bool {
    let format = match args {
        [f] | ["-u" | "--utc", f] => f,
        _ => return false,
    };
    let Some(format) = format.strip_prefix('+') else {
        return false;
    };
    let mut chars = format.chars();
    let mut any = false;
    while let Some(c) = chars.next() {
        match c {
            '%' => match chars.next() {
                Some(c) if "sYmdHMSjNuwyCGgVUWeklI".contains(c) => any = true,
                _ => return false,
            },
            c if c.is_ascii_digit() => {}
            _ => return false,
        }
    }
    any
}

/// Whether a redirection gives the command input the line controls (a file, a here-document,
/// a here-string, another descriptor).
fn reads_input(r: &ast::IoRedirect) -> bool {
    use ast::IoFileRedirectKind as K;
    match r {
        ast::IoRedirect::File(fd, kind, _) => {
            matches!(kind, K::Read | K::ReadAndWrite | K::DuplicateInput)
                && fd.is_none_or(|n| n == 0)
        }
        ast::IoRedirect::HereDocument(fd, _) | ast::IoRedirect::HereString(fd, _) => {
            fd.is_none_or(|n| n == 0)
        }
        ast::IoRedirect::OutputAndError(..) => false,
    }
}

/// The input a simple command gets from a here-document with a quoted delimiter or a
/// here-string with no expansion, when that is its only input redirection.
fn literal_input(s: &ast::SimpleCommand) -> Option<String> {
    let redirects = s
        .prefix
        .iter()
        .flat_map(|p| p.0.iter())
        .chain(s.suffix.iter().flat_map(|p| p.0.iter()))
        .filter_map(|item| match item {
            ast::CommandPrefixOrSuffixItem::IoRedirect(r) => Some(r),
            _ => None,
        });
    let mut found = None;
    for r in redirects {
        let text = match r {
            ast::IoRedirect::HereDocument(_, doc) if !doc.requires_expansion => {
                Some(doc.doc.value.clone())
            }
            ast::IoRedirect::HereString(_, w) => words::scan_word(&w.value)
                .map(|scan| scan.into_word(&w.value))
                .filter(|w| !w.dynamic)
                .map(|w| w.text),
            ast::IoRedirect::HereDocument(..) => return None,
            ast::IoRedirect::File(
                _,
                ast::IoFileRedirectKind::Read | ast::IoFileRedirectKind::ReadAndWrite,
                _,
            ) => return None,
            _ => continue,
        };
        if found.is_some() {
            return None;
        }
        found = text;
    }
    found
}

/// Variables whose value build tools and other programs run as a program.
fn program_variable(name: &str) -> bool {
    const PROGRAMS: &[&str] = &[
        "CC",
        "CXX",
        "CPP",
        "LD",
        "AR",
        "AS",
        "NM",
        "RANLIB",
        "STRIP",
        "OBJCOPY",
        "OBJDUMP",
        "FC",
        "F77",
        "MAKE",
        "YACC",
        "BISON",
        "LEX",
        "FLEX",
        "PKG_CONFIG",
        "CARGO",
        "PYTHON",
        "PERL",
        "RUBY",
        "JAVA",
        "JAVAC",
        "INSTALL",
        "M4",
        "AWK",
        "SED",
        "HOSTCC",
        "HOSTCXX",
        "DLLTOOL",
        "WINDRES",
        "READELF",
        "SIZE",
        "STRINGS",
        "GDB",
        "NODE",
        "NPM",
        "GO",
    ];
    PROGRAMS.contains(&name.to_ascii_uppercase().as_str())
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
        // The directory whose `config` and `hooks/` a repository shares with its worktrees.
        "GIT_COMMON_DIR",
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
        "GOFLAGS",
        "RIPGREP_CONFIG_PATH",
        "APT_CONFIG",
        "PSQLRC",
        "WGETRC",
        "CURL_HOME",
        "LUA_INIT",
        "MAKEFLAGS",
        "MFLAGS",
        "GNUMAKEFLAGS",
        "MAKEFILES",
        "TAR_OPTIONS",
        "ZIPOPT",
        "RSYNC_RSH",
        "RSYNC_CONNECT_PROG",
        "CVS_RSH",
        "TERMINAL",
        "INPUTRC",
        "SCREENRC",
        "VIMINIT",
        "EXINIT",
        "MYVIMRC",
        "GVIMINIT",
        "VIMRUNTIME",
        "EMACSLOADPATH",
        "R_PROFILE",
        "R_PROFILE_USER",
        "R_ENVIRON",
        "R_ENVIRON_USER",
        "PHPRC",
        "PHP_INI_SCAN_DIR",
        "OPENSSL_CONF",
        "OPENSSL_ENGINES",
        "BUNDLE_GEMFILE",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "MAVEN_OPTS",
        "GRADLE_OPTS",
        "DOTNET_STARTUP_HOOKS",
        "CORECLR_PROFILER_PATH",
        "ELECTRON_RUN_AS_NODE",
        "TCLLIBPATH",
        "GUILE_LOAD_PATH",
        "SHELL_ESCAPE",
        "CROSS_COMPILE",
        "GIT_SSH_VARIANT",
        "SYSTEMD_EDITOR",
        "HOSTALIASES",
        "PROMPT_COMMAND",
        "HISTFILE",
        "TEXMFCNF",
        "GDBHISTFILE",
        "PYTHONUSERBASE",
        "PIP_CONFIG_FILE",
        "NPM_CONFIG_USERCONFIG",
        "HOME",
        "XDG_CONFIG_HOME",
        "XDG_CONFIG_DIRS",
        "XDG_DATA_HOME",
        "XDG_DATA_DIRS",
        "LESSKEYIN",
        "LESSKEYIN_SYSTEM",
        "LESSKEY_CONTENT",
        "GROFF_BIN_PATH",
        "GROFF_COMMAND_PREFIX",
        "GROFF_TMAC_PATH",
        "MANROFFOPT",
        "MANROFFSEQ",
        "COMPILER_PATH",
        "GCC_EXEC_PREFIX",
        "DPKG_ROOT",
        "CARGO_BUILD_RUSTC",
        "CARGO_BUILD_RUSTDOC",
        "CARGO_HOME",
    ];
    const PREFIXES: &[&str] = &[
        "LD_",
        "DYLD_",
        "BASH_FUNC_",
        "GIT_CONFIG_KEY_",
        "GIT_CONFIG_VALUE_",
        "NPM_CONFIG_",
        "CARGO_ALIAS_",
    ];
    const SUFFIXES: &[&str] = &[
        "_COMMAND",
        "_CMD",
        "WRAPPER",
        "EDITOR",
        "PAGER",
        "_RUNNER",
        "_LINKER",
        "_PROGRAM",
        "ASKPASS",
        "_SHELL",
        "CREDENTIAL_PROVIDER",
        "_LAUNCHER",
        "_COMPILER",
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
    if possible_nesting(text) > MAX_POSSIBLE_NESTING {
        return Err(ShellError::TooDeep(MAX_POSSIBLE_NESTING));
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

/// The markers that open a bash 5.3 command substitution run in the current shell.
const FUNSUB_MARKERS: &[&str] = &["${ ", "${\t", "${\n", "${|"];

/// Whether `text` holds a `${ …; }` or `${| …; }` marker anywhere but in text the shell takes
/// literally. Literal text is found from the tokenizer's own reading (the one every other
/// check relies on): the top-level single-quoted and `$'…'` pieces of each word token, and a
/// here-document body whose delimiter is quoted. Everything else (double quotes, `$(…)`,
/// bodies that expand, a token whose position cannot be confirmed in the source) counts, so
/// the check errs wide exactly where the text could run.
fn funsub_outside_literal_text(text: &str) -> bool {
    let markers: Vec<usize> = FUNSUB_MARKERS
        .iter()
        .flat_map(|m| text.match_indices(m).map(|(at, _)| at))
        .collect();
    if markers.is_empty() {
        return false;
    }
    let literal = match literal_spans(text) {
        Some(spans) => spans,
        None => return true,
    };
    markers
        .iter()
        .any(|at| !literal.iter().any(|(from, to)| from <= at && at < to))
}

/// Byte ranges of `text` that the shell reads literally (see `funsub_outside_literal_text`),
/// or `None` when the text cannot be tokenized safely.
fn literal_spans(text: &str) -> Option<Vec<(usize, usize)>> {
    if text.len() > MAX_LINE_BYTES
        || bracket_nesting(text) > MAX_NESTING
        || possible_nesting(text) > MAX_POSSIBLE_NESTING
    {
        return None;
    }
    let opts = words::options();
    let tokens = words::guarded(|| {
        brush_parser::uncached_tokenize_str(text, &opts.tokenizer_options()).ok()
    })?;
    // Token positions count characters; pieces and markers count bytes.
    let offsets: Vec<usize> = text
        .char_indices()
        .map(|(b, _)| b)
        .chain(std::iter::once(text.len()))
        .collect();
    let byte_at = |chars: usize| offsets.get(chars).copied();
    let word = |i: usize| match tokens.get(i) {
        Some(brush_parser::Token::Word(t, span)) => Some((t.as_str(), span)),
        _ => None,
    };
    let mut spans = Vec::new();
    let mut bodies = std::collections::HashSet::new();
    for (i, t) in tokens.iter().enumerate() {
        if let brush_parser::Token::Operator(op, _) = t {
            if op == "<<" || op == "<<-" {
                // `<<`, the delimiter, the body, the end tag: the body is no ordinary word.
                bodies.insert(i + 2);
                let (Some((delim, _)), Some((body, span)), Some((end, _))) =
                    (word(i + 1), word(i + 2), word(i + 3))
                else {
                    continue;
                };
                let quoted = delim.contains(['\'', '"', '\\']);
                let bare: String = delim
                    .chars()
                    .filter(|c| !matches!(c, '\'' | '"' | '\\'))
                    .collect();
                if !quoted || end != bare {
                    continue;
                }
                let Some(from) = byte_at(span.start.index) else {
                    continue;
                };
                // The source from the body's start must hold exactly the body the tokenizer
                // read (less the leading tabs `<<-` strips), or the position is not trusted.
                let mut read = String::new();
                let mut to = from;
                for line in text.get(from..).unwrap_or("").split_inclusive('\n') {
                    if read.len() >= body.len() {
                        break;
                    }
                    read.push_str(if op == "<<-" {
                        line.trim_start_matches('\t')
                    } else {
                        line
                    });
                    to += line.len();
                }
                if read == body {
                    spans.push((from, to));
                }
            }
        }
    }
    for (i, t) in tokens.iter().enumerate() {
        let brush_parser::Token::Word(w, span) = t else {
            continue;
        };
        if bodies.contains(&i) || !w.contains(['\'', '$']) {
            continue;
        }
        let Some(from) = byte_at(span.start.index) else {
            continue;
        };
        if text.get(from..from + w.len()) != Some(w.as_str()) {
            continue;
        }
        let Some(pieces) = words::guarded(|| brush_parser::word::parse(w, &opts).ok()) else {
            continue;
        };
        for p in pieces {
            if matches!(
                p.piece,
                brush_parser::word::WordPiece::SingleQuotedText(_)
                    | brush_parser::word::WordPiece::AnsiCQuotedText(_)
            ) {
                spans.push((from + p.start_index, from + p.end_index));
            }
        }
    }
    // Inside `((…))` bash reads single quotes as plain characters (see `arithmetic`).
    let arithmetic = double_paren_ranges(text);
    spans.retain(|(from, to)| !arithmetic.iter().any(|(a, b)| from < b && a < to));
    Some(spans)
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

/// The text after each `((` that does not follow `$` (an arithmetic command, or what bash
/// tries as one), up to the next `))` or the end. Errs wide: quoting is not considered.
///
/// A `((` inside a region already taken shares its end, so its text is part of that region:
/// it is not taken again. Nested `((((…` would otherwise be read once per bracket, each time
/// to the end of the line (quadratic in the line's length).
fn double_paren_regions(text: &str) -> Vec<&str> {
    double_paren_ranges(text)
        .into_iter()
        .map(|(from, to)| text.get(from..to).unwrap_or(""))
        .collect()
}

/// The byte ranges of `double_paren_regions`.
fn double_paren_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    let mut taken_to: Option<usize> = None;
    while let Some(at) = text.get(from..).and_then(|r| r.find("((")) {
        let start = from + at;
        let follows_dollar = start > 0 && text.as_bytes().get(start - 1) == Some(&b'$');
        let body_start = start + 2;
        if !follows_dollar && taken_to.is_none_or(|end| body_start > end) {
            let rest = text.get(body_start..).unwrap_or("");
            let end = rest.find("))").map_or(text.len(), |e| body_start + e);
            out.push((body_start, end));
            taken_to = Some(end);
        }
        from = body_start;
    }
    out
}

/// Each `<<` here-document operator in `text`: the line it is on, whether it strips tabs
/// (`<<-`), and its delimiter word as written (quotes included, read quote-aware so `'a b'`
/// is one word). Errs wide: quoting around the operator itself is not considered.
fn heredoc_operators(text: &str) -> Vec<(usize, bool, String)> {
    let mut out = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("<<") {
            let after = rest.get(at + 2..).unwrap_or("");
            rest = after;
            if after.starts_with('<') {
                rest = after.trim_start_matches('<');
                continue;
            }
            let strip_tabs = after.starts_with('-');
            out.push((
                i,
                strip_tabs,
                delimiter_word(after.trim_start_matches('-').trim_start()),
            ));
        }
    }
    out
}

/// The shell word at the start of `s`, quotes kept: it ends at unquoted blanks or operators.
fn delimiter_word(s: &str) -> String {
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) if c == q => {
                quote = None;
                word.push(c);
            }
            Some('"') if c == '\\' => {
                word.push(c);
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            Some(_) => word.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                word.push(c);
            }
            None if c == '\\' => {
                word.push(c);
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            None if c.is_whitespace() || matches!(c, ';' | '&' | '|' | '<' | '>' | '(' | ')') => {
                break
            }
            None => word.push(c),
        }
    }
    word
}

/// The delimiter of a here-document whose body has unbalanced `(`/`)` in a line that also holds
/// a command substitution (`$(` or a backtick) before it. Errs wide: brackets are counted
/// without regard to quoting.
fn heredoc_with_unbalanced_brackets(text: &str) -> Option<String> {
    if !text.contains("<<") || !(text.contains("$(") || text.contains('`')) {
        return None;
    }
    let lines: Vec<&str> = text.split('\n').collect();
    for (i, strip_tabs, raw) in heredoc_operators(text) {
        let word: String = raw
            .chars()
            .filter(|c| !matches!(c, '\'' | '"' | '\\'))
            .collect();
        let mut opened: i64 = 0;
        for body in lines.iter().skip(i + 1) {
            let b = if strip_tabs {
                body.trim_start_matches('\t')
            } else {
                body
            };
            if b == word
                || (b.starts_with(word.as_str())
                    && b.get(word.len()..).is_some_and(|r| r.starts_with(')')))
            {
                break;
            }
            opened += b.matches('(').count() as i64 - b.matches(')').count() as i64;
            opened += b.matches('`').count() as i64 % 2;
        }
        if opened != 0 {
            return Some(word);
        }
    }
    None
}

/// A here-document operator inside a backquoted command substitution (an odd number of
/// unescaped backquotes before it): bash re-reads backquoted text after its own backslash
/// processing and ends such bodies where parsers do not (`` `echo $(cat <<EOF`` … `EOF)` …),
/// running lines the parser took for the body. Errs wide: quoting is not considered.
fn heredoc_inside_backquotes(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut ticks = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes.get(i) {
            Some(b'\\') => i += 1,
            Some(b'`') => ticks += 1,
            Some(b'<')
                if bytes.get(i + 1) == Some(&b'<')
                    && bytes.get(i + 2) != Some(&b'<')
                    && ticks % 2 == 1 =>
            {
                return true;
            }
            Some(b'<') if bytes.get(i + 1) == Some(&b'<') => {
                // `<<<` or a here-document outside backquotes: skip the operator whole.
                while bytes.get(i + 1) == Some(&b'<') {
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// A here-document whose delimiter, once quoting is removed, is empty or holds anything but
/// letters, digits, `_`, `-` and `.` (`<<''`, `<<$''`, `<<'a b'`, `<<"$X"`, `` <<`x` ``):
/// inside a command substitution bash ends such bodies where parsers (and bash's own
/// `--pretty-print`) do not, and runs what follows. Real delimiters are plain words.
///
/// An operator with no word after it (`<<` before an operator or the end of a line) comes
/// back as an empty string. Bash refuses it, and the tokenizer loops without end, allocating,
/// on some of them (`$(<< ( ${`). Errs wide, as `heredoc_operators` does: `<<` in quoted text
/// counts.
fn heredoc_with_odd_delimiter(text: &str) -> Option<String> {
    if !text.contains("<<") {
        return None;
    }
    heredoc_operators(text).into_iter().find_map(|(_, _, raw)| {
        if raw.is_empty() {
            return Some(raw);
        }
        let bare: String = raw
            .chars()
            .filter(|c| !matches!(c, '\'' | '"' | '\\'))
            .collect();
        let plain = !bare.is_empty()
            && bare
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        (!plain).then_some(raw)
    })
}

/// A file name as compared between writing and running it: `./x` and `x` are the same file.
pub(crate) fn file_key(path: &str) -> String {
    let mut p = path;
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    p.to_string()
}
