//! Programs in other languages handed to an interpreter on the command line
//! (`python -c`, `perl -e`, an `awk` program that calls `system`, a `sed`
//! script with `e` or `w`): the guard does not read them, so each is named
//! as unread.

use super::word::Word;

/// What an interpreter's arguments hand it.
pub(crate) enum Code {
    /// Program text on the command line: the reason names it.
    Inline(String),
    /// The program comes from its standard input.
    Stdin,
    /// A script file, a module, or nothing the guard need read.
    None,
}

/// The longest program text quoted in a reason.
const QUOTE: usize = 80;

pub(crate) fn quote(text: &str) -> String {
    let one_line = text.replace('\n', " ");
    if one_line.chars().count() <= QUOTE {
        one_line
    } else {
        let cut: String = one_line.chars().take(QUOTE).collect();
        format!("{cut}…")
    }
}

/// Whether `name` is an interpreter of a general-purpose language, by the
/// conventions of its executables (`python3.12`, `pypy3`, `nodejs`…).
pub(crate) fn is_interpreter(name: &str) -> bool {
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    matches!(
        stem,
        "python"
            | "pypy"
            | "perl"
            | "ruby"
            | "node"
            | "nodejs"
            | "deno"
            | "bun"
            | "php"
            | "lua"
            | "luajit"
            | "Rscript"
            | "R"
            | "osascript"
            | "pwsh"
            | "powershell"
            | "powershell.exe"
            | "julia"
            | "tclsh"
            | "wish"
            | "irb"
            | "jshell"
            | "expect"
            | "guile"
            | "sbcl"
            | "racket"
            | "groovy"
            | "scala"
            | "kotlin"
    )
}

/// The code an interpreter runs, from its arguments.
pub(crate) fn interpreter_code(name: &str, args: &[Word]) -> Code {
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    // Flags whose next word (or attached rest) is program text.
    let code_flags: &[&str] = match stem {
        "python" | "pypy" => &["-c"],
        "perl" => &["-e", "-E"],
        "ruby" | "lua" | "luajit" | "R" | "Rscript" | "julia" | "osascript" | "irb" => {
            &["-e", "-E"]
        }
        "node" | "nodejs" | "bun" => &["-e", "--eval", "-p", "--print"],
        "php" => &["-r", "-R", "-B", "-E"],
        "pwsh" | "powershell" | "powershell.exe" => &[
            "-c",
            "-command",
            "-encodedcommand",
            "-ec",
            "-e",
            "-enc",
            "-cwa",
            "-commandwithargs",
        ],
        "expect" | "tclsh" | "wish" => &["-c"],
        "guile" | "sbcl" | "racket" | "groovy" | "scala" | "kotlin" | "jshell" => {
            &["-c", "-e", "--eval", "-expr"]
        }
        _ => &[],
    };
    if stem == "deno" && args.first().is_some_and(|a| a.text == "eval") {
        let text = args.get(1).map(|w| w.text.as_str()).unwrap_or("");
        return Code::Inline(format!("{name} eval code: {}", quote(text)));
    }
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let text = a.text.as_str();
        if text == "--" {
            i += 1;
            break;
        }
        if !text.starts_with('-') || text == "-" {
            break;
        }
        let lower = text.to_ascii_lowercase();
        let flag = lower.split('=').next().unwrap_or("");
        let perl_like = matches!(stem, "perl" | "ruby")
            && !text.starts_with("--")
            && text[1..]
                .split('.')
                .next()
                .is_some_and(|f| f.contains(['e', 'E']));
        if code_flags.contains(&flag) || perl_like {
            let inline = text.split_once('=').map(|(_, v)| v.to_string());
            let code = inline.or_else(|| args.get(i + 1).map(|w| w.text.clone()));
            return Code::Inline(format!("{name} code: {}", quote(&code.unwrap_or_default())));
        }
        // Python's short flags cluster (`-Ic CODE`, `-uc…`, `-Bm mod`):
        // read the cluster letter by letter as python does.
        if matches!(stem, "python" | "pypy") && !text.starts_with("--") {
            let letters: Vec<char> = text[1..].chars().collect();
            let mut consumed_next = false;
            for (k, &l) in letters.iter().enumerate() {
                let rest: String = letters[k + 1..].iter().collect();
                match l {
                    'c' => {
                        let code = if rest.is_empty() {
                            args.get(i + 1).map(|w| w.text.clone()).unwrap_or_default()
                        } else {
                            rest
                        };
                        return Code::Inline(format!("{name} code: {}", quote(&code)));
                    }
                    'm' => return Code::None,
                    'W' | 'X' | 'Q' => {
                        consumed_next = rest.is_empty();
                        break;
                    }
                    _ => {}
                }
            }
            if consumed_next {
                i += 1;
            }
        }
        // Node and bun read `-pe CODE` as `-p -e CODE`.
        if matches!(stem, "node" | "nodejs" | "bun")
            && !text.starts_with("--")
            && text[1..].chars().all(|c| c.is_ascii_alphabetic())
            && text[1..].contains(['e', 'p'])
        {
            let code = args.get(i + 1).map(|w| w.text.clone()).unwrap_or_default();
            return Code::Inline(format!("{name} code: {}", quote(&code)));
        }
        i += 1;
    }
    match args.get(i) {
        None => Code::Stdin,
        Some(w) if w.text == "-" => Code::Stdin,
        Some(w) if w.dynamic => Code::Inline(format!(
            "{name} runs a program from an expansion or substitution: {}",
            quote(&w.raw)
        )),
        Some(_) => Code::None,
    }
}

