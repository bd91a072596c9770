//! The lint rules: stable ids, severities, one-line rationales tied to the
//! failure modes of judgment models (SPEC §20), and the long explanations.
//! An id is never reused or renumbered; a rule that goes away leaves a gap.

/// How much a finding matters. Errors fail a check; warnings fail it when
/// the caller is strict; infos never do ([`Report::failed`](super::Report::failed)).
///
/// ```
/// use toolnexus::lint::Severity;
/// assert!(Severity::Error > Severity::Warning && Severity::Warning > Severity::Info);
/// assert_eq!(Severity::Warning.as_str(), "warning");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Worth knowing; never fails a check.
    Info,
    /// Likely wrong; fails a strict check.
    Warning,
    /// Wrong; fails every check.
    Error,
}

impl Severity {
    /// `info`, `warning` or `error`.
    ///
    /// ```
    /// assert_eq!(toolnexus::lint::Severity::Info.as_str(), "info");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One rule.
///
/// ```
/// let r = &toolnexus::lint::RULES[0];
/// assert_eq!((r.id, r.name), ("TNL001", "empty-text"));
/// assert!(r.explain.contains("Fix:"));
/// ```
#[derive(Debug)]
pub struct Rule {
    /// The stable id, `TNL001`…: never renumbered or reused.
    pub id: &'static str,
    /// A short name in kebab case (`empty-text`).
    pub name: &'static str,
    /// How much a finding of it matters.
    pub severity: Severity,
    /// What goes wrong, in one line.
    pub rationale: &'static str,
    /// What goes wrong, a bad and a good example, how to fix it.
    pub explain: &'static str,
}

/// The cosine similarity at or above which two option descriptions are
/// reported as near-duplicates (TNL005), on all-MiniLM-L6-v2 embeddings.
pub const SIMILAR_CUT: f32 = 0.90;

/// Tokens a request may hold (its questions and its state; TNL012).
pub const REQUEST_TOKENS: usize = 65_536;

/// Tokens the longest question and the state may hold together (TNL012,
/// TNL013).
pub const QUESTION_TOKENS: usize = 32_768;

pub const EMPTY_TEXT: &Rule = &RULES[0];
pub const NAME_ONLY: &Rule = &RULES[1];
pub const DEGENERATE_CHOICE: &Rule = &RULES[2];
pub const DUPLICATE: &Rule = &RULES[3];
pub const SIMILAR: &Rule = &RULES[4];
pub const NUMERIC: &Rule = &RULES[5];
pub const NEGATED: &Rule = &RULES[6];
pub const COMPOUND: &Rule = &RULES[7];
pub const NO_WAY_OUT: &Rule = &RULES[8];
pub const SCORE_ORDER: &Rule = &RULES[9];
pub const TWO_THINGS: &Rule = &RULES[10];
pub const OVER_BUDGET: &Rule = &RULES[11];
pub const TIGHT_BUDGET: &Rule = &RULES[12];
pub const BIDI_CONTROL: &Rule = &RULES[13];
pub const ZERO_WIDTH: &Rule = &RULES[14];
pub const LOOK_ALIKE_KEYS: &Rule = &RULES[15];

/// Every rule, in id order.
///
/// ```
/// let ids: Vec<&str> = toolnexus::lint::RULES.iter().map(|r| r.id).collect();
/// assert_eq!(ids[4], "TNL005");
/// ```
pub static RULES: [Rule; 16] = [
    Rule {
        id: "TNL001",
        name: "empty-text",
        severity: Severity::Error,
        rationale: "empty instructions, option description, score level or noul meaning: the model has nothing to judge by",
        explain: "\
The model reads only the text of a question: its instructions and what each
outcome means. An empty instructions field, an empty option description, an
empty score level, or a noul criteria object whose \"true\" or \"false\" is \"\"
leaves it guessing, and the guess looks as confident as an informed answer.
(A noul with no criteria at all is fine: absent is not empty.)

Bad:
  \"refund\": {\"type\": \"noul\", \"instructions\": \"Does the customer want money back?\",
             \"criteria\": {\"true\": \"\", \"false\": \"\"}}

Good:
  \"refund\": {\"type\": \"noul\", \"instructions\": \"Does the customer want money back?\",
             \"criteria\": {\"true\": \"they ask for a refund or a chargeback\",
                          \"false\": \"anything else\"}}

Fix: write what the text should mean, or drop the empty criteria object.",
    },
    Rule {
        id: "TNL002",
        name: "name-only",
        severity: Severity::Warning,
        rationale: "an option described only by its name (null, or its id repeated): the model guesses what the name means",
        explain: "\
An option id is a key for your code; its description is what the model
judges against. A null description, or one that repeats the id (\"billing\":
\"Billing\"), leaves the meaning to the model's reading of one word, which
differs between models and drifts between versions.

Bad:
  \"criteria\": {\"billing\": \"billing\", \"shipping\": null}

Good:
  \"criteria\": {\"billing\": \"money moved: a double charge, a refund owed, an invoice\",
               \"shipping\": \"a physical parcel is late, lost or damaged\"}

Fix: say what picking the option would mean, in a phrase the state can be
checked against.",
    },
    Rule {
        id: "TNL003",
        name: "degenerate-choice",
        severity: Severity::Error,
        rationale: "a choice whose options cannot be told apart (all unnamed, empty, ids only or identical) or that has one option: the answer carries no information",
        explain: "\
A choice's descriptions are the only thing that tells its options apart. When
every option lacks a description, every description is empty or just its own
id, or every description is the same, the distribution the model returns
follows option order and wording noise, not the state. A choice of a single
option always answers it. (The library warns on the first kinds at run time;
lint says so before you spend.)

Bad:
  \"criteria\": {\"yes\": \"yes\", \"no\": \"no\"}
  \"criteria\": {\"only\": \"the one option\"}

Good:
  \"criteria\": {\"yes\": \"the customer agreed to the offer\",
               \"no\": \"they declined it, or did not answer it\"}

Fix: describe each option; a question with one outcome is a noul.",
    },
    Rule {
        id: "TNL004",
        name: "duplicate-descriptions",
        severity: Severity::Error,
        rationale: "two options with the same description (ignoring case, spaces and punctuation): the model splits its probability between them",
        explain: "\
Two options described by the same text are the same option to the model: its
probability is shared between them by order and chance, so neither answer, nor
the confidence, means anything. Often a copy-paste slip.

Bad:
  \"criteria\": {\"refund\": \"Money moved.\", \"chargeback\": \"money moved\"}

Good:
  \"criteria\": {\"refund\": \"the customer asks us to return money\",
               \"chargeback\": \"the customer's bank reversed a payment\"}

Fix: write what sets each option apart, or merge them into one option.",
    },
    Rule {
        id: "TNL005",
        name: "similar-descriptions",
        severity: Severity::Warning,
        rationale: "two option descriptions that mean nearly the same (embedded model, cosine >= 0.90): the model cannot tell them apart reliably",
        explain: "\
Options worded differently but meaning the same thing split the model's
probability as exact duplicates do (TNL004), only less visibly. This check
embeds every option description with the embedded model (all-MiniLM-L6-v2)
and reports pairs of one choice whose cosine similarity is 0.90 or more. The
cut is high on purpose: on this model, distinct options in one frame (\"the
ticket is about the login page\" / \"... the signup page\", \"the review is
positive\" / \"... negative\") score about 0.87, so the check finds rewordings
that keep most of the words and misses paraphrases in other words. A pair
told apart by a negation (one says \"not\", the other does not) is never
reported: embeddings barely see negation. It needs the model: fetch it with
`toolnexus model fetch`, or point --model-dir or $TOOLNEXUS_MODEL_DIR at it;
without one the check is skipped and lint says so.

Bad:
  \"criteria\": {\"cancel\": \"the customer wants to cancel the subscription\",
               \"end\": \"the customer wants to cancel their subscription plan\"}

Good:
  \"criteria\": {\"late\": \"the parcel has not arrived by its promised date\",
               \"lost\": \"the carrier says the parcel cannot be found\"}

Fix: name the difference that matters in both descriptions, or merge them.",
    },
    Rule {
        id: "TNL006",
        name: "numeric-threshold",
        severity: Severity::Warning,
        rationale: "a number to compare or compute in the text (\"more than 3\", \"> 50%\", \"at least 10 items\"): judgment models misjudge counts and arithmetic; do them in code",
        explain: "\
Judgment models read meaning; they count, add and compare numbers badly and
inconsistently, and a threshold tuned on one model does not transfer to
another. A question that hinges on \"more than 3 items\" or \"over 50%\"
returns a confident answer that is wrong near the boundary. Matched: a
comparison (more/less/fewer/greater/higher/lower than, at least, at most, up
to, over, under, above, below, exceeds, within, between) before a number;
>, <, >=, <=, the signs ≥ and ≤ before a number; a percentage; \"3 or more\",
\"10+\"; and arithmetic words (sum of, average of, divided by, ...).

Bad:
  \"bulk\": {\"type\": \"noul\", \"instructions\": \"Does the order have more than 3 items?\"}

Good:
  count the items in code: if order.items.len() > 3 { ... }
  and ask the model only what code cannot see:
  \"bulk\": {\"type\": \"noul\", \"instructions\": \"Is this a wholesale order rather than a personal one?\"}

Fix: compute the number in your code and compare it there; keep the model for
what needs reading.",
    },
    Rule {
        id: "TNL007",
        name: "negated-statement",
        severity: Severity::Warning,
        rationale: "a negated noul (\"not\", \"never\", \"no\", \"neither … nor\"): models often answer the statement without its negation",
        explain: "\
A noul's number is the probability that its statement holds. Negations
(not, n't, never, no, none, nothing, nobody, neither, nor, cannot) are easy
for a model to drop: \"the customer did not ask for a refund\" gets the
probability of \"asked for a refund\", and the error is invisible in the
output. A negated noul also has an awkward \"false\" (a double negative).

Bad:
  \"instructions\": \"The customer did not ask for a refund.\"

Good:
  \"instructions\": \"The customer asked for a refund.\"   (and use 1 - p in code)

Fix: state the positive claim and negate in your code.",
    },
    Rule {
        id: "TNL008",
        name: "compound-statement",
        severity: Severity::Warning,
        rationale: "a noul joining two claims (\"… and does it …\", \"… or is it …\", \"and/or\"): one probability cannot say which claim held",
        explain: "\
A noul gives one probability for one statement. \"Is it spam and does it
mention a refund?\" mixes two: a state where one holds gets a middle number
that is neither's probability, and thresholds on it mean nothing. Matched:
\"and\", \"or\" or \"and/or\" followed by the start of a second clause (a verb
such as is, does, has, can, will, or a subject such as it, they, there,
we, you). A list inside one claim (\"delete, overwrite or move files\") is not
matched.

Bad:
  \"instructions\": \"Is the customer angry and do they want a refund?\"

Good:
  \"angry\":  {\"type\": \"noul\", \"instructions\": \"Is the customer angry?\"},
  \"refund\": {\"type\": \"noul\", \"instructions\": \"Does the customer want a refund?\"}

Fix: one claim per noul; combine the numbers in code.",
    },
    Rule {
        id: "TNL009",
        name: "no-way-out",
        severity: Severity::Info,
        rationale: "a choice with no way out (no other/unclear/none option): an input outside the options is forced into one of them",
        explain: "\
A choice always picks one of its options. When an input fits none of them
(spam to a support desk, an empty message, another language), the model
still picks one, often with high confidence. Matched as a way out: an option
id with a word such as other, unclear, unknown, none, neither, unsure,
ambiguous, misc, unrelated (or n/a, out_of_scope, off_topic), or a description
saying \"anything else\", \"none of the above\", \"does not fit\", \"out of
scope\", \"not clear\". Info only: when inputs cannot be out of scope, no
way out is needed.

Bad:
  \"criteria\": {\"billing\": \"money moved\", \"shipping\": \"a parcel is late\"}

Good:
  \"criteria\": {\"billing\": \"money moved\", \"shipping\": \"a parcel is late\",
               \"other\": \"anything else, or not clear from the message\"}

Fix: add an option for inputs that fit none of the others, and handle it.",
    },
    Rule {
        id: "TNL010",
        name: "score-not-ordered",
        severity: Severity::Warning,
        rationale: "score levels that are not one ordered dimension (repeated, two scales mixed, out of order, highest first): the expected level means nothing",
        explain: "\
A score's answer is an expected level, lowest first: level 0 is criteria[0].
That average means something only when the levels lie on one dimension in
increasing order. Matched, by simple heuristics: a level repeated (ignoring
case, spaces and punctuation); levels whose scale words (the level's leading
label such as \"high:\", else its first scale word) come from different
scales: degree (none, minimal, low, small, some, moderate, medium, high,
large, severe, critical ...), frequency (never, rarely, sometimes, often,
always), likelihood (impossible, unlikely, possible, likely, certain) or
quality (terrible, poor, fair, good, excellent); and levels on one scale
that run highest first or go up and down.

Bad:
  \"criteria\": [\"high\", \"medium\", \"low\"]            (highest first)
  \"criteria\": [\"rarely\", \"low\", \"often\", \"severe\"] (two scales)

Good:
  \"criteria\": [\"low: a cosmetic issue\", \"medium: a feature is impaired\",
               \"high: data is lost or the service is down\"]

Fix: one dimension, lowest first; split a second dimension into its own question.",
    },
    Rule {
        id: "TNL011",
        name: "two-questions",
        severity: Severity::Warning,
        rationale: "instructions that ask two things (two question marks, \"and also\", \"as well as\"): the answer is to one of them, and you cannot tell which",
        explain: "\
Each question gets one answer. Instructions that ask two things (\"What is the
topic? How urgent is it?\", \"... and also whether ...\") get an answer to
one of them, or a blend, and nothing in the decision says which. Matched: two
or more question marks; \"and also\", \"as well as\", \"additionally\", \"in
addition\", \"and whether\", \"and if\", \"or whether\".

Bad:
  \"instructions\": \"Which team owns this? Is it urgent?\"

Good:
  \"team\":    {\"type\": \"choice\", \"instructions\": \"Which team owns this?\", ...},
  \"urgency\": {\"type\": \"score\", \"instructions\": \"How urgent is it?\", ...}

Fix: one question per key; the questions of a set are answered together, in
one request.",
    },
    Rule {
        id: "TNL012",
        name: "over-token-budget",
        severity: Severity::Error,
        rationale: "a question set over the request budget (64k tokens a request; 32k for the longest question and its state), estimated at 4 bytes a token",
        explain: "\
System One backends take at most 65,536 tokens a request, and at most 32,768
for the longest question together with the state. Lint estimates each
question's share as its wire JSON's bytes / 4 (as the library's rate limiter
does), so the figures are estimates. A set over 64k, or one question over
32k, cannot be sent with any state at all.

Bad:
  a choice of 255 options each with a page of description.

Good:
  short descriptions that say what sets each option apart; long reference
  text belongs in the state, or in code that picks the relevant part.

Fix: shorten the question or split it into several questions or requests.",
    },
    Rule {
        id: "TNL013",
        name: "tight-token-budget",
        severity: Severity::Warning,
        rationale: "a question that takes more than half of the 32k tokens it shares with the state: a long state will not fit",
        explain: "\
The longest question and the state share 32,768 tokens. Lint cannot know your
states, so it reports the question's part (estimated at 4 bytes a token)
when it is more than half of that, and the room left for a state; a state
longer than that room is refused by the backend at run time, after you
started a batch.

Bad:
  a noul whose instructions paste a 70 KB policy document.

Good:
  the policy's relevant clause in the instructions; the rest in code.

Fix: shorten the question, or keep your states below the room reported.",
    },
    Rule {
        id: "TNL014",
        name: "bidi-control",
        severity: Severity::Error,
        rationale: "a direction control (U+200E, U+200F, U+202A..U+202E, U+2066..U+2069) in a key or text: what a reviewer sees is not what the model reads",
        explain: "\
Direction controls reorder how text is displayed without changing what it
is. In a question they let a file read one way in an editor or a review and
another way to the model (the \"Trojan Source\" trick), and in a key they
make two different keys look the same. Lint reports each one by its code
point and name, at the character.

Bad:
  \"refund\": {\"type\": \"noul\",
             \"instructions\": \"Does the customer ask for money back?\\u202e ton\"}

Good:
  \"refund\": {\"type\": \"noul\", \"instructions\": \"Does the customer ask for money back?\"}

Fix: delete the character (text in a right-to-left script needs none of
them: the script's own direction is applied without controls).",
    },
    Rule {
        id: "TNL015",
        name: "zero-width",
        severity: Severity::Warning,
        rationale: "an invisible character (U+200B..U+200D, U+2060, U+FEFF) in a key or text: it splits or joins words the reader cannot see",
        explain: "\
Zero-width spaces and joiners, the word joiner and a byte-order mark inside
a text are invisible. They split a word the model then reads as two tokens,
make a key differ from the one your code asks for while looking the same,
and survive copy and paste from web pages and chat tools. (A byte-order
mark at the very start of the file is read and skipped, not reported.)

Bad:
  \"ur\\u200bgency\": {\"type\": \"score\", \"instructions\": \"How urgent is it?\", ...}

Good:
  \"urgency\": {\"type\": \"score\", \"instructions\": \"How urgent is it?\", ...}

Fix: delete the character. A joiner a script needs (U+200C and U+200D in
Persian or Indic text, emoji sequences) can stay: this is a warning.",
    },
    Rule {
        id: "TNL016",
        name: "look-alike-keys",
        severity: Severity::Warning,
        rationale: "two question keys, or two options of a choice, that differ only in case, separators or look-alike characters",
        explain: "\
Keys are compared exactly: \"refund_requested\" and \"refund-requested\",
\"Billing\" and \"billing\", or \"spam\" with a Cyrillic \"а\" and \"spam\" are
different keys that look the same. Code that reads one gets no answer or
the other's, and a model shown two look-alike options cannot tell them
apart by name. Lint compares keys with case, `_`, `-`, `.` and spaces,
invisible characters, full-width forms and common Cyrillic and Greek
look-alikes of Latin letters left out.

Bad:
  \"criteria\": {\"billing\": \"money moved\", \"Billing\": \"an invoice question\"}

Good:
  \"criteria\": {\"billing\": \"money moved\", \"invoices\": \"an invoice question\"}

Fix: rename one of them so the two differ in a way a reader sees.",
    },
];

/// The rule with this id (any case), if there is one.
///
/// ```
/// let r = toolnexus::lint::find("tnl006").unwrap();
/// assert_eq!(r.name, "numeric-threshold");
/// assert!(toolnexus::lint::find("TNL999").is_none());
/// ```
pub fn find(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id.eq_ignore_ascii_case(id.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_numbered_and_named_once() {
        for (i, r) in RULES.iter().enumerate() {
            assert_eq!(r.id, format!("TNL{:03}", i + 1));
            assert!(!r.rationale.contains('\n'), "{}: one line", r.id);
            assert!(
                r.explain.contains("Bad:")
                    && r.explain.contains("Good:")
                    && r.explain.contains("Fix:"),
                "{}",
                r.id
            );
        }
        assert_eq!(find("tnl006").map(|r| r.name), Some("numeric-threshold"));
        assert!(find("TNL999").is_none());
        assert_eq!(SIMILAR.id, "TNL005");
        assert_eq!(TIGHT_BUDGET.id, "TNL013");
        assert_eq!(LOOK_ALIKE_KEYS.id, "TNL016");
    }
}
