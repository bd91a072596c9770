//! The layers of every crate under `crates/`, read from the sources.
//!
//! The test lists `crates/*/src`, so a crate added to the workspace is read
//! the day it appears (and fails until it has a floor table below). For each
//! crate it follows the `mod` declarations from `lib.rs` or `main.rs`
//! (`#[path]` attributes and inline `mod x { … }` blocks included, modules
//! under `#[cfg(test)]` left out: a test may reach anywhere) and draws an
//! arrow from a module to each module it names:
//!
//! - a `use` item, nested groups expanded (`use crate::a::{b, c::{d, self}}`),
//!   starting at `crate::`, `super::`, `self::` or a child module's name;
//! - such a path written in code (`crate::a::b::f()`, `super::x::Y`);
//! - a `macro_rules!` macro used outside the module that defines it (the
//!   arrow goes to the nearest enclosing module that defines it).
//!
//! A path points at the deepest module it spells, even when that module only
//! re-exports the item: `crate::Embedder` points at the crate root, and
//! `super::canonical::canonical_json` written in `classifier/content.rs` at
//! `classifier/canonical.rs`. A parent that declares `mod child` and
//! re-exports its items (`pub use child::X`) draws no arrow to the child: the
//! declaration and the re-export are the module tree, not a dependency. It
//! draws one as soon as its own code uses a child's item (a non-`pub`
//! `use child::X`, a `child::f()` path, or a re-exported name used in its
//! code).
//!
//! Three rules hold for every crate:
//!
//! 1. No circle between sibling rooms. The children of one module are rooms;
//!    an arrow from `a::x` to `b::y` is an arrow from room `a` to room `b`
//!    (at the level of their nearest common module), and no rooms of one
//!    level may reach each other. An arrow between a module and its own
//!    ancestor (a child naming its parent's types, a parent calling its
//!    children) is inside one room at every level, so it closes no circle
//!    alone; a child's arrow to its parent still takes part in a circle that
//!    leaves the room: `classifier/options.rs` → `cost.rs` →
//!    `classifier.rs` is the circle `classifier` ↔ `cost`.
//! 2. Floors: each crate has a table that puts every module on a floor (a row
//!    covers a module and every module beneath it, the longest row wins;
//!    `crate` is the root file alone, on the top floor: it is the crate's
//!    face). An arrow runs down or stays on its floor, never up: naming an
//!    item through the crate root, or using a macro `main.rs` defines, is an
//!    arrow up to the root.
//! 3. In a crate with commands (`toolnexus-cli`), no command names another
//!    command: `commands/x.rs` and `commands/x/*` are one command and may
//!    name each other; what two commands share lives outside `commands/`.
//!
//! `KNOWN` lists the violations the tree holds today. The test accepts
//! exactly them: a new one fails, and so does one that is gone (remove its
//! line, so the list only shrinks). A table row that places no module fails
//! too, as does a source file no `mod` reaches.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod circles;
mod lex;

use circles::{circles, rooms, walk};
use lex::{Tok, Token, closing, is_public, item_end, lex, use_tree};

/// One floor table row: a module path (covering the modules beneath it), its
/// floor, and why it stands there. Floor 0 is the ground.
type Row = (&'static str, u8, &'static str);

/// The library: leaves at the bottom, the wire below the classifier, the
/// classifier below everything built from classifiers.
#[rustfmt::skip]
const TOOLNEXUS: &[Row] = &[
    ("error",      0, "the one seam error: every module reports through it"),
    ("retry",      0, "retry timing is arithmetic over statuses and headers"),
    ("canonical",  0, "canonical JSON is pure code over serde_json values"),
    ("json",       0, "the strict JSON reader is pure code over bytes"),
    ("context",    0, "the per-call context carries values and calls nothing"),
    ("usage",      0, "token usage is a value type"),
    ("defaults",   0, "defaults are constants"),
    ("redact",     0, "redaction is pure text work"),
    ("env",        0, "reading the environment needs nothing of ours"),
    ("limit",      0, "the limiter only counts and waits"),
    ("pinning",    0, "pinned model names are a table"),
    ("fs",         0, "atomic writes and appends need only std"),
    ("price",      0, "what a call costs, where that came from and the price tables are values"),
    ("date",       0, "dates from Unix seconds are arithmetic"),
    ("http",       1, "the HTTP layer sends what the leaves describe"),
    ("states",     1, "a states file is read with the strict JSON leaf"),
    ("client",     2, "the chat client speaks over http"),
    ("classifier", 3, "the classifier is a client plus questions and decisions"),
    ("cost",       4, "the pricing layer, the budget and the estimates stand on the classifier"),
    ("judge",      4, "judges, gates and tapes are built from classifiers"),
    ("lint",       4, "lint reads questions, so it stands on the classifier"),
    ("assess",     5, "assessment runs judges and classifiers over labelled sets"),
    ("cache",      5, "the cache wraps any classifier"),
    ("compose",    5, "fallback and shadow compose classifiers"),
    ("probe",      5, "probes measure a classifier from outside"),
    ("metrics",    4, "the Prometheus figures count the classifier's metric events"),
    ("otel",       5, "the OpenTelemetry export plugs into the classifier's call seam and counts like metrics"),
    ("testing",    6, "the fakes users test with stand on everything they fake"),
    ("crate",      7, "the root only declares modules and re-exports: it is the face"),
];

