//! A System One request as the official SDKs send it, read into its parts, or
//! refused with the API's validation list (`{"detail":[{loc,msg,type}]}`, 422).
//! Pure: no I/O.
//!
//! What is read: `state` (a string, an object or an array), `questions` (a
//! non-empty object of key → question, each decoded by the library), `model`
//! (a string), `assets` (`{name: {"type":"image","format","data_base64"}}`, or
//! `{"type":"image","part":"asset-N"}` naming a part of a multipart body), and
//! every other top-level field, kept as an extra field: nothing is dropped.

use serde_json::{Map, Value, json};
use toolnexus::classifier::{
    Asset, Assets, ClassifierError, ImageFormat, Questions, questions_from_wire, validate_questions,
};

use super::body::Part;

/// One entry of a 422's `detail` list.
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    /// Where: `["body", "questions", "x", "criteria"]`.
    pub loc: Vec<Value>,
    /// What is wrong, in words.
    pub msg: String,
    /// A machine-readable code (`missing`, `string_type`, …).
    pub kind: &'static str,
}

impl Invalid {
    fn new(loc: &[&str], msg: impl Into<String>, kind: &'static str) -> Invalid {
        Invalid {
            loc: std::iter::once("body")
                .chain(loc.iter().copied())
                .map(Value::from)
                .collect(),
            msg: msg.into(),
            kind,
        }
    }

    /// The wire form of one entry.
    pub fn wire(&self) -> Value {
        json!({"loc": self.loc, "msg": self.msg, "type": self.kind})
    }
}

/// A request read into its parts.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The state.
    pub state: Value,
    /// The questions, decoded and within the client-side limits.
    pub questions: Questions,
    /// The model asked for, if any.
    pub model: Option<String>,
    /// Image assets, resolved (multipart parts included).
    pub assets: Assets,
    /// Every other top-level field.
    pub extra: Map<String, Value>,
}

/// The multipart part that holds the request's JSON.
pub const REQUEST_PART: &str = "request";

/// Reads a request body's JSON (and, for a multipart body, its image parts).
/// Every problem found is listed, not just the first.
pub fn parse(body: Value, parts: &[Part]) -> Result<Parsed, Vec<Invalid>> {
    let Value::Object(mut fields) = body else {
        return Err(vec![Invalid::new(
            &[],
            "the request body is not a JSON object",
            "model_attributes_type",
        )]);
    };
    let mut errors = Vec::new();

    let model = match fields.shift_remove("model") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) => Some(m),
        Some(_) => {
            errors.push(Invalid::new(
                &["model"],
                "model is not a string",
                "string_type",
            ));
            None
        }
    };

    let state = match fields.shift_remove("state") {
        None => {
            errors.push(Invalid::new(&["state"], "Field required", "missing"));
            Value::Null
        }
        Some(s @ (Value::String(_) | Value::Object(_) | Value::Array(_))) => s,
        Some(other) => {
            errors.push(Invalid::new(
                &["state"],
                format!(
                    "the state must be a string, an object or an array, not {}",
                    toolnexus::classifier::json_kind(&other)
                ),
                "state_type",
            ));
            Value::Null
        }
    };

    let questions = match fields.shift_remove("questions") {
        None => {
            errors.push(Invalid::new(&["questions"], "Field required", "missing"));
            Questions::new()
        }
        Some(Value::Object(qs)) if qs.is_empty() => {
            errors.push(Invalid::new(
                &["questions"],
                "questions must hold at least one question",
                "too_short",
            ));
            Questions::new()
        }
        Some(Value::Object(qs)) => read_questions(&qs, &mut errors),
        Some(other) => {
            errors.push(Invalid::new(
                &["questions"],
                format!(
                    "questions must be an object of key to question, not {}",
                    toolnexus::classifier::json_kind(&other)
                ),
                "dict_type",
            ));
            Questions::new()
        }
    };

    let assets = match fields.shift_remove("assets") {
        None | Some(Value::Null) => {
            unclaimed_parts(parts, &[], &mut errors);
            Assets::new()
        }
        Some(Value::Object(a)) if a.is_empty() => {
            errors.push(Invalid::new(
                &["assets"],
                "assets must hold at least one asset when given",
                "too_short",
            ));
            Assets::new()
        }
        Some(Value::Object(a)) => read_assets(&a, parts, &mut errors),
        Some(other) => {
            errors.push(Invalid::new(
                &["assets"],
                format!(
                    "assets must be an object of name to asset, not {}",
                    toolnexus::classifier::json_kind(&other)
                ),
                "dict_type",
            ));
            Assets::new()
        }
    };

    if errors.is_empty() {
        Ok(Parsed {
            state,
            questions,
            model,
            assets,
            extra: fields,
        })
    } else {
        Err(errors)
    }
}

