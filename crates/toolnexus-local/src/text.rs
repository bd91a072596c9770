//! Where a text may be cut before tokenisation without changing what a
//! model reads of it: the cut rule worked out from a tokenizer once, the
//! probe that finds the shortest prefix holding every token the model reads,
//! and the plain string cuts under it (char boundaries, long runs of letters
//! and digits). The embedder and the checkpoint encoders stand on this leaf;
//! it stands on nothing of theirs.

use std::borrow::Cow;
use std::sync::OnceLock;

use tokenizers::{PostProcessor, Tokenizer};

use crate::error::{LocalError, msg};

/// Where a text may be cut before tokenisation without changing what the
/// model reads.
#[derive(Debug, Clone, Copy)]
struct CutRule {
    /// The first window tried, in bytes: [`MAX_TOKENS`](crate::MAX_TOKENS) × (the longest token of
    /// the vocabulary in bytes + 1). A token covers at most that many bytes of
    /// ordinary text, separator included (18 + 1 for all-MiniLM-L6-v2's
    /// "telecommunications", so 4,864 bytes), so the window usually holds every
    /// token the model reads. It is only a first guess: whitespace runs,
    /// characters the normaliser drops and words past WordPiece's 100-character
    /// limit (one `[UNK]` each) cover more bytes per token. The probe checks
    /// the window and doubles it until it holds every token the model reads,
    /// so text the model would have used is never cut.
    window: usize,
    /// Tokens of the text itself the model reads: the limit less the special
    /// tokens (`[CLS]`, `[SEP]`) the template adds.
    content: usize,
    /// Bytes before a cut that may still change: an added token (`[MASK]`)
    /// matched in the raw text can straddle the cut.
    guard: usize,
    /// Runs of ASCII letters and digits longer than this are shortened to it
    /// before tokenisation; `None` when this tokenizer cannot be shown to read
    /// them the same (see [`long_words`]).
    long_words: Option<usize>,
}

/// The tokenizer an encoder reads with, the probe (the same tokenizer
/// without truncation) and the cut rule: what the embedder asks where a long
/// text can be cut.
pub(crate) struct Cutter {
    /// The tokenizer the model's input is encoded with (truncating at
    /// `max_tokens`, no padding).
    tokenizer: Tokenizer,
    /// The probe: made from `tokenizer` the first time a text is long
    /// enough to need it (most never are), since copying a tokenizer costs
    /// about as much as a short text's forward pass.
    probe: OnceLock<Tokenizer>,
    rule: CutRule,
    /// The longest text handed to the tokenizer so far, in bytes.
    #[cfg(test)]
    largest_input: std::sync::atomic::AtomicUsize,
}

impl Cutter {
    /// The cutter for `tokenizer`, which truncates at `max_tokens` and pads
    /// nothing. `longest`: the longest token of its vocabulary, added tokens
    /// included, as [`longest_token`] counts it, when the caller already
    /// knows it (else it is worked out here, which copies the vocabulary).
    pub(crate) fn new(tokenizer: Tokenizer, max_tokens: usize, longest: Option<usize>) -> Cutter {
        let rule = cut_rule(&tokenizer, max_tokens, longest);
        Cutter {
            tokenizer,
            probe: OnceLock::new(),
            rule,
            #[cfg(test)]
            largest_input: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// The tokenizer the model's input is encoded with.
    pub(crate) fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The probe: the tokenizer without truncation, made on first use.
    fn probe(&self) -> Result<&Tokenizer, LocalError> {
        if let Some(p) = self.probe.get() {
            return Ok(p);
        }
        let mut probe = self.tokenizer.clone();
        probe.with_truncation(None).map_err(msg::tokenize)?;
        // Two threads may both make one; the first stored is kept.
        Ok(self.probe.get_or_init(|| probe))
    }

    /// Whether the probe has been made (tests only).
    #[cfg(test)]
    pub(crate) fn has_probe(&self) -> bool {
        self.probe.get().is_some()
    }

    /// The part of `text` the model reads (see `Embedder::read_part`).
    pub(crate) fn read_part<'t>(&self, text: &'t str) -> Result<&'t str, LocalError> {
        let n = self.prefix_len(text, false)?.unwrap_or(text.len());
        Ok(&text[..n])
    }