/// The local engines: numeric kernels under encoders, encoders under
/// engines, engines under the students and cascades built from them.
#[rustfmt::skip]
const TOOLNEXUS_LOCAL: &[Row] = &[
    ("error",        0, "the crate's error names what failed and calls nothing"),
    ("num",          0, "vector arithmetic is pure"),
    ("pyjson",       0, "reading Python's JSON dialect is pure"),
    ("pins",         0, "the model's pins and the file hash need only std and sha2"),
    ("weights",      1, "the weights file is mapped and its digest remembered by the pins' hash"),
    ("engine",       0, "what every engine shares needs only the library"),
    ("text",         1, "text cutting reads a tokenizer and reports through the error"),
    ("tiny",         1, "the tiny test model writes files in the pinned layout"),
    ("fetch",        1, "the fetch installs the files the pins name"),
    ("kernels",      1, "tensor kernels are the floor every encoder runs on"),
    ("bert",         2, "the BERT encoder runs on the kernels"),
    ("modernbert",   2, "the ModernBERT encoder runs on the kernels and cuts text"),
    ("embed",        3, "the embedder runs an encoder over text"),
    ("laya",         3, "Laya is an engine over ModernBERT"),
    ("decisiontune", 3, "DecisionTune is an engine over ModernBERT"),
    ("state_text",   4, "a state is written as text as far as the embedder reads"),
    ("zero_shot",    5, "the zero-shot engine compares the embedder's vectors"),
    ("student",      5, "students and cascades stand on the embedder and the state text"),
    ("registry",     6, "the registry builds every engine"),
    ("crate",        7, "the root only declares modules and re-exports: it is the face"),
];

/// The binary: leaves, then arguments, then the style builder, then the
/// commands, then the dispatcher, then `main`. Every command has its own row,
/// so a new command is placed on purpose.
#[rustfmt::skip]
const TOOLNEXUS_CLI: &[Row] = &[
    ("out",               0, "the printing macros that never panic: every printing module uses them"),
    ("exit",              0, "exit codes and their rendering: every command returns through them"),
    ("warnings",          0, "the warning sink is a leaf any layer may report to"),
    ("stdio",             0, "standard stream handling is a leaf the commands print through"),
    ("signals",           0, "listening for Ctrl-C and SIGTERM is a leaf the long runs share"),
    ("render",            0, "rendering decisions is pure formatting"),
    ("input",             0, "reading input files strictly needs only the exit codes"),
    ("demo",              0, "the demo fixtures are data"),
    ("out_file",          1, "the batch out file's messages name the flags and pick the exit"),
    ("args",              1, "the clap types are plain data"),
    ("style",             2, "the settings: arguments into the stack builder's spec for commands"),
    ("caps",              2, "the message a run stopped by a cap ends with reads the caps' flags"),
    ("spend",             2, "estimates and cost lines build stacks through the settings"),
    ("otel",              2, "the export the flags ask for: arguments into the library's OpenTelemetry options"),
    ("commands::assess",  3, "assess adapts arguments to the library's assessment"),
    ("commands::batch",   3, "batch adapts arguments to a run over a states file"),
    ("commands::cache",   3, "cache inspects, clears and exports cache files"),
    ("commands::cost",    3, "cost fits prices and estimates a batch"),
    ("commands::distill", 3, "distill trains a student"),
    ("commands::eval",    3, "eval adapts one call"),
    ("commands::guard",   3, "guard answers an agent's hook"),
    ("commands::install", 3, "install edits agents' configuration files"),
    ("commands::lint",    3, "lint checks question files"),
    ("commands::mcp",     3, "mcp adapts arguments to the MCP server"),
    ("commands::model",   3, "model fetches the embedded model"),
    ("commands::probe",   3, "probe adapts the library's probes"),
    ("commands::serve",   3, "serve adapts arguments to the System One server"),
    ("commands::tape",    3, "tape records, replays and shows tapes"),
    ("commands",          4, "the dispatcher calls every command"),
    ("crate",             5, "main parses, dispatches and maps outcomes to exit codes: the top"),
];