/// An awk program that runs commands (`system`, a pipe to or from a
/// command) or writes files (`print > "file"`): the reason, if any.
pub(crate) fn awk_runs(name: &str, args: &[Word]) -> Option<String> {
    let mut programs = Vec::new();
    let mut i = 0;
    let mut from_file = false;
    while i < args.len() {
        let t = args[i].text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if !t.starts_with('-') || t == "-" {
            break;
        }
        match t {
            "-f" | "--file" => {
                from_file = true;
                i += 1;
            }
            "-e" | "--source" => {
                programs.push(args.get(i + 1));
                i += 1;
            }
            "-F" | "-v" | "-i" | "-l" | "--assign" | "--field-separator" | "--include"
            | "--load" => i += 1,
            _ => {}
        }
        i += 1;
    }
    if !from_file && programs.is_empty() {
        programs.push(args.get(i));
    }
    for p in programs.into_iter().flatten() {
        if p.dynamic {
            return Some(format!(
                "{name} program built from an expansion: {}",
                quote(&p.raw)
            ));
        }
        if awk_program_runs(&p.text) {
            return Some(format!(
                "{name} program that runs commands or writes files: {}",
                quote(&p.text)
            ));
        }
    }
    None
}

fn awk_program_runs(program: &str) -> bool {
    let bytes = program.as_bytes();
    if program.contains("system") || program.contains("getline") && program.contains('|') {
        return true;
    }
    // A single `|` (not `||`) pipes print's output into a command.
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'|' {
            let before = i > 0 && bytes[i - 1] == b'|';
            let after = bytes.get(i + 1) == Some(&b'|');
            if !before && !after {
                return true;
            }
        }
    }
    // `print … > "file"` or `printf … >> file` writes a file.
    for statement in program.split([';', '{', '}', '\n']) {
        let s = statement.trim_start();
        if (s.starts_with("print") || s.starts_with("printf")) && s.contains('>') {
            return true;
        }
    }
    false
}