/// A library question error's text without `classifier: question "x": `.
fn question_text(key: &str, e: &ClassifierError) -> String {
    let d = e.detail();
    let prefix = format!("question {key:?}: ");
    d.strip_prefix(&prefix).unwrap_or(d).to_string()
}

/// Which field of a question an error is about, from the question and the
/// library's words for it.
fn question_field(q: &Value, text: &str) -> Option<&'static str> {
    let o = q.as_object()?;
    match o.get("type") {
        Some(Value::String(t)) if ["noul", "choice", "score", "box"].contains(&t.as_str()) => {}
        _ => return Some("type"),
    }
    if text.contains("\"instructions\"") {
        Some("instructions")
    } else if text.contains("criteria") || text.contains("option") || text.contains("level") {
        Some("criteria")
    } else if text.contains("\"type\"") {
        Some("type")
    } else {
        None
    }
}

fn read_questions(qs: &Map<String, Value>, errors: &mut Vec<Invalid>) -> Questions {
    let mut out = Questions::new();
    for (key, q) in qs {
        let one = Value::Object(Map::from_iter([(key.clone(), q.clone())]));
        let decoded = questions_from_wire(&one).and_then(|d| validate_questions(&d).map(|()| d));
        match decoded {
            Ok(d) => out.extend(d),
            Err(e) => {
                let text = question_text(key, &e);
                let kind = match question_field(q, &text) {
                    Some("type") if q.get("type").is_none() => "missing",
                    Some("type") => "union_tag_invalid",
                    _ => "value_error",
                };
                let loc: Vec<&str> = match question_field(q, &text) {
                    Some(field) => vec!["questions", key.as_str(), field],
                    None => vec!["questions", key.as_str()],
                };
                errors.push(Invalid::new(&loc, text, kind));
            }
        }
    }
    out
}

/// The image format a part's content type or signature says.
fn part_format(part: &Part) -> Option<ImageFormat> {
    match part.content_type.as_deref() {
        Some("image/png") => Some(ImageFormat::Png),
        Some("image/jpeg" | "image/jpg") => Some(ImageFormat::Jpeg),
        _ => ImageFormat::sniff(&part.data),
    }
}

