//! `--max-cost`, `--max-tokens`, `--max-time` for `batch`, `assess run` and
//! `tape record`: the library's [`Budget`] in front of the command's classifier
//! (beneath its cache, so hits cost nothing), and the one message a run
//! stopped by a cap ends with.
//!
//! Invariant: a request the budget refused was not sent and is not written;
//! the command's own resume (the out file, the run file, the tape) asks it
//! again when the printed command is rerun.
//!
//! A cap holds for the job, not for each run: what the command's own file
//! records as spent (each result line's cost and usage, each run row's, each
//! recording's) is [`carry`](toolnexus_stack::carry)-ed into the budget before anything is sent, so a
//! resume spends only what the cap has left. A `--max-cost` over a model no
//! price table lists is refused before anything starts: it could not be
//! enforced.

use std::ffi::OsString;

use toolnexus::cost::budget::{Budget, Cap};

use crate::args::CapArgs;

/// The flag that set `cap`, with its value.
fn flag(cap: Cap, caps: &CapArgs) -> String {
    match cap {
        Cap::Cost => format!("--max-cost {}", caps.max_cost.unwrap_or_default()),
        Cap::Tokens => format!("--max-tokens {}", caps.max_tokens.unwrap_or_default()),
        Cap::Time => {
            let t = caps.max_time.unwrap_or_default();
            format!("--max-time {}s", trim(t.as_secs_f64()))
        }
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Dollars: cents from $1 on, else up to six decimals (`$12.30`, `$0.0512`,
/// `$0.00006`).
fn usd(x: f64) -> String {
    if !x.is_finite() {
        return "an amount too large to show".to_string();
    }
    if x >= 1.0 {
        return format!("${x:.2}");
    }
    let mut s = format!("{x:.6}");
    while s.ends_with('0') && s.len() > 4 {
        s.pop();
    }
    format!("${s}")
}

/// The line a run stopped by a cap ends with: `{command}: stopped at --max-…:
/// spent …; {done}; resume with: …`.
pub fn message(command: &str, budget: &Budget, caps: &CapArgs, done: &str) -> String {
    let spent = budget.spent();
    let cap = budget.reached().unwrap_or(Cap::Cost);
    let calls = if spent.calls == 1 { "call" } else { "calls" };
    // An unknown cost is never shown as $0.
    let cost = match spent.unknown_cost {
        0 => usd(spent.usd),
        n if n == spent.calls => "an unknown amount".to_string(),
        _ => format!("{} plus an unknown amount", usd(spent.usd)),
    };
    let mut text = format!(
        "{command}: stopped at {}: spent {cost} on {} {calls} ({} tokens, {:.1}s)",
        flag(cap, caps),
        spent.calls,
        spent.tokens,
        spent.elapsed.as_secs_f64()
    );
    if spent.earlier_calls > 0 {
        let n = spent.earlier_calls;
        text.push_str(&format!(
            ", of which {} and {} tokens on {n} {} by earlier runs of this job",
            usd(spent.earlier_usd),
            spent.earlier_tokens,
            if n == 1 { "call" } else { "calls" }
        ));
    }
    if spent.unknown_cost > 0 {
        let n = spent.unknown_cost;
        text.push_str(&format!(
            "; the cost of {n} {} is unknown (not reported, no price) and not counted{}",
            if n == 1 { "call" } else { "calls" },
            if caps.max_cost.is_some() {
                " against --max-cost"
            } else {
                ""
            }
        ));
    }
    let (command, elided) = resume_command(std::env::args_os());
    let elided = if elided {
        " (a URL's credentials or query are left out here: put them back)"
    } else {
        ""
    };
    let holds = match cap {
        Cap::Cost => {
            "; the cap holds for the whole job (what earlier runs spent counts on resume): raise --max-cost to ask the rest"
        }
        Cap::Tokens => {
            "; the cap holds for the whole job (what earlier runs spent counts on resume): raise --max-tokens to ask the rest"
        }
        Cap::Time => "",
    };
    format!("{text}; {done}{holds}; resume with: {command}{elided}")
}

/// The command line as it was typed, shell-quoted, less `--restart` (which
/// would start the resumed run over), and whether a URL in it had
/// credentials or a query left out (never printed: they may be secrets).
fn resume_command(args: impl Iterator<Item = OsString>) -> (String, bool) {
    let mut elided = false;
    let words: Vec<String> = args
        .filter(|a| a != "--restart")
        .map(|a| {
            let word = a.to_string_lossy();
            let (shown, cut) = without_secrets(&word);
            elided |= cut;
            toolnexus_guard::shell::quote_word(&shown)
        })
        .collect();
    (words.join(" "), elided)
}

/// `word` with any URL in it (`--base-url=…` too) stripped of `user:pass@`,
/// query and fragment, and whether anything was cut.
fn without_secrets(word: &str) -> (String, bool) {
    let Some(scheme) = word.find("://") else {
        return (word.to_string(), false);
    };
    let start = word[..scheme]
        .char_indices()
        .rev()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || "+-.".contains(*c)))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let url = &word[start..];
    let cut_at = url.find(['?', '#']).unwrap_or(url.len());
    let rest = &url[scheme - start + 3..cut_at];
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    let userinfo = authority.rfind('@').map_or(0, |i| i + 1);
    if cut_at == url.len() && userinfo == 0 {
        return (word.to_string(), false);
    }
    let head = &url[..scheme - start + 3];
    let host_path = &rest[userinfo..];
    (format!("{}{head}{host_path}", &word[..start]), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resume_command_is_the_command_less_restart() {
        let args = [
            "toolnexus",
            "batch",
            "--restart",
            "--states",
            "my states.jsonl",
            "--max-cost",
            "0.5",
        ]
        .map(OsString::from);
        assert_eq!(
            resume_command(args.into_iter()),
            (
                "toolnexus batch --states 'my states.jsonl' --max-cost 0.5".to_string(),
                false
            )
        );
        let args = [
            "toolnexus",
            "--base-url",
            "https://me:s3cret@api.example/v1?key=k",
        ]
        .map(OsString::from);
        assert_eq!(
            resume_command(args.into_iter()),
            (
                "toolnexus --base-url https://api.example/v1".to_string(),
                true
            )
        );
        assert_eq!(
            without_secrets("--base-url=http://u@h:8/v1#x"),
            ("--base-url=http://h:8/v1".to_string(), true)
        );
        assert_eq!(without_secrets("é://u@h"), ("é://h".to_string(), true));
        assert_eq!(without_secrets("://"), ("://".to_string(), false));
        assert_eq!(
            without_secrets("http://127.0.0.1:9/v1"),
            ("http://127.0.0.1:9/v1".to_string(), false)
        );
    }

    #[test]
    fn dollars_keep_their_small_digits() {
        assert_eq!(usd(12.3), "$12.30");
        assert_eq!(usd(0.0512), "$0.0512");
        assert_eq!(usd(0.00006), "$0.00006");
        assert_eq!(usd(0.1), "$0.10");
        assert_eq!(usd(0.0), "$0.00");
        assert_eq!(usd(f64::INFINITY), "an amount too large to show");
        assert_eq!(usd(f64::NAN), "an amount too large to show");
    }
}
