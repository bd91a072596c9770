//! The walk over tree-sitter-bash's syntax tree: every simple command the
//! shell would run, in every compound, substitution and here-document fed to
//! a shell, with runners unwrapped and what cannot be read named.

use std::cell::RefCell;

use tree_sitter::{Node, Parser, Tree};

use super::code::quote;
use super::runners::{self, Next};
use super::word::{self, Chars, Origin, Word};
use super::{Command, Redirect, RedirectKind, Script, Unread};

/// How deep shell code may nest inside shell code (`sh -c "eval '…'"`)
/// before the rest is unread: a guard answers quickly whatever the input.
const MAX_DEPTH: usize = 8;

/// How deep the walk may go in one text's tree (statements inside
/// substitutions inside words…) before the rest is unread.
const MAX_LEVEL: usize = 96;

/// The longest text the guard parses; longer text is unread.
const MAX_TEXT: usize = 256 * 1024;

thread_local! {
    /// One parser per thread: building one loads the grammar's tables.
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

fn parse_tree(text: &str) -> Option<Tree> {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .ok()?;
            *slot = Some(parser);
        }
        slot.as_mut()?.parse(text, None)
    })
}

/// Removes backslash-newline pairs outside single quotes, as bash's reader
/// does before it splits words: `r\<newline>m` is `rm`.
pub(crate) fn join_continuations(text: &str) -> String {
    #[derive(PartialEq)]
    enum State {
        Bare,
        Single,
        Double,
        AnsiC,
    }
    let mut out = String::with_capacity(text.len());
    let mut state = State::Bare;
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        match state {
            State::Bare | State::Double if c == '\\' => match it.next() {
                Some('\n') => {}
                Some(n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push('\\'),
            },
            State::AnsiC if c == '\\' => {
                out.push('\\');
                if let Some(n) = it.next() {
                    out.push(n);
                }
            }
            State::Bare => {
                out.push(c);
                if c == '\'' {
                    state = State::Single;
                } else if c == '"' {
                    state = State::Double;
                } else if c == '$' && it.peek() == Some(&'\'') {
                    out.push('\'');
                    it.next();
                    state = State::AnsiC;
                }
            }
            State::Single | State::AnsiC => {
                out.push(c);
                if c == '\'' {
                    state = State::Bare;
                }
            }
            State::Double => {
                out.push(c);
                if c == '"' {
                    state = State::Bare;
                }
            }
        }
    }
    out
}

/// What one element of a pipeline is, for the one after it.
#[derive(Default)]
struct Element {
    /// The shell or interpreter that reads code from this element's input.
    reads_code: Option<(String, bool)>,
    /// The literal text it prints (`echo`, `printf`, `cat` of a here-document).
    output: Option<String>,
    /// Its text, for reasons.
    raw: String,
}

/// What a command's redirections say: the redirects (those of enclosing
/// groups first), the command's input when it is text in the call, and the
/// statements the grammar nests inside a here-document's redirect (the rest
/// of its line), each with whether a pipe leads to it.
struct Redirections<'t> {
    list: Vec<Redirect>,
    input: Option<Input>,
    trailing: Vec<(bool, Node<'t>)>,
}

/// Where a command's input comes from, when it is text in the call.
enum Input {
    /// Literal text (a quoted here-document, a literal here-string).
    Text(String),
    /// Text built from expansions, as written.
    Built(String),
    /// A file (`< file`).
    File,
}

pub(crate) struct Reader<'s> {
    src: &'s str,
    depth: usize,
    via: Vec<String>,
    outer: Vec<Redirect>,
    /// How deep the walk is in the tree, and whether that was too deep.
    level: usize,
    too_deep: bool,
    pub script: Script,
}