    /// What the embedder tokenises of `text`: [`read_part`](Cutter::read_part)'s
    /// prefix, with runs of ASCII letters and digits past WordPiece's word
    /// limit shortened (see [`long_words`]), which leaves the token ids as
    /// they are. The text is read in parts growing fourfold, so a hex string of
    /// megabytes is scanned, never tokenised whole.
    pub(crate) fn readable<'t>(&self, text: &'t str) -> Result<Cow<'t, str>, LocalError> {
        let Some(keep) = self.rule.long_words else {
            return self.read_part(text).map(Cow::Borrowed);
        };
        let mut budget = self.first_window();
        loop {
            let end = floor_char_boundary(text, budget);
            let complete = end == text.len();
            if let Some(read) = self.settled(shorten_long_runs(&text[..end], keep), !complete)? {
                return Ok(read);
            }
            budget = budget.saturating_mul(4);
        }
    }

    /// `part` (of a longer text when `truncated`) cut where
    /// [`prefix_len`](Cutter::prefix_len) says, or `None` when more of the
    /// text is needed.
    pub(crate) fn settled<'t>(
        &self,
        part: Cow<'t, str>,
        truncated: bool,
    ) -> Result<Option<Cow<'t, str>>, LocalError> {
        let Some(n) = self.prefix_len(&part, truncated)? else {
            return Ok(None);
        };
        Ok(Some(match part {
            Cow::Borrowed(p) => Cow::Borrowed(&p[..n]),
            Cow::Owned(mut p) => {
                p.truncate(n);
                Cow::Owned(p)
            }
        }))
    }

    /// Runs of ASCII letters and digits longer than this read as they do at
    /// this length (see [`long_words`]); `None` when the tokenizer gives no
    /// such guarantee.
    pub(crate) fn long_words(&self) -> Option<usize> {
        self.rule.long_words
    }

    /// Where `text` may be cut: the length of a prefix holding every token the
    /// model reads of it. `truncated` says that `text` is itself only the start
    /// of a longer text (a state being written out piece by piece); then
    /// `None` means more of it is needed.
    ///
    /// Windows of [`CutRule::window`] bytes, doubling, are tokenised without
    /// truncation until one holds [`CutRule::content`] settled tokens: tokens
    /// of words that end inside the window (the BERT pre-tokeniser splits at
    /// whitespace and punctuation and the normaliser works character by
    /// character, so a word that ends inside the window has the tokens it has
    /// in the whole text) and at least [`CutRule::guard`] bytes before its
    /// end. A tokenizer that reports no word ids never settles, and the whole
    /// text is read.
    pub(crate) fn prefix_len(
        &self,
        text: &str,
        truncated: bool,
    ) -> Result<Option<usize>, LocalError> {
        let rule = self.rule;
        let mut window = rule.window;
        loop {
            let last = window >= text.len();
            if last && !truncated {
                return Ok(Some(text.len()));
            }
            let cut = floor_char_boundary(text, window.min(text.len()));
            let probe = &text[..cut];
            self.note_inputs(&[probe]);
            let e = self.probe()?.encode(probe, false).map_err(msg::tokenize)?;
            let words = e.get_word_ids();
            let last_word = words.last().copied().flatten();
            let limit = cut.saturating_sub(rule.guard);
            let settled = words
                .iter()
                .zip(e.get_offsets())
                .take_while(|(w, (_, end))| {
                    w.is_some_and(|w| Some(w) != last_word) && *end <= limit
                })
                .count();
            if settled >= rule.content {
                return Ok(Some(cut));
            }
            if last {
                return Ok(None);
            }
            window = window.saturating_mul(2);
        }
    }

    /// The first window [`prefix_len`](Cutter::prefix_len) tries, in bytes.
    pub(crate) fn first_window(&self) -> usize {
        self.rule.window
    }

    /// Records the longest tokenizer input (tests only).
    #[cfg(test)]
    pub(crate) fn note_inputs(&self, texts: &[&str]) {
        let longest = texts.iter().map(|t| t.len()).max().unwrap_or(0);
        self.largest_input
            .fetch_max(longest, std::sync::atomic::Ordering::Relaxed);
    }

    /// Records nothing outside tests.
    #[cfg(not(test))]
    #[inline]
    pub(crate) fn note_inputs(&self, _texts: &[&str]) {}

    /// The longest text handed to the tokenizer so far, in bytes (tests only).
    #[cfg(test)]
    pub(crate) fn largest_input(&self) -> usize {
        self.largest_input
            .load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The longest of `tokens` in bytes, a leading `##` (WordPiece's mark of a
/// word's continuation) not counted; at least 1.
pub(crate) fn longest_token<'a>(tokens: impl Iterator<Item = &'a str>) -> usize {
    tokens
        .map(|t| t.strip_prefix("##").unwrap_or(t).len())
        .max()
        .unwrap_or(1)
        .max(1)
}

/// The cut rule of a tokenizer read at most `max_tokens` at a time, whose
/// longest token is `longest` when known.
fn cut_rule(tokenizer: &Tokenizer, max_tokens: usize, longest: Option<usize>) -> CutRule {
    let longest = longest.unwrap_or_else(|| {
        let vocab = tokenizer.get_vocab(true);
        longest_token(vocab.keys().map(String::as_str))
    });
    let guard = tokenizer
        .get_added_tokens_decoder()
        .values()
        .map(|t| t.content.len())
        .max()
        .unwrap_or(0);
    let special = tokenizer
        .get_post_processor()
        .map_or(0, |p| p.added_tokens(false));
    CutRule {
        window: max_tokens.saturating_mul(longest + 1),
        content: max_tokens.saturating_sub(special).max(1),
        guard,
        long_words: long_words(tokenizer),
    }
}

/// The length past which a run of ASCII letters and digits reads as it does
/// at that length: one word too long for WordPiece, one `[UNK]`. That holds
/// when the model is WordPiece (a word over `max_input_chars_per_word`
/// characters is a single unknown token), the normaliser is BERT's or none
/// (it maps ASCII letters and digits one to one and never splits a run), the
/// pre-tokeniser is BERT's (it splits at whitespace and punctuation only, so
/// a run lies inside one word), and no added token is made of letters and
/// digits alone (one could be matched inside a run). Shortening such a run
/// to this length (one more than the limit) leaves its word over the limit,
/// so the token ids are the same, and a multi-megabyte hex string costs what
/// a short one does.
fn long_words(tokenizer: &Tokenizer) -> Option<usize> {
    use tokenizers::models::ModelWrapper;
    use tokenizers::normalizers::NormalizerWrapper;
    use tokenizers::pre_tokenizers::PreTokenizerWrapper;
    let ModelWrapper::WordPiece(wp) = tokenizer.get_model() else {
        return None;
    };
    let bert_normaliser = matches!(
        tokenizer.get_normalizer(),
        None | Some(NormalizerWrapper::BertNormalizer(_))
    );
    let bert_words = matches!(
        tokenizer.get_pre_tokenizer(),
        Some(PreTokenizerWrapper::BertPreTokenizer(_))
    );
    let added_apart = tokenizer
        .get_added_tokens_decoder()
        .values()
        .all(|t| !t.content.bytes().all(|b| b.is_ascii_alphanumeric()));
    (bert_normaliser && bert_words && added_apart).then(|| wp.max_input_chars_per_word + 1)
}

/// `text` with every run of ASCII letters and digits longer than `keep` cut
/// to its first `keep` bytes; borrowed when there is none.
pub(crate) fn shorten_long_runs(text: &str, keep: usize) -> Cow<'_, str> {
    let b = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_alphanumeric() {
            i += 1;
        }
        if i - start > keep {
            // ASCII bytes: every index here is a char boundary.
            let o = out.get_or_insert_with(String::new);
            o.push_str(&text[copied..start + keep]);
            copied = i;
        }
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut o) => {
            o.push_str(&text[copied..]);
            Cow::Owned(o)
        }
    }
}

/// The largest char boundary of `s` at or below `at`.
pub(crate) fn floor_char_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}
