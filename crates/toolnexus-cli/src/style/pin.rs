//! Pinning checks of `eval`, `batch` and `serve` (SPEC §20): a floating alias
//! as the model (`toolnexus::pinning::is_floating`), and a `--thresholds` or
//! `--calibration` file fitted on another model than the one asked for, are
//! warnings (once each, through [`crate::warnings`]), or with `--pinned`
//! refusals (exit 2) naming the alias or the file and both models. A file
//! written before files named their model loads with a warning.
//!
//! Only the live styles (systemone, llm) ask a backend for a model by name;
//! recorded and local styles are not checked.

use std::path::Path;

use anyhow::Result;
use toolnexus::pinning::is_floating;

use crate::args::{PinArgs, StyleArgs, StyleName};
use crate::exit;

/// The model a live style asks for, and how the user named it: `--model`,
/// else the System One backend preset's default. `None` for styles that ask
/// no backend by model name.
pub fn asked_model(args: &StyleArgs, style: StyleName) -> Option<(String, String)> {
    if !matches!(style, StyleName::SystemOne | StyleName::Llm) {
        return None;
    }
    match args.live.model.as_deref().map(str::trim) {
        Some(m) if !m.is_empty() => Some((m.to_string(), format!("--model {m}"))),
        _ if style == StyleName::SystemOne => {
            let backend = args.live.backend.unwrap_or_default();
            let m = backend.default_model();
            Some((
                m.to_string(),
                format!(
                    "the default model {m} (--backend {})",
                    match backend {
                        toolnexus::classifier::Backend::OpenRouter => "openrouter",
                        _ => "typesafe",
                    }
                ),
            ))
        }
        _ => None,
    }
}

/// What a file says about the model asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fit {
    /// The file names the model asked for.
    Holds,
    /// The file names no model (written before files recorded one).
    NamesNone,
    /// The file names other models only.
    Other(Vec<String>),
}

fn fit(models: &[String], asked: &str) -> Fit {
    if models.is_empty() {
        Fit::NamesNone
    } else if models.iter().any(|m| m == asked) {
        Fit::Holds
    } else {
        Fit::Other(models.to_vec())
    }
}

/// Checks the model the style asks for and the `--thresholds` and
/// `--calibration` files against it: a warning each, or under `--pinned` the
/// first refusal as a usage error (exit 2). Files that cannot be read are left
/// to the code that reads them.
pub fn check(
    pin: &PinArgs,
    args: &StyleArgs,
    style: StyleName,
    thresholds: Option<&Path>,
) -> Result<()> {
    let Some((asked, named)) = asked_model(args, style) else {
        return Ok(());
    };
    let mut findings = Vec::new();
    if is_floating(&asked) {
        findings.push(if pin.pinned {
            Finding::Refuse(format!(
                "--pinned: {named} is a floating alias (the model behind it can change without notice); \
                 name a pinned model with --model (a decision's \"model\" says which model answered)"
            ))
        } else {
            Finding::Warn(format!(
                "{named} is a floating alias: the model behind it can change without notice, and answers, \
                 thresholds and calibration hold only for the model that answered (each decision's \"model\"); \
                 name a pinned model with --model, or refuse aliases with --pinned"
            ))
        });
    }
    if let Some(path) = thresholds
        && let Ok(t) = toolnexus::judge::Thresholds::load(path)
    {
        findings.extend(file_finding(
            pin.pinned,
            &format!("--thresholds {}", path.display()),
            "its cuts were picked on",
            "pick them again with `toolnexus assess thresholds`",
            &t.models,
            &asked,
        ));
    }
    if let Some(path) = &args.calibration
        && let Ok(c) = toolnexus::assess::Calibration::load(path)
    {
        findings.extend(file_finding(
            pin.pinned,
            &format!("--calibration {}", path.display()),
            "its maps were fitted on",
            "fit them again with `toolnexus assess calibrate`",
            &c.models(),
            &asked,
        ));
    }
    for f in findings {
        match f {
            Finding::Refuse(text) => return Err(exit::usage(text)),
            Finding::Warn(text) => crate::warnings::warn(&text),
        }
    }
    Ok(())
}

enum Finding {
    Warn(String),
    Refuse(String),
}

fn file_finding(
    pinned: bool,
    file: &str,
    fitted: &str,
    again: &str,
    models: &[String],
    asked: &str,
) -> Option<Finding> {
    match fit(models, asked) {
        Fit::Holds => None,
        Fit::NamesNone => Some(Finding::Warn(format!(
            "{file} names no model {fitted} (an older file), so it may not hold for {asked}; {again}"
        ))),
        Fit::Other(models) if pinned => Some(Finding::Refuse(format!(
            "--pinned: {file} holds for {}, not for {asked}, the model asked for",
            models.join(", ")
        ))),
        Fit::Other(models) => Some(Finding::Warn(format!(
            "{file} holds for {}, not for {asked}, the model asked for: {fitted} another model's answers, \
             which do not transfer; {again}, or refuse this with --pinned",
            models.join(", ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_holds_names_none_or_names_others() {
        let ms = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(fit(&ms(&["a", "b"]), "b"), Fit::Holds);
        assert_eq!(fit(&[], "b"), Fit::NamesNone);
        assert_eq!(fit(&ms(&["a"]), "b"), Fit::Other(ms(&["a"])));
    }

    #[test]
    fn only_live_styles_ask_for_a_model_and_systemone_has_a_default() {
        let mut args = StyleArgs::default();
        assert_eq!(
            asked_model(&args, StyleName::SystemOne),
            Some((
                "jev-latest".to_string(),
                "the default model jev-latest (--backend typesafe)".to_string()
            ))
        );
        assert_eq!(asked_model(&args, StyleName::Tape), None);
        args.live.model = Some("jev-1.13".into());
        assert_eq!(
            asked_model(&args, StyleName::Llm).map(|m| m.1),
            Some("--model jev-1.13".to_string())
        );
        assert_eq!(asked_model(&args, StyleName::Static), None);
    }
}