impl<'s> Reader<'s> {
    pub fn new(src: &'s str, depth: usize, via: Vec<String>) -> Reader<'s> {
        Reader {
            src,
            depth,
            via,
            outer: Vec::new(),
            level: 0,
            too_deep: false,
            script: Script::default(),
        }
    }

    fn unread(&mut self, reason: String) {
        self.script.unread.push(Unread { reason });
    }

    fn text(&self, node: Node<'_>) -> &'s str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    /// Reads the whole source.
    pub fn read(&mut self) {
        if self.src.len() > MAX_TEXT {
            self.unread(format!("the command text is longer than {MAX_TEXT} bytes"));
            return;
        }
        let Some(tree) = parse_tree(self.src) else {
            self.unread("the command text could not be parsed".into());
            return;
        };
        let root = tree.root_node();
        let before = self.script.unread.len();
        self.statement(root);
        // An error the walk did not meet (the grammar may hang it where no
        // statement reads it) still makes the text unread.
        if root.has_error() && self.script.unread.len() == before {
            let near = first_error(root).map_or("", |n| self.text(n));
            self.unread(format!(
                "the command text could not be parsed near: {}",
                quote(if near.is_empty() { self.src } else { near })
            ));
        }
    }

    /// Reads shell code found inside a command (`sh -c`, `eval`, a
    /// here-document fed to a shell) into this script.
    fn nested(&mut self, text: &str, via: &str) {
        if self.depth + 1 >= MAX_DEPTH {
            self.unread(format!(
                "shell code nested more than {MAX_DEPTH} deep: {}",
                quote(text)
            ));
            return;
        }
        let joined = join_continuations(text);
        let mut vias = self.via.clone();
        vias.push(via.to_string());
        let mut child = Reader::new(&joined, self.depth + 1, vias);
        child.read();
        let offset = self.script.commands.len();
        self.script
            .commands
            .extend(child.script.commands.into_iter().map(|mut c| {
                c.piped_from = c.piped_from.map(|i| i + offset);
                c
            }));
        self.script.unread.extend(child.script.unread);
    }

    fn children<'t>(node: Node<'t>) -> Vec<Node<'t>> {
        let mut cursor = node.walk();
        node.children(&mut cursor).collect()
    }