/// The stack builder: a spec and the built stack are values; the bottom and
/// the layers read the spec; the root builds through both.
#[rustfmt::skip]
const TOOLNEXUS_STACK: &[Row] = &[
    ("error",  0, "the builder's error is a message naming the option"),
    ("spec",   0, "a spec is plain values"),
    ("stack",  0, "a built stack is plain values"),
    ("bottom", 1, "the bottom reads a spec and builds the style with its fallback, cascade and calibration"),
    ("layers", 1, "the layers read a spec and wrap what the bottom built"),
    ("crate",  2, "the root builds through the bottom and the layers: it is the face"),
];

/// The guard: the permission, JSON, paths and needles are leaves; a call and
/// a policy's field readers stand on them; rules, the policy, the judge, the
/// engine and the log each on the one before.
#[rustfmt::skip]
const TOOLNEXUS_GUARD: &[Row] = &[
    ("permission", 0, "allow, ask and deny are plain values"),
    ("json",       0, "strict JSON reading is pure"),
    ("paths",      0, "lexical path resolution is pure"),
    ("needles",    0, "an expression's literal prefixes need only its parser"),
    ("shell",      0, "a command text read into commands and their effects needs only the grammar"),
    ("fields",     1, "a policy's field readers return permissions and keyed errors"),
    ("call",       1, "a tool call is read from JSON"),
    ("rules",      2, "rules read calls, paths and needles, and are read as fields"),
    ("policy",     3, "the policy file holds questions, cuts and rules"),
    ("judge",      4, "the built-in judge runs the policy's compiled-in student"),
    ("engine",     5, "the engine judges a call by the policy, with the judge"),
    ("log",        6, "the log records the engine's judgments"),
    ("agreement",  6, "agreement with labelled calls compares the engine's verdicts"),
    ("crate",      7, "the root only declares modules and re-exports: it is the face"),
];

/// The Python binding: the runtime, the exception, and the result columns
/// are leaves; conversions, the asyncio bridge and tables stand on them;
/// decisions on conversions; the keyword arguments build stacks and
/// decisions; the classifier calls everything; the root registers it.
#[rustfmt::skip]
const TOOLNEXUS_PY: &[Row] = &[
    ("runtime",    0, "the process's one tokio runtime"),
    ("error",      0, "the exception carries the library's error as it is"),
    ("convert",    1, "JSON and questions from Python name their errors with the exception"),
    ("asyncio",    1, "the asyncio bridge runs calls on the runtime"),
    ("table",      1, "a table's states and its result columns beside the input's"),
    ("decision",   2, "decisions read through the conversions"),
    ("options",    3, "keyword arguments build a stack, a custom callable or recorded decisions"),
    ("classifier", 4, "the classifier evaluates one state, from asyncio, or a table"),
    ("crate",      5, "the root registers the module's classes and functions: it is the face"),
];

/// Tables: the error, the formats, a cell's JSON and the flat result columns
/// are leaves; the reader and the journal stand on them; the writer joins a
/// reader's chunks with a journal's outcomes; the root only re-exports.
#[rustfmt::skip]
const TOOLNEXUS_TABLE: &[Row] = &[
    ("error",   0, "what goes wrong names the file, the row and the column"),
    ("format",  0, "a format is a path's extension"),
    ("value",   0, "a cell's JSON is a pure function over an Arrow array"),
    ("columns", 0, "the flat result columns are pure: decisions in, Arrow arrays out"),
    ("read",    1, "the reader hands out chunks of states from a file"),
    ("journal", 1, "the journal reads a run's result lines back in row order"),
    ("write",   2, "the writer joins the reader's chunks with the journal's outcomes"),
    ("crate",   3, "the root only declares modules and re-exports: it is the face"),
];

/// The servers: the backend, the log, the signals and the wire are leaves;
/// each server stands on them; the root only re-exports.
#[rustfmt::skip]
const TOOLNEXUS_SERVER: &[Row] = &[
    ("backend",   0, "what a server answers with is plain values"),
    ("log",       0, "where a server's lines go is a trait and a stderr sink"),
    ("signal",    0, "the stop signals need only tokio"),
    ("wire",      0, "the wire's cost, verdicts and checks are pure functions over values"),
    ("systemone", 1, "the System One server answers HTTP with a backend, writing the wire"),
    ("mcp",       1, "the MCP server answers tool calls with a backend, writing the wire"),
    ("crate",     2, "the root only declares modules and re-exports: it is the face"),
];

/// Every crate's table, by the crate's directory name under `crates/`, and
/// the module whose children are commands (rule 3), if the crate has one.
const TABLES: &[(&str, &[Row], Option<&str>)] = &[
    ("toolnexus", TOOLNEXUS, None),
    ("toolnexus-local", TOOLNEXUS_LOCAL, None),
    ("toolnexus-cli", TOOLNEXUS_CLI, Some("commands")),
    ("toolnexus-guard", TOOLNEXUS_GUARD, None),
    ("toolnexus-server", TOOLNEXUS_SERVER, None),
    ("toolnexus-stack", TOOLNEXUS_STACK, None),
    ("toolnexus-py", TOOLNEXUS_PY, None),
    ("toolnexus-table", TOOLNEXUS_TABLE, None),
];

