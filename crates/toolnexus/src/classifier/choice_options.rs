//! [`ChoiceOptions`]: a choice's options in the order the caller gave them.
//!
//! Models read option order (SPEC §16: one published choice moved from 0.43 to
//! 0.63 when its options were reversed), so the order the caller wrote is what
//! every style sends: the System One body, the Llm prompt, the local styles'
//! option lists. Identity is another matter: canonical JSON (Static keys,
//! tapes, cache keys, question hashes) sorts option ids, so one question in
//! two orders is one recording and one cache entry.

use std::collections::BTreeMap;

use super::content::Content;

/// Option id → what picking it would mean (`None`: the option is read by its
/// name), in insertion order. Ids are unique: inserting an id again replaces
/// its meaning where it stands.
///
/// It reads like the map it used to be — `get`, `contains_key`, `keys`,
/// `values`, `iter`, `len`, indexing by id — and is built from pairs, an
/// array of pairs or a `BTreeMap` (which gives the ids' sorted order).
///
/// ```
/// use toolnexus::classifier::{ChoiceOptions, Content};
///
/// let mut o: ChoiceOptions = [
///     ("shipping".to_string(), Some(Content::from("a parcel"))),
///     ("billing".to_string(), Some(Content::from("money moved"))),
/// ]
/// .into();
/// o.insert("other".into(), None);
/// assert_eq!(o.keys().collect::<Vec<_>>(), ["shipping", "billing", "other"]);
/// assert_eq!(o["billing"].as_ref().unwrap(), "money moved");
/// assert!(o.contains_key("other") && !o.contains_key("legal"));
/// // Again: replaced in place, the order kept.
/// o.insert("shipping".into(), Some("a lost parcel".into()));
/// assert_eq!(o.keys().next().map(String::as_str), Some("shipping"));
/// assert_eq!(o.len(), 3);
/// // Equal as maps: order is what is sent, not what a question is.
/// let reversed: ChoiceOptions = o.clone().into_iter().rev().collect();
/// assert_eq!(reversed, o);
/// ```
///
/// Equality is a map's: the same ids with the same meanings, whatever their
/// order — as canonical JSON, the identity of a question, sees it (a question
/// read back from a tape, which stores the canonical form, equals the one
/// recorded).
#[derive(Debug, Clone, Default)]
pub struct ChoiceOptions {
    entries: Vec<(String, Option<Content>)>,
}

impl ChoiceOptions {
    /// No options.
    pub fn new() -> ChoiceOptions {
        ChoiceOptions::default()
    }

    /// How many options.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds `id` at the end, or replaces its meaning where it stands; returns
    /// the meaning it replaced.
    pub fn insert(&mut self, id: String, meaning: Option<Content>) -> Option<Option<Content>> {
        match self.entries.iter_mut().find(|(k, _)| *k == id) {
            Some((_, m)) => Some(std::mem::replace(m, meaning)),
            None => {
                self.entries.push((id, meaning));
                None
            }
        }
    }

    /// The meaning of `id`, if it is an option.
    pub fn get(&self, id: &str) -> Option<&Option<Content>> {
        self.entries.iter().find(|(k, _)| k == id).map(|(_, m)| m)
    }

    /// Whether `id` is an option.
    pub fn contains_key(&self, id: &str) -> bool {
        self.entries.iter().any(|(k, _)| k == id)
    }

    /// Where `id` stands (0 for the first option).
    pub fn position(&self, id: &str) -> Option<usize> {
        self.entries.iter().position(|(k, _)| k == id)
    }

    /// The ids, in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &String> + ExactSizeIterator + Clone {
        self.entries.iter().map(|(k, _)| k)
    }

    /// The meanings, in order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Option<Content>> + ExactSizeIterator {
        self.entries.iter().map(|(_, m)| m)
    }

    /// `(id, meaning)` pairs, in order.
    pub fn iter(
        &self,
    ) -> impl DoubleEndedIterator<Item = (&String, &Option<Content>)> + ExactSizeIterator {
        self.entries.iter().map(|(k, m)| (k, m))
    }

    /// The options sorted by id: the order canonical JSON writes them in.
    pub fn sorted(&self) -> Vec<(&String, &Option<Content>)> {
        let mut v: Vec<_> = self.iter().collect();
        v.sort_unstable_by(|a, b| a.0.cmp(b.0));
        v
    }
}

impl PartialEq for ChoiceOptions {
    fn eq(&self, other: &ChoiceOptions) -> bool {
        self.len() == other.len() && self.iter().all(|(id, m)| other.get(id) == Some(m))
    }
}

impl Eq for ChoiceOptions {}

impl std::ops::Index<&str> for ChoiceOptions {
    type Output = Option<Content>;

    /// The meaning of `id`; panics when `id` is not an option, as a map does.
    fn index(&self, id: &str) -> &Option<Content> {
        match self.get(id) {
            Some(m) => m,
            None => panic!("no option {id:?} in this choice"),
        }
    }
}

impl FromIterator<(String, Option<Content>)> for ChoiceOptions {
    fn from_iter<I: IntoIterator<Item = (String, Option<Content>)>>(iter: I) -> ChoiceOptions {
        let mut o = ChoiceOptions::new();
        o.extend(iter);
        o
    }
}

impl Extend<(String, Option<Content>)> for ChoiceOptions {
    fn extend<I: IntoIterator<Item = (String, Option<Content>)>>(&mut self, iter: I) {
        for (id, meaning) in iter {
            self.insert(id, meaning);
        }
    }
}

impl<const N: usize> From<[(String, Option<Content>); N]> for ChoiceOptions {
    fn from(pairs: [(String, Option<Content>); N]) -> ChoiceOptions {
        pairs.into_iter().collect()
    }
}

impl From<Vec<(String, Option<Content>)>> for ChoiceOptions {
    fn from(pairs: Vec<(String, Option<Content>)>) -> ChoiceOptions {
        pairs.into_iter().collect()
    }
}

impl From<BTreeMap<String, Option<Content>>> for ChoiceOptions {
    fn from(map: BTreeMap<String, Option<Content>>) -> ChoiceOptions {
        ChoiceOptions {
            entries: map.into_iter().collect(),
        }
    }
}

impl IntoIterator for ChoiceOptions {
    type Item = (String, Option<Content>);
    type IntoIter = std::vec::IntoIter<(String, Option<Content>)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<'a> IntoIterator for &'a ChoiceOptions {
    type Item = (&'a String, &'a Option<Content>);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, Option<Content>)>,
        fn(&'a (String, Option<Content>)) -> (&'a String, &'a Option<Content>),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(k, m)| (k, m))
    }
}