/// A sed script that runs commands (`e`, the `s///e` flag) or writes files
/// (`w`, `W`, the `s///w` flag): the reason, if any.
pub(crate) fn sed_runs(name: &str, args: &[Word]) -> Option<String> {
    let mut scripts = Vec::new();
    let mut from_file = false;
    let mut first_operand = None;
    let mut i = 0;
    let mut options_done = false;
    while i < args.len() {
        let t = args[i].text.as_str();
        if options_done || !t.starts_with('-') || t == "-" {
            if first_operand.is_none() {
                first_operand = Some(&args[i]);
            }
        } else if t == "--" {
            options_done = true;
        } else if t == "-e" || t == "--expression" {
            scripts.push(args.get(i + 1));
            i += 1;
        } else if let Some(v) = t.strip_prefix("--expression=") {
            scripts.push(None);
            if sed_script_runs(v) {
                return Some(format!(
                    "{name} script that runs commands or writes files: {}",
                    quote(v)
                ));
            }
        } else if t == "-f" || t == "--file" || t.starts_with("--file=") {
            from_file = true;
            if t == "-f" || t == "--file" {
                i += 1;
            }
        } else if t == "-l" || t == "--line-length" {
            i += 1;
        } else if t.len() > 2 && !t.starts_with("--") && t.ends_with('e') {
            // Combined flags such as `-ne SCRIPT`.
            scripts.push(args.get(i + 1));
            i += 1;
        }
        i += 1;
    }
    if scripts.is_empty() && !from_file {
        scripts.push(first_operand);
    }
    for s in scripts.into_iter().flatten() {
        if s.dynamic {
            return Some(format!(
                "{name} script built from an expansion: {}",
                quote(&s.raw)
            ));
        }
        if sed_script_runs(&s.text) {
            return Some(format!(
                "{name} script that runs commands or writes files: {}",
                quote(&s.text)
            ));
        }
    }
    None
}

/// Reads a sed script command by command, looking for `e`, `w`, `W` and the
/// `e`/`w` flags of `s`.
fn sed_script_runs(script: &str) -> bool {
    let c: Vec<char> = script.chars().collect();
    let mut i = 0;
    while i < c.len() {
        // Separators and blanks between commands.
        while i < c.len() && (c[i].is_whitespace() || c[i] == ';' || c[i] == '}') {
            i += 1;
        }
        // Addresses: numbers, `$`, `/re/`, `\cREc`, ranges, steps, negation.
        loop {
            if i >= c.len() {
                return false;
            }
            match c[i] {
                '0'..='9' | '$' | ',' | '~' | '+' | '!' | ' ' => i += 1,
                '/' | '\\' => {
                    let delim = if c[i] == '\\' {
                        i += 1;
                        match c.get(i) {
                            Some(&d) => d,
                            None => return false,
                        }
                    } else {
                        '/'
                    };
                    i += 1;
                    while i < c.len() && c[i] != delim {
                        if c[i] == '\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                    i += 1;
                    // The `I` and `M` address flags.
                    while i < c.len() && matches!(c[i], 'I' | 'M') {
                        i += 1;
                    }
                }
                _ => break,
            }
        }
        if i >= c.len() {
            return false;
        }
        let cmd = c[i];
        i += 1;
        match cmd {
            'e' | 'w' | 'W' => return true,
            '{' => {}
            's' | 'y' => {
                let Some(&delim) = c.get(i) else {
                    return false;
                };
                i += 1;
                for _ in 0..2 {
                    while i < c.len() && c[i] != delim {
                        if c[i] == '\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                    i += 1;
                }
                if cmd == 's' {
                    while i < c.len() && !matches!(c[i], ';' | '\n' | '}') {
                        if matches!(c[i], 'e' | 'w' | 'W') {
                            return true;
                        }
                        i += 1;
                    }
                }
            }
            // Commands whose argument runs to the end of the line.
            'a' | 'i' | 'c' | 'r' | 'R' | 'b' | 't' | 'T' | ':' | 'l' | 'q' | 'Q' | 'L' | 'v' => {
                while i < c.len() && c[i] != '\n' {
                    if matches!(cmd, 'b' | 't' | 'T' | 'q' | 'Q' | 'l' | 'L') && c[i] == ';' {
                        break;
                    }
                    i += 1;
                }
            }
            '#' => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            _ => {}
        }
    }
    false
}