/// Today's violations, tolerated only while they exist: the change that fixes
/// one removes its line, and a line whose violation is gone fails the test.
/// Nothing is ever added here.
const KNOWN: &[&str] = &[];

/// Every crate under `crates/` keeps the three rules, less today's `KNOWN`.
#[test]
fn every_crate_keeps_its_layers() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("a crate's manifest directory sits in crates/");
    let found = check_workspace(crates);
    let known: BTreeSet<&str> = KNOWN.iter().copied().collect();
    let mut failures = Vec::new();
    for (key, detail) in &found.violations {
        if !known.contains(key.as_str()) {
            failures.push(format!("{key}\n{detail}"));
        }
    }
    for key in &known {
        if !found.violations.contains_key(*key) {
            failures.push(format!(
                "{key}\n  is no longer found: remove it from KNOWN in tests/it/layers.rs"
            ));
        }
    }
    failures.extend(found.problems.iter().cloned());
    assert!(
        found.files > 100,
        "only {} source files were read under {}",
        found.files,
        crates.display()
    );
    assert!(
        failures.is_empty(),
        "{} layering failure(s):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The reader on a crate written for it: every way a module is declared and
/// named, the things that look like paths and are not, and the two rules.
#[test]
fn the_reader_draws_the_arrows_rust_resolves() {
    let dir = std::env::temp_dir().join(format!("toolnexus-layers-{}", std::process::id()));
    let files: &[(&str, &str)] = &[
        (
            "lib.rs",
            "//! `crate::d` in a comment is no arrow.\n\
             macro_rules! say { () => {} }\n\
             mod a;\n\
             pub mod b;\n\
             #[path = \"elsewhere/c_impl.rs\"]\n\
             mod c;\n\
             mod d {\n\
             \x20   pub mod e;\n\
             \x20   pub fn f() { super::a::g(); }\n\
             }\n\
             #[cfg(test)]\n\
             mod tests;\n\
             pub use a::A;\n",
        ),
        (
            "a.rs",
            "use crate::{b::{self, B}, c::C as Renamed};\n\
             pub struct A;\n\
             pub fn g() { let _ = (\"crate::d\", r#\"super::b\"#, '\"'); say!(); }\n\
             #[cfg(test)]\n\
             fn only_in_tests() { crate::d::e::h(); }\n",
        ),
        (
            "b.rs",
            "mod inner;\n\
             pub use inner::Hidden;\n\
             pub struct B;\n\
             pub fn uses() -> Hidden { Hidden }\n",
        ),
        (
            "b/inner.rs",
            "pub struct Hidden;\nuse super::super::c::C;\n",
        ),
        (
            "elsewhere/c_impl.rs",
            "pub struct C;\npub fn k() { crate::b::uses(); }\n",
        ),
        (
            "d/e.rs",
            "pub fn h() { super::f(); }\npub(in crate::d) fn m() {}\n",
        ),
        ("tests.rs", "use crate::d::e::h;\n"),
    ];
    for (path, text) in files {
        let path = dir.join("src").join(path);
        std::fs::create_dir_all(path.parent().expect("a file has a directory")).expect("mkdir");
        std::fs::write(&path, text).expect("write the fixture");
    }
    let krate = Crate::read("fake", &dir.join("src"), Path::new("lib.rs"));
    let arrows: Vec<String> = krate
        .arrows()
        .iter()
        .map(|a| {
            format!(
                "{}:{} {} -> {}",
                a.file.display(),
                a.line,
                shown(&a.from),
                shown(&a.to)
            )
        })
        .collect();
    assert_eq!(
        arrows,
        [
            "a.rs:1 a -> b",
            "a.rs:1 a -> c",
            "a.rs:3 a -> crate",
            "b/inner.rs:2 b::inner -> c",
            "b.rs:4 b -> b::inner",
            "d/e.rs:1 d::e -> d",
            "elsewhere/c_impl.rs:2 c -> b",
            "lib.rs:9 d -> a",
        ]
    );
    assert!(krate.problems.is_empty(), "{:?}", krate.problems);
    assert_eq!(krate.reached.len(), files.len());
    let table: &[Row] = &[
        ("a", 1, "a"),
        ("b", 0, "b"),
        ("c", 0, "c"),
        ("d", 2, "d"),
        ("crate", 3, "the root"),
    ];
    let mut found = Found::default();
    krate.check(table, None, &mut found);
    let keys: Vec<&String> = found.violations.keys().collect();
    assert_eq!(keys, ["fake: circle b <-> c", "fake: up a -> crate"]);
    assert_eq!(
        found.violations["fake: up a -> crate"],
        "  crates/fake/src/a.rs:3: a imports crate (floor 3) from floor 1"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// What the reading of the workspace found.
#[derive(Default)]
struct Found {
    /// A violation's stable key (as `KNOWN` spells it) → where it is.
    violations: BTreeMap<String, String>,
    /// Things that are wrong with the tables or the tree, never tolerated.
    problems: Vec<String>,
    /// Source files read, tests included.
    files: usize,
}

fn check_workspace(crates: &Path) -> Found {
    let mut found = Found::default();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(crates)
        .unwrap_or_else(|e| panic!("{}: {e}", crates.display()))
        .map(|e| e.expect("a directory entry of crates/").path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir
            .file_name()
            .expect("a listed directory has a name")
            .to_string_lossy()
            .into_owned();
        let Some(&(_, table, commands)) = TABLES.iter().find(|(n, ..)| *n == name) else {
            found.problems.push(format!(
                "crates/{name} has no floor table: add one to TABLES in tests/it/layers.rs"
            ));
            continue;
        };
        let src = dir.join("src");
        let mut roots = Vec::new();
        for root in ["lib.rs", "main.rs"] {
            if src.join(root).is_file() {
                roots.push(PathBuf::from(root));
            }
        }
        if let Ok(bins) = std::fs::read_dir(src.join("bin")) {
            for bin in bins.flatten() {
                let p = bin.path();
                if p.extension().is_some_and(|x| x == "rs") {
                    roots.push(Path::new("bin").join(p.file_name().expect("a listed file")));
                }
            }
        }
        let mut reached = BTreeSet::new();
        let mut modules = BTreeSet::new();
        for root in roots {
            let krate = Crate::read(&name, &src, &root);
            found.files += krate.reached.len();
            found.problems.extend(krate.problems.iter().cloned());
            reached.extend(krate.reached.iter().cloned());
            modules.extend(krate.modules.keys().cloned());
            krate.check(table, commands, &mut found);
        }
        // A row that places no module is stale: the table says what the
        // tree is, not what it was.
        for (row, ..) in table {
            if *row != "crate" && !modules.contains(*row) {
                found.problems.push(format!(
                    "{name}'s table places {row}, which is no module of crates/{name}: \
                     remove its row from tests/it/layers.rs"
                ));
            }
        }
        let mut all = Vec::new();
        rs_files(&src, &src, &mut all);
        for file in all {
            if !reached.contains(&file) {
                found.problems.push(format!(
                    "crates/{name}/src/{} is reached by no `mod` declaration",
                    file.display()
                ));
            }
        }
    }
    found
}

fn rs_files(src: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let p = entry.path();
        if p.is_dir() {
            rs_files(src, &p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p.strip_prefix(src).expect("under src").to_path_buf());
        }
    }
}

// ---------------------------------------------------------------- the crate

/// A module path: `""` is the crate root, else `a::b`.
type Module = String;

fn join(parent: &str, child: &str) -> Module {
    if parent.is_empty() {
        child.to_string()
    } else {
        format!("{parent}::{child}")
    }
}

fn parent(module: &str) -> Option<&str> {
    if module.is_empty() {
        None
    } else {
        Some(module.rsplit_once("::").map_or("", |(p, _)| p))
    }
}

fn is_within(module: &str, ancestor: &str) -> bool {
    ancestor.is_empty()
        || module == ancestor
        || module.len() > ancestor.len()
            && module.starts_with(ancestor)
            && module[ancestor.len()..].starts_with("::")
}

fn shown(module: &str) -> &str {
    if module.is_empty() { "crate" } else { module }
}

#[derive(Default)]
struct ModuleInfo {
    /// The file it is written in, relative to `src/`.
    file: PathBuf,
    children: BTreeSet<String>,
    /// Its own tokens: child modules' blocks and `#[cfg(test)]` items left out.
    toks: Vec<Token>,
}

/// An arrow: `from` names something of `to` at `file:line`.
#[derive(Clone)]
struct Arrow {
    from: Module,
    to: Module,
    file: PathBuf,
    line: usize,
}

struct Crate {
    name: String,
    src: PathBuf,
    modules: BTreeMap<Module, ModuleInfo>,
    /// Files read, `#[cfg(test)]` modules' files included.
    reached: BTreeSet<PathBuf>,
    problems: Vec<String>,
}

impl Crate {
    fn read(name: &str, src: &Path, root: &Path) -> Crate {
        let mut krate = Crate {
            name: name.to_string(),
            src: src.to_path_buf(),
            modules: BTreeMap::new(),
            reached: BTreeSet::new(),
            problems: Vec::new(),
        };
        krate.load_file(String::new(), root, PathBuf::new());
        krate
    }

    fn load_file(&mut self, module: Module, file: &Path, children_dir: PathBuf) {
        let text = match std::fs::read_to_string(self.src.join(file)) {
            Ok(text) => text,
            Err(e) => {
                self.problems
                    .push(format!("crates/{}/src/{}: {e}", self.name, file.display()));
                return;
            }
        };
        self.reached.insert(file.to_path_buf());
        let toks = lex(&text);
        self.load(module, file, &children_dir, &toks);
    }

    /// Reads the items of `module` from `toks`, descending into the modules
    /// it declares.
    fn load(&mut self, module: Module, file: &Path, children_dir: &Path, toks: &[Token]) {
        let mut own = Vec::new();
        let mut test = false;
        let mut path_attr: Option<String> = None;
        let mut i = 0;
        while i < toks.len() {
            let t = &toks[i];
            let open = if toks.get(i + 1).is_some_and(|t| t.is('!')) {
                i + 2
            } else {
                i + 1
            };
            if t.is('#') && toks.get(open).is_some_and(|t| t.is('[')) {
                let end = closing(toks, open);
                let inner: Vec<&Tok> = toks[(open + 1).min(end)..end.saturating_sub(1)]
                    .iter()
                    .map(|t| &t.tok)
                    .collect();
                let cfg_test = [
                    Tok::Ident("cfg".into()),
                    Tok::Punct('('),
                    Tok::Ident("test".into()),
                    Tok::Punct(')'),
                ];
                if inner.len() == 4 && inner.iter().zip(&cfg_test).all(|(a, b)| *a == b) {
                    test |= open == i + 1;
                }
                if let [Tok::Ident(p), Tok::Punct('='), Tok::Str(s)] = inner.as_slice()
                    && p == "path"
                {
                    path_attr = Some(s.clone());
                }
                i = end;
                continue;
            }
            // A visibility between the attributes and the item keeps them.
            let mut k = i;
            if t.ident() == Some("pub") {
                k += 1;
                if toks.get(k).is_some_and(|t| t.is('(')) {
                    k = closing(toks, k);
                }
            }
            let decl = match (toks.get(k), toks.get(k + 1), toks.get(k + 2)) {
                (Some(m), Some(n), Some(end))
                    if m.ident() == Some("mod") && (end.is(';') || end.is('{')) =>
                {
                    n.ident().map(|name| (name.to_string(), k + 2, end.is('{')))
                }
                _ => None,
            };
            if test {
                // Test code may reach anywhere; its files still count as read.
                if let Some((name, _, false)) = &decl {
                    let (f, _) = self.child_file(file, children_dir, name, path_attr.as_deref());
                    if self.src.join(&f).is_file() {
                        self.reached.insert(f);
                    }
                }
                i = item_end(toks, i);
                test = false;
                path_attr = None;
                continue;
            }
            if let Some((name, at, inline)) = decl {
                let child = join(&module, &name);
                self.modules
                    .entry(module.clone())
                    .or_default()
                    .children
                    .insert(name.clone());
                if inline {
                    let end = closing(toks, at);
                    let inner = &toks[at + 1..end.saturating_sub(1)];
                    self.load(child, file, &children_dir.join(&name), inner);
                    i = end;
                } else {
                    let (f, dir) = self.child_file(file, children_dir, &name, path_attr.as_deref());
                    self.load_file(child, &f, dir);
                    i = at + 1;
                }
                path_attr = None;
                continue;
            }
            own.extend_from_slice(&toks[i..k.max(i + 1)]);
            i = k.max(i + 1);
            path_attr = None;
        }
        let info = self.modules.entry(module).or_default();
        info.file = file.to_path_buf();
        info.toks = own;
    }

    /// Where `mod name;` declared in `file` is written, and where its own
    /// children are.
    fn child_file(
        &self,
        file: &Path,
        children_dir: &Path,
        name: &str,
        path_attr: Option<&str>,
    ) -> (PathBuf, PathBuf) {
        if let Some(p) = path_attr {
            // `#[path]` is relative to the declaring file's directory.
            let f = file.parent().unwrap_or(Path::new("")).join(p);
            let dir = f.parent().unwrap_or(Path::new("")).to_path_buf();
            return (f, dir);
        }
        let flat = children_dir.join(format!("{name}.rs"));
        let dir = children_dir.join(name);
        if self.src.join(&flat).is_file() {
            (flat, dir)
        } else {
            (dir.join("mod.rs"), dir)
        }
    }

    fn is_module(&self, module: &str) -> bool {
        self.modules.contains_key(module)
    }

    fn is_child(&self, module: &str, name: &str) -> bool {
        self.modules
            .get(module)
            .is_some_and(|m| m.children.contains(name))
    }

    /// The deepest module a path written in `from` spells, if the path is
    /// the crate's own.
    fn resolve(&self, from: &str, segs: &[String]) -> Option<Module> {
        let first = segs.first()?;
        let (mut at, mut k) = match first.as_str() {
            "crate" => (String::new(), 1),
            "self" => (from.to_string(), 1),
            "super" => {
                let mut at = from;
                let mut k = 0;
                while segs.get(k).is_some_and(|s| s == "super") {
                    at = parent(at)?;
                    k += 1;
                }
                (at.to_string(), k)
            }
            name if self.is_child(from, name) => (from.to_string(), 0),
            _ => return None,
        };
        while let Some(s) = segs.get(k) {
            let next = join(&at, s);
            if !self.is_module(&next) {
                break;
            }
            at = next;
            k += 1;
        }
        Some(at)
    }

    /// Every arrow of the crate, in file and line order.
    fn arrows(&self) -> Vec<Arrow> {
        let mut macros: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (module, info) in &self.modules {
            for w in info.toks.windows(3) {
                if w[0].ident() == Some("macro_rules")
                    && w[1].is('!')
                    && let Some(name) = w[2].ident()
                {
                    macros.entry(name).or_default().push(module);
                }
            }
        }
        let mut arrows = Vec::new();
        for (module, info) in &self.modules {
            let mut push = |to: Module, line: usize| {
                if to != *module {
                    arrows.push(Arrow {
                        from: module.clone(),
                        to,
                        file: info.file.clone(),
                        line,
                    });
                }
            };
            let toks = &info.toks;
            let mut reexported: Vec<(String, Module)> = Vec::new();
            let mut bare: BTreeMap<&str, usize> = BTreeMap::new();
            let mut i = 0;
            while i < toks.len() {
                let t = &toks[i];
                let prev = i.checked_sub(1).map(|p| &toks[p]);
                let after_sep = prev.is_some_and(|p| p.tok == Tok::Sep || p.is('.'));
                let Some(word) = t.ident() else {
                    i += 1;
                    continue;
                };
                if word == "use" {
                    let public = is_public(toks, i);
                    let mut trees = Vec::new();
                    let mut k = i + 1;
                    use_tree(toks, &mut k, Vec::new(), &mut trees);
                    for (segs, bound) in trees {
                        let Some(to) = self.resolve(module, &segs) else {
                            continue;
                        };
                        if public && to != *module && is_within(&to, module) {
                            // A re-export of a child's item is the tree, not
                            // an arrow, until the parent's code uses it.
                            if let Some(bound) = bound {
                                reexported.push((bound, to));
                            }
                        } else {
                            push(to, t.line);
                        }
                    }
                    i = item_end(toks, i).max(k);
                    continue;
                }
                let next = toks.get(i + 1);
                if !after_sep && next.is_some_and(|n| n.tok == Tok::Sep) {
                    if matches!(word, "crate" | "super" | "self") || self.is_child(module, word) {
                        let mut segs = vec![word.to_string()];
                        let mut k = i + 1;
                        while toks.get(k).is_some_and(|t| t.tok == Tok::Sep)
                            && let Some(s) = toks.get(k + 1).and_then(Token::ident)
                        {
                            segs.push(s.to_string());
                            k += 2;
                        }
                        // `pub(in crate::a)` names where an item is seen,
                        // not something the module uses.
                        let visibility = prev.is_some_and(|p| p.ident() == Some("in"));
                        if let Some(to) = self.resolve(module, &segs)
                            && !visibility
                        {
                            push(to, t.line);
                        }
                        i = k;
                        continue;
                    }
                } else if !after_sep
                    && next.is_some_and(|n| n.is('!'))
                    && toks
                        .get(i + 2)
                        .is_some_and(|n| n.is('(') || n.is('[') || n.is('{'))
                    && let Some(definers) = macros.get(word)
                    && !definers.contains(&module.as_str())
                {
                    // `macro_rules!` is scoped by text: the nearest enclosing
                    // module that defines the name is where it comes from.
                    if let Some(d) = definers
                        .iter()
                        .filter(|d| is_within(module, d))
                        .max_by_key(|d| d.len())
                    {
                        push((*d).to_string(), t.line);
                    }
                } else if !after_sep
                    && prev.is_none_or(|p| p.ident() != Some("mod"))
                    && !next.is_some_and(|n| n.tok == Tok::Sep)
                {
                    bare.entry(word).or_insert(t.line);
                }
                i += 1;
            }
            for (name, to) in reexported {
                if let Some(&line) = bare.get(name.as_str()) {
                    push(to, line);
                }
            }
        }
        arrows.sort_by(|a, b| (&a.file, a.line, &a.to).cmp(&(&b.file, b.line, &b.to)));
        // One line naming one module twice (`use super::{a::X, a::Y}`) is one arrow.
        arrows.dedup_by(|a, b| (&a.file, a.line, &a.to) == (&b.file, b.line, &b.to));
        arrows
    }

    fn at(&self, a: &Arrow) -> String {
        format!("crates/{}/src/{}:{}", self.name, a.file.display(), a.line)
    }

    fn check(&self, table: &[Row], commands: Option<&str>, found: &mut Found) {
        let name = &self.name;
        let floor = |module: &str| -> Option<u8> {
            if module.is_empty() {
                return table.iter().find(|r| r.0 == "crate").map(|r| r.1);
            }
            table
                .iter()
                .filter(|r| r.0 != "crate" && is_within(module, r.0))
                .max_by_key(|r| r.0.len())
                .map(|r| r.1)
        };
        for (module, info) in &self.modules {
            // Only the highest module off the table is named: its children
            // follow the row that places it.
            if floor(module).is_none() && parent(module).is_none_or(|p| floor(p).is_some()) {
                found.problems.push(format!(
                    "crates/{name}/src/{}: the module {} is on no floor: add a row for it to \
                     {name}'s table in tests/it/layers.rs",
                    info.file.display(),
                    shown(module)
                ));
            }
        }
        let arrows = self.arrows();
        // Rule 2, per pair of modules.
        let mut pairs: BTreeMap<(&str, &str), Vec<&Arrow>> = BTreeMap::new();
        for a in &arrows {
            pairs.entry((&a.from, &a.to)).or_default().push(a);
        }
        for ((from, to), arrows) in pairs {
            if let (Some(f), Some(t)) = (floor(from), floor(to))
                && t > f
            {
                let mut detail = String::new();
                for a in arrows.iter().take(3) {
                    detail.push_str(&format!(
                        "  {}: {} imports {} (floor {t}) from floor {f}\n",
                        self.at(a),
                        shown(from),
                        shown(to)
                    ));
                }
                if arrows.len() > 3 {
                    detail.push_str(&format!("  and {} more\n", arrows.len() - 3));
                }
                detail.pop();
                found.violations.insert(
                    format!("{name}: up {} -> {}", shown(from), shown(to)),
                    detail,
                );
            }
        }
        if let Some(root) = commands {
            // Rule 3, per pair of commands: `commands/x.rs` and `commands/x/*`
            // are the command `x`.
            let command = |m: &str| -> Option<String> {
                let rest = m.strip_prefix(root)?.strip_prefix("::")?;
                Some(rest.split("::").next().unwrap_or(rest).to_string())
            };
            let mut pairs: BTreeMap<(String, String), Vec<&Arrow>> = BTreeMap::new();
            for a in &arrows {
                if let (Some(x), Some(y)) = (command(&a.from), command(&a.to))
                    && x != y
                {
                    pairs.entry((x, y)).or_default().push(a);
                }
            }
            for ((x, y), arrows) in pairs {
                let mut detail = format!(
                    "  the command {x} imports the command {y}: what two commands share \
                     lives outside {root}/"
                );
                list(&mut detail, &arrows, "    ", |a| self.at(a));
                found
                    .violations
                    .insert(format!("{name}: command {x} -> {y}"), detail);
            }
        }
        // Circles are looked for between sibling rooms: an arrow from `a::x`
        // to `b::y` is an arrow from room `a` to room `b` among the children
        // of their nearest common module. An arrow between a module and one
        // of its own ancestors lifts to no level, so it closes no circle on
        // its own (a child naming its parent's types, a parent calling its
        // children); it still counts for the floors.
        let mut levels: BTreeMap<Module, BTreeMap<(Module, Module), Vec<&Arrow>>> = BTreeMap::new();
        for a in &arrows {
            if let Some((common, x, y)) = rooms(&a.from, &a.to) {
                levels
                    .entry(common)
                    .or_default()
                    .entry((x, y))
                    .or_default()
                    .push(a);
            }
        }
        for level in levels.values() {
            for circle in circles(level) {
                let members: Vec<&str> = circle.iter().map(|m| shown(m)).collect();
                let mut detail = format!("  the rooms {} reach each other:", members.join(", "));
                for leg in walk(&circle, level) {
                    let arrows = &level[&leg];
                    detail.push_str(&format!("\n    {} -> {}:", shown(&leg.0), shown(&leg.1)));
                    list(&mut detail, arrows, "      ", |a| self.at(a));
                }
                found
                    .violations
                    .insert(format!("{name}: circle {}", members.join(" <-> ")), detail);
            }
        }
    }
}

/// Lists the first arrows of a group, one a line, and how many more there are.
fn list(detail: &mut String, arrows: &[&Arrow], indent: &str, at: impl Fn(&Arrow) -> String) {
    for a in arrows.iter().take(3) {
        detail.push_str(&format!(
            "\n{indent}{}: {} imports {}",
            at(a),
            shown(&a.from),
            shown(&a.to)
        ));
    }
    if arrows.len() > 3 {
        detail.push_str(&format!("\n{indent}and {} more", arrows.len() - 3));
    }
}