    fn named_children<'t>(node: Node<'t>) -> Vec<Node<'t>> {
        let mut cursor = node.walk();
        node.named_children(&mut cursor).collect()
    }

    /// Any statement or part of one, within the nesting limit.
    fn statement(&mut self, node: Node<'_>) -> Element {
        if !self.enter() {
            return Element::default();
        }
        let el = self.statement_within(node);
        self.level -= 1;
        el
    }

    /// Counts one more level of the tree; past the limit the rest is unread
    /// (a deep tree would otherwise exhaust the stack).
    fn enter(&mut self) -> bool {
        if self.level >= MAX_LEVEL {
            if !self.too_deep {
                self.too_deep = true;
                self.unread(format!(
                    "the command text nests more than {MAX_LEVEL} levels deep"
                ));
            }
            return false;
        }
        self.level += 1;
        true
    }

    fn statement_within(&mut self, node: Node<'_>) -> Element {
        if node.is_missing() {
            self.unread(format!(
                "the command text could not be parsed: `{}` is missing",
                node.kind()
            ));
            return Element::default();
        }
        match node.kind() {
            "ERROR" => {
                self.unread(format!(
                    "the command text could not be parsed near: {}",
                    quote(self.text(node))
                ));
                for child in Self::named_children(node) {
                    self.statement(child);
                }
                Element::default()
            }
            "comment" | "heredoc_start" | "heredoc_end" | "heredoc_content" | "variable_name" => {
                Element::default()
            }
            "command" => self.simple(node, &[]),
            // A redirection alone (`$(<file)`, `> file`) still opens its file.
            k if k.ends_with("redirect") => {
                let Redirections {
                    list: reds,
                    input,
                    trailing,
                } = self.redirects(&[node]);
                let el = self.emit(&mut Vec::new(), reds, input);
                self.trailing(el, trailing)
            }
            "declaration_command" | "unset_command" => self.declaration(node),
            "redirected_statement" => self.redirected(node),
            "pipeline" => {
                let elements: Vec<Node<'_>> = Self::named_children(node)
                    .into_iter()
                    .filter(|n| n.kind() != "comment")
                    .collect();
                self.pipeline(None, &elements)
            }
            _ => {
                for child in Self::named_children(node) {
                    self.statement(child);
                }
                Element::default()
            }
        }
    }

    /// The elements of a pipeline, the first possibly already read (a
    /// command whose here-document holds the rest of the pipeline).
    fn pipeline(&mut self, first: Option<Element>, nodes: &[Node<'_>]) -> Element {
        // The command whose output the next element reads: the last one the
        // element before it ran (the first element's, when it came read).
        let mut feeder = if first.is_some() {
            self.script.commands.len().checked_sub(1)
        } else {
            None
        };
        let mut prev = first;
        let mut last = Element::default();
        for (i, node) in nodes.iter().enumerate() {
            let start = self.script.commands.len();
            let mut el = self.statement(*node);
            let end = self.script.commands.len();
            if i > 0 || prev.is_some() {
                for c in &mut self.script.commands[start..end] {
                    if c.piped_from.is_none() {
                        c.piped_from = feeder;
                    }
                }
            }
            feeder = if end > start { Some(end - 1) } else { None };
            el.raw = self.text(*node).to_string();
            if let (Some(p), Some((label, shell))) = (&prev, &el.reads_code) {
                self.feed(p, label, *shell);
            }
            prev = Some(el);
        }
        if let Some(p) = prev {
            last.reads_code = p.reads_code;
        }
        last
    }

    /// A shell or interpreter reads the previous element's output as code.
    fn feed(&mut self, prev: &Element, label: &str, shell: bool) {
        match (&prev.output, shell) {
            (Some(text), true) => self.nested(text, &format!("| {label}")),
            (Some(text), false) => {
                self.unread(format!("{label} code fed on its input: {}", quote(text)))
            }
            (None, _) => self.unread(format!(
                "text generated by `{}` is fed to `{label}` as code",
                quote(prev.raw.trim())
            )),
        }
    }

    fn redirected(&mut self, node: Node<'_>) -> Element {
        let redirects: Vec<Node<'_>> = Self::named_children(node)
            .into_iter()
            .filter(|n| n.kind().ends_with("redirect"))
            .collect();
        let Some(body) = node.child_by_field_name("body").or_else(|| {
            Self::named_children(node)
                .into_iter()
                .find(|n| !n.kind().ends_with("redirect"))
        }) else {
            // A redirection alone (`> file`) still opens its file.
            let mut words = Vec::new();
            let Redirections {
                list: reds,
                trailing,
                ..
            } = self.redirects(&redirects);
            self.emit(&mut words, reds, None);
            self.trailing(Element::default(), trailing);
            return Element::default();
        };
        if body.kind() == "command" {
            return self.simple(body, &redirects);
        }
        let Redirections {
            list: reds,
            trailing,
            ..
        } = self.redirects(&redirects);
        // Redirections around a group or loop apply to every command in it.
        let saved = std::mem::replace(&mut self.outer, reds);
        let el = self.statement(body);
        self.outer = saved;
        self.trailing(Element::default(), trailing);
        el
    }

    /// Statements the grammar put inside a here-document's redirect (the
    /// rest of the line after `<<EOF`): a pipe continues the pipeline.
    fn trailing(&mut self, first: Element, trailing: Vec<(bool, Node<'_>)>) -> Element {
        let mut first = Some(first);
        let mut last = Element::default();
        for (piped, node) in trailing {
            if node.kind() == "pipeline" && piped {
                let elements = Self::named_children(node);
                last = self.pipeline(first.take(), &elements);
            } else if piped {
                last = self.pipeline(first.take(), &[node]);
            } else {
                last = self.statement(node);
            }
        }
        last
    }

    /// `export`, `local`, `declare`, `readonly`, `typeset` and `unset`: a
    /// command named by its keyword, its assignments as arguments.
    fn declaration(&mut self, node: Node<'_>) -> Element {
        let mut words = Vec::new();
        if let Some(keyword) = node.child(0) {
            words.push(Word::literal(self.text(keyword)));
        }
        for child in Self::named_children(node) {
            let raw = self.text(child);
            let chars = self.chars(child, false);
            words.extend(word::finish(chars, raw));
        }
        // The keyword is literal: an expansion among the arguments is data.
        for w in words.iter_mut().skip(1) {
            w.glob = false;
        }
        self.emit(&mut words, Vec::new(), None)
    }

    /// A simple command with the redirections around it.
    fn simple(&mut self, node: Node<'_>, around: &[Node<'_>]) -> Element {
        let mut words: Vec<Word> = Vec::new();
        let mut own: Vec<Node<'_>> = Vec::new();
        for child in Self::named_children(node) {
            match child.kind() {
                "variable_assignment" | "variable_assignments" => {
                    let text = self.text(child);
                    if let Some(reason) = runners::runs_variable(text) {
                        self.unread(reason);
                    }
                    self.statement(child);
                }
                "comment" => {}
                k if k.ends_with("redirect") => own.push(child),
                "command_name" => {
                    let raw = self.text(child);
                    let chars = self.chars(child, false);
                    words.extend(word::finish(chars, raw));
                }
                _ => {
                    let raw = self.text(child);
                    let chars = self.chars(child, false);
                    words.extend(word::finish(chars, raw));
                }
            }
        }
        own.extend_from_slice(around);
        let Redirections {
            list: reds,
            input,
            trailing,
        } = self.redirects(&own);
        let mut el = self.emit(&mut words, reds, input);
        el.raw = self.text(node).to_string();
        if trailing.is_empty() {
            el
        } else {
            self.trailing(el, trailing)
        }
    }

    /// Reads redirections (see [`Redirections`]).
    fn redirects<'t>(&mut self, nodes: &[Node<'t>]) -> Redirections<'t> {
        let mut out = self.outer.clone();
        let mut input = None;
        let mut trailing = Vec::new();
        for node in nodes {
            match node.kind() {
                "heredoc_redirect" => {
                    let mut quoted = false;
                    let mut body = String::new();
                    let mut built = false;
                    let mut piped = false;
                    for child in Self::children(*node) {
                        match child.kind() {
                            "heredoc_start" => {
                                quoted = self.text(child).contains(['\'', '"', '\\']);
                            }
                            "heredoc_body" => {
                                body = self.text(child).to_string();
                                if !quoted {
                                    for part in Self::named_children(child) {
                                        if part.kind() != "heredoc_content" {
                                            built = true;
                                            let _ = self.chars(part, true);
                                        }
                                    }
                                }
                            }
                            "heredoc_end" | "heredoc_content" | "<<" | "<<-" | "comment" => {}
                            "|" | "|&" => piped = true,
                            "&&" | "||" | ";" | "&" => piped = false,
                            k if k.ends_with("redirect") => {
                                // The here-document is the input whatever else is redirected.
                                let Redirections {
                                    list: more,
                                    trailing: more_trailing,
                                    ..
                                } = self.redirects(&[child]);
                                out.extend(more.into_iter().skip(self.outer.len()));
                                trailing.extend(more_trailing);
                            }
                            // The grammar nests `| sh` as a pipeline led by its `|`.
                            "pipeline" if child.child(0).is_some_and(|c| c.kind() == "|") => {
                                trailing.push((true, child));
                                piped = false;
                            }
                            _ if child.is_named() => {
                                trailing.push((piped, child));
                                piped = false;
                            }
                            _ => {}
                        }
                    }
                    input = Some(if built {
                        Input::Built(body.clone())
                    } else {
                        Input::Text(body.clone())
                    });
                    out.push(Redirect {
                        kind: RedirectKind::HereDoc,
                        target: body,
                    });
                }
                "herestring_redirect" => {
                    let parts: Vec<Node<'_>> = Self::named_children(*node);
                    let mut chars = Chars::default();
                    let mut raw = String::new();
                    for p in &parts {
                        chars.append(self.chars(*p, false));
                        raw.push_str(self.text(*p));
                    }
                    let words = word::finish(chars, &raw);
                    let text: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
                    let text = text.join(" ");
                    input = Some(if words.iter().any(|w| w.dynamic) {
                        Input::Built(raw)
                    } else {
                        Input::Text(format!("{text}\n"))
                    });
                    out.push(Redirect {
                        kind: RedirectKind::HereDoc,
                        target: text,
                    });
                }
                "file_redirect" => {
                    let mut op = String::new();
                    let mut target: Vec<Word> = Vec::new();
                    let mut broken = false;
                    for child in Self::children(*node) {
                        match child.kind() {
                            "file_descriptor" => {}
                            "ERROR" => broken = true,
                            _ if !child.is_named() => op.push_str(self.text(child)),
                            _ => {
                                let raw = self.text(child);
                                let chars = self.chars(child, false);
                                target.extend(word::finish(chars, raw));
                            }
                        }
                    }
                    if broken {
                        self.unread(format!(
                            "a redirection could not be parsed: {}",
                            quote(self.text(*node))
                        ));
                    }
                    // `< <(curl …)` feeds a command's output, not a file.
                    let made = target.iter().any(|w| {
                        w.dynamic
                            && (w.raw.contains("<(") || w.raw.contains("$(") || w.raw.contains('`'))
                    });
                    let text: Vec<&str> = target.iter().map(|w| w.text.as_str()).collect();
                    let target = text.join(" ");
                    let numeric = target == "-" || target.chars().all(|c| c.is_ascii_digit());
                    let kind = match op.as_str() {
                        ">>" | "&>>" => RedirectKind::Append,
                        "<" => RedirectKind::Read,
                        "<>" => RedirectKind::ReadWrite,
                        ">&" | "<&" | ">&-" | "<&-" if numeric => RedirectKind::Dup,
                        "<&" => RedirectKind::Read,
                        _ if broken => RedirectKind::ReadWrite,
                        _ => RedirectKind::Write,
                    };
                    if kind == RedirectKind::Read {
                        input = Some(if made {
                            Input::Built(self.text(*node).to_string())
                        } else {
                            Input::File
                        });
                    }
                    out.push(Redirect { kind, target });
                }
                _ => {
                    self.statement(*node);
                }
            }
        }
        Redirections {
            list: out,
            input,
            trailing,
        }
    }

    /// Builds a word's characters from its node, reading the commands of any
    /// substitution inside it.
    fn chars(&mut self, node: Node<'_>, in_double: bool) -> Chars {
        if !self.enter() {
            let mut out = Chars::default();
            out.push_str(self.text(node), Origin::Expansion);
            return out;
        }
        let out = self.chars_within(node, in_double);
        self.level -= 1;
        out
    }

    fn chars_within(&mut self, node: Node<'_>, in_double: bool) -> Chars {
        let mut out = Chars::default();
        let text = self.text(node);
        match node.kind() {
            "word" | "number" => {
                if in_double {
                    word::unquote_double(text, &mut out);
                } else {
                    word::unquote_bare(text, &mut out);
                }
            }
            "raw_string" => {
                let inner = text.strip_prefix('\'').unwrap_or(text);
                let inner = inner.strip_suffix('\'').unwrap_or(inner);
                out.push_str(inner, Origin::Quoted);
            }
            "ansi_c_string" => {
                let inner = text.strip_prefix("$'").unwrap_or(text);
                let inner = inner.strip_suffix('\'').unwrap_or(inner);
                out.push_str(&word::decode_ansi_c(inner), Origin::Quoted);
            }
            "string" | "translated_string" => {
                let start = node.start_byte() + text.find('"').map_or(0, |i| i + 1);
                let end = node.end_byte().saturating_sub(1).max(start);
                self.gaps(node, start, end, true, &mut out);
            }
            "simple_expansion" | "expansion" => {
                let name = Self::named_children(node)
                    .into_iter()
                    .find(|n| n.kind() == "variable_name" || n.kind() == "special_variable_name")
                    .map(|n| self.text(n));
                let bare_ifs =
                    name == Some("IFS") && !in_double && (text == "$IFS" || text == "${IFS}");
                if bare_ifs {
                    out.0.push((' ', Origin::Split));
                } else {
                    for child in Self::named_children(node) {
                        let _ = self.chars(child, true);
                    }
                    out.push_str(text, Origin::Expansion);
                }
            }
            "command_substitution" | "process_substitution" => {
                for child in Self::named_children(node) {
                    let el = self.statement(child);
                    // `>(sh)` reads the outer command's output as code.
                    if let Some((label, _)) = el.reads_code
                        && text.starts_with(">(")
                    {
                        self.unread(format!(
                            "output is fed to `{label}` as code through {}",
                            quote(text)
                        ));
                    }
                }
                out.push_str(text, Origin::Expansion);
            }
            "arithmetic_expansion" => {
                for child in Self::named_children(node) {
                    let _ = self.chars(child, true);
                }
                out.push_str(text, Origin::Expansion);
            }
            "ERROR" => {
                self.unread(format!(
                    "the command text could not be parsed near: {}",
                    quote(text)
                ));
                out.push_str(text, Origin::Expansion);
            }
            "string_content" | "heredoc_content" => word::unquote_double(text, &mut out),
            _ => {
                let start = node.start_byte();
                let end = node.end_byte();
                if node.named_child_count() == 0 {
                    if in_double {
                        word::unquote_double(text, &mut out);
                    } else {
                        word::unquote_bare(text, &mut out);
                    }
                } else {
                    self.gaps(node, start, end, in_double, &mut out);
                }
            }
        }
        out
    }

    /// The characters of a node's children and of the text between them.
    fn gaps(&mut self, node: Node<'_>, start: usize, end: usize, in_double: bool, out: &mut Chars) {
        let mut at = start;
        for child in Self::named_children(node) {
            let (s, e) = (child.start_byte(), child.end_byte());
            if s > at {
                let gap = self.src.get(at..s.min(end)).unwrap_or("");
                if in_double {
                    word::unquote_double(gap, out);
                } else {
                    word::unquote_bare(gap, out);
                }
            }
            let part = self.chars(child, in_double);
            if in_double {
                // Inside double quotes nothing is brace or glob syntax.
                out.0.extend(
                    part.0
                        .into_iter()
                        .map(|(c, o)| (c, if o == Origin::Bare { Origin::Quoted } else { o })),
                );
            } else {
                out.append(part);
            }
            at = at.max(e);
        }
        if end > at {
            let gap = self.src.get(at..end).unwrap_or("");
            if in_double {
                word::unquote_double(gap, out);
            } else {
                word::unquote_bare(gap, out);
            }
        }
    }

    /// Records a command from its words and unwraps what it runs.
    fn emit(
        &mut self,
        words: &mut Vec<Word>,
        redirects: Vec<Redirect>,
        input: Option<Input>,
    ) -> Element {
        let mut el = Element::default();
        if words.is_empty() {
            if redirects.iter().any(|r| r.kind != RedirectKind::Dup) {
                self.script.commands.push(Command {
                    redirects,
                    via: self.via.clone(),
                    ..Command::default()
                });
            }
            return el;
        }
        let first = words.remove(0);
        if first.dynamic {
            self.unread(format!(
                "the command word is built from an expansion: {}",
                quote(&first.raw)
            ));
            return el;
        }
        if first.glob {
            self.unread(format!(
                "the command word is a glob pattern: {}",
                quote(&first.raw)
            ));
            return el;
        }
        let name = word::basename(&first.text).to_string();
        let args: Vec<String> = words.iter().map(|w| w.text.clone()).collect();
        el.output = literal_output(&name, words, input.as_ref());
        self.script.commands.push(Command {
            name: name.clone(),
            program: first.text.clone(),
            args,
            redirects,
            via: self.via.clone(),
            piped_from: None,
        });
        for next in runners::analyse(&name, words) {
            match next {
                Next::Run {
                    via,
                    words: mut inner,
                } => {
                    self.via.push(via);
                    let sub = self.emit(&mut inner, Vec::new(), None);
                    self.via.pop();
                    if sub.reads_code.is_some() {
                        el.reads_code = sub.reads_code;
                    }
                }
                Next::Script { via, text } => self.nested(&text, &via),
                Next::Unread(reason) => self.unread(reason),
                Next::Stdin { label, shell } => match &input {
                    Some(Input::Text(text)) if shell => self.nested(text, &format!("{label} <<")),
                    Some(Input::Text(text)) => {
                        self.unread(format!("{label} code fed on its input: {}", quote(text)))
                    }
                    Some(Input::Built(raw)) => self.unread(format!(
                        "text built from an expansion is fed to `{label}` as code: {}",
                        quote(raw)
                    )),
                    Some(Input::File) => {}
                    None => el.reads_code = Some((label, shell)),
                },
            }
        }
        el
    }
}

/// The first node of a tree that is an error or missing, depth first.
fn first_error(root: Node<'_>) -> Option<Node<'_>> {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if node.is_error() || node.is_missing() {
            return Some(node);
        }
        if node.has_error() && cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return None;
            }
        }
    }
}

/// The literal text `echo`, `printf` or `cat` of a here-document prints,
/// when the guard can know it.
fn literal_output(name: &str, args: &[Word], input: Option<&Input>) -> Option<String> {
    if args.iter().any(|w| w.dynamic) {
        return None;
    }
    match name {
        "echo" => {
            let mut rest = args;
            while let Some(first) = rest.first() {
                match first.text.as_str() {
                    "-n" | "-E" => rest = &rest[1..],
                    // `-e` decodes escapes: text the guard would have to decode.
                    t if t.starts_with('-') && t.contains('e') => return None,
                    _ => break,
                }
            }
            let text: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
            Some(format!("{}\n", text.join(" ")))
        }
        "printf" => match args {
            [format] if !format.text.contains(['%', '\\']) => Some(format.text.clone()),
            _ => None,
        },
        "cat" if args.is_empty() => match input {
            Some(Input::Text(text)) => Some(text.clone()),
            _ => None,
        },
        _ => None,
    }
}