fn read_assets(a: &Map<String, Value>, parts: &[Part], errors: &mut Vec<Invalid>) -> Assets {
    let mut out = Assets::new();
    let mut claimed: Vec<&str> = Vec::new();
    for (name, entry) in a {
        let part_name = entry.get("part").and_then(Value::as_str);
        let Some(part_name) = part_name else {
            match Asset::from_wire(name, entry) {
                Ok(asset) => {
                    out.insert(name.clone(), asset);
                }
                Err(e) => {
                    let d = e.detail();
                    let prefix = format!("asset {name:?}: ");
                    let text = d.strip_prefix(&prefix).unwrap_or(d);
                    let field = ["format", "data_base64", "type"]
                        .into_iter()
                        .find(|f| text.contains(&format!("\"{f}\"")));
                    let loc: Vec<&str> = match field {
                        Some(f) => vec!["assets", name.as_str(), f],
                        None => vec!["assets", name.as_str()],
                    };
                    errors.push(Invalid::new(&loc, text, "value_error"));
                }
            }
            continue;
        };
        let loc = ["assets", name.as_str(), "part"];
        match entry.get("type") {
            None | Some(Value::Null) => {}
            Some(Value::String(t)) if t == "image" => {}
            Some(other) => {
                errors.push(Invalid::new(
                    &["assets", name.as_str(), "type"],
                    format!("\"type\" is {other}, not \"image\""),
                    "literal_error",
                ));
                continue;
            }
        }
        if parts.is_empty() {
            errors.push(Invalid::new(
                &loc,
                format!("refers to part {part_name:?}, but the request is not multipart/form-data"),
                "value_error",
            ));
            continue;
        }
        if claimed.contains(&part_name) {
            errors.push(Invalid::new(
                &loc,
                format!("part {part_name:?} is already used by another asset"),
                "value_error",
            ));
            continue;
        }
        let Some(part) = parts
            .iter()
            .find(|p| p.name == part_name && p.name != REQUEST_PART)
        else {
            errors.push(Invalid::new(
                &loc,
                format!("the multipart body has no part named {part_name:?}"),
                "value_error",
            ));
            continue;
        };
        claimed.push(part_name);
        if part.data.is_empty() {
            errors.push(Invalid::new(
                &loc,
                format!("part {part_name:?} is empty"),
                "value_error",
            ));
            continue;
        }
        let declared = entry.get("format").and_then(Value::as_str);
        let format = match declared {
            Some(f) => match ImageFormat::from_wire(f) {
                Some(f) => f,
                None => {
                    errors.push(Invalid::new(
                        &["assets", name.as_str(), "format"],
                        format!("\"format\" is {f:?}, not png|jpg|jpeg"),
                        "enum",
                    ));
                    continue;
                }
            },
            None => match part_format(part) {
                Some(f) => f,
                None => {
                    errors.push(Invalid::new(
                        &loc,
                        format!(
                            "part {part_name:?} is not a PNG or JPEG image (by its Content-Type and its bytes); give \"format\""
                        ),
                        "value_error",
                    ));
                    continue;
                }
            },
        };
        out.insert(
            name.clone(),
            Asset {
                format,
                data: part.data.to_vec(),
            },
        );
    }
    unclaimed_parts(parts, &claimed, errors);
    out
}

/// Every image part must be claimed by exactly one asset.
fn unclaimed_parts(parts: &[Part], claimed: &[&str], errors: &mut Vec<Invalid>) {
    for p in parts {
        if p.name != REQUEST_PART && !claimed.contains(&p.name.as_str()) {
            errors.push(Invalid::new(
                &["assets"],
                format!("multipart part {:?} is not used by any asset", p.name),
                "value_error",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Bytes;

    fn locs(r: Result<Parsed, Vec<Invalid>>) -> Vec<(String, String)> {
        r.unwrap_err()
            .into_iter()
            .map(|i| {
                let loc: Vec<String> = i
                    .loc
                    .iter()
                    .map(|v| v.as_str().unwrap().to_string())
                    .collect();
                (loc.join("."), i.kind.to_string())
            })
            .collect()
    }

    fn q() -> Value {
        json!({"spam": {"type": "noul", "instructions": "Spam?"}})
    }

    #[test]
    fn a_full_request_reads_into_its_parts() {
        let p = parse(
            json!({"model": "jev-latest", "state": {"m": 1}, "questions": q(),
                   "assets": {"img": {"type": "image", "format": "png", "data_base64": "aGk="}},
                   "priority": "low"}),
            &[],
        )
        .unwrap();
        assert_eq!(p.model.as_deref(), Some("jev-latest"));
        assert_eq!(p.state, json!({"m": 1}));
        assert_eq!(p.questions.len(), 1);
        assert_eq!(p.assets["img"].data, b"hi");
        assert_eq!(
            p.extra,
            Map::from_iter([("priority".to_string(), json!("low"))])
        );
    }

    #[test]
    fn every_schema_problem_is_listed_with_its_location() {
        assert_eq!(
            locs(parse(json!([1]), &[])),
            [("body".into(), "model_attributes_type".into())]
        );
        assert_eq!(
            locs(parse(json!({"model": 3}), &[])),
            [
                ("body.model".into(), "string_type".into()),
                ("body.state".into(), "missing".into()),
                ("body.questions".into(), "missing".into())
            ]
        );
        assert_eq!(
            locs(parse(json!({"state": 1, "questions": {}}), &[])),
            [
                ("body.state".into(), "state_type".into()),
                ("body.questions".into(), "too_short".into())
            ]
        );
        let bad = json!({"state": "s", "questions": {
            "a": {"type": "vote"},
            "b": {"instructions": "?"},
            "c": {"type": "choice", "criteria": 5},
            "d": {"type": "score", "criteria": ["only"]},
            "e": {"type": "noul", "instructions": 5},
            "f": {"type": "choice", "instructions": "Which?", "criteria": {"x": null}},
        }});
        assert_eq!(
            locs(parse(bad, &[])),
            [
                ("body.questions.a.type".into(), "union_tag_invalid".into()),
                ("body.questions.b.type".into(), "missing".into()),
                ("body.questions.c.criteria".into(), "value_error".into()),
                ("body.questions.d.criteria".into(), "value_error".into()),
                ("body.questions.e.instructions".into(), "value_error".into()),
            ]
        );
    }

    #[test]
    fn question_messages_drop_the_library_prefix() {
        let e = parse(
            json!({"state": "s", "questions": {"x": {"type": "vote"}}}),
            &[],
        )
        .unwrap_err();
        assert_eq!(
            e[0].msg,
            "question has unknown type \"vote\" (want noul|choice|score|box)"
        );
        assert_eq!(
            e[0].wire(),
            json!({"loc": ["body", "questions", "x", "type"], "msg": e[0].msg, "type": "union_tag_invalid"})
        );
    }

    #[test]
    fn bad_assets_are_named() {
        let r = parse(
            json!({"state": "s", "questions": q(), "assets": {
                "a": {"type": "image", "format": "gif", "data_base64": "aGk="},
                "b": {"type": "image", "format": "png", "data_base64": "!!"},
                "c": {"type": "image", "part": "asset-0"},
            }}),
            &[],
        );
        assert_eq!(
            locs(r),
            [
                ("body.assets.a.format".into(), "value_error".into()),
                ("body.assets.b".into(), "value_error".into()),
                ("body.assets.c.part".into(), "value_error".into()),
            ]
        );
        assert_eq!(
            locs(parse(
                json!({"state": "s", "questions": q(), "assets": {}}),
                &[]
            )),
            [("body.assets".into(), "too_short".into())]
        );
    }

    fn part(name: &str, ct: Option<&str>, data: &'static [u8]) -> Part {
        Part {
            name: name.into(),
            content_type: ct.map(str::to_string),
            data: Bytes::from_static(data),
        }
    }

    #[test]
    fn multipart_assets_resolve_to_their_parts() {
        let parts = [
            part("request", Some("application/json"), b"{}"),
            part("asset-0", Some("image/png"), b"\x89PNG\r\n\x1a\nrest"),
            part(
                "asset-1",
                Some("application/octet-stream"),
                b"\xFF\xD8\xFF\xE0jfif",
            ),
        ];
        let p = parse(
            json!({"state": "s", "questions": q(), "assets": {
                "<image:0>": {"type": "image", "part": "asset-0"},
                "<image:1>": {"type": "image", "part": "asset-1"},
            }}),
            &parts,
        )
        .unwrap();
        assert_eq!(p.assets["<image:0>"].format, ImageFormat::Png);
        assert_eq!(p.assets["<image:0>"].data, b"\x89PNG\r\n\x1a\nrest");
        assert_eq!(p.assets["<image:1>"].format, ImageFormat::Jpeg);
    }

    #[test]
    fn multipart_parts_must_be_claimed_once_and_exist() {
        let parts = [
            part("asset-0", Some("image/png"), b"\x89PNG\r\n\x1a\n"),
            part("asset-1", None, b"not an image"),
            part("asset-2", Some("image/png"), b"\x89PNG\r\n\x1a\n"),
        ];
        let r = parse(
            json!({"state": "s", "questions": q(), "assets": {
                "a": {"type": "image", "part": "asset-0"},
                "b": {"type": "image", "part": "asset-0"},
                "c": {"type": "image", "part": "asset-1"},
                "d": {"type": "image", "part": "asset-9"},
            }}),
            &parts,
        );
        assert_eq!(
            locs(r),
            [
                ("body.assets.b.part".into(), "value_error".into()),
                ("body.assets.c.part".into(), "value_error".into()),
                ("body.assets.d.part".into(), "value_error".into()),
                ("body.assets".into(), "value_error".into()),
            ]
        );
    }
}
