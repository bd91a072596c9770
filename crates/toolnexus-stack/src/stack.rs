//! A built stack: the outermost classifier and what a caller needs to know
//! about it.

use toolnexus::classifier::Classifier;
use toolnexus::cost::Pricing;
use toolnexus::cost::budget::Budget;
use toolnexus::judge::Tape;
use toolnexus_local::student::{CascadeStats, Student};

/// A classifier stack ready to evaluate, and what a caller needs to know
/// about it.
pub struct Stack {
    /// The outermost classifier: evaluate through it.
    pub classifier: Classifier,
    /// The style at the bottom (`systemone`, `tape`, `laya`, …).
    pub style: String,
    /// The call name evaluations run under (a tape's call, else `--call`, else `cli`).
    pub call: String,
    /// The tape behind a tape or static style, and how it is named.
    pub tape: Option<(Tape, String)>,
    /// How the stack settles each call's cost: local engines at $0, the
    /// others on the price table.
    pub pricing: Pricing,
    /// The budget of the caps, when any cap is set.
    pub budget: Option<Budget>,
    /// With a cascade: how many calls the student answered and passed on.
    pub cascade: Option<CascadeStats>,
    /// With a cascade: the student in front, and how it was named.
    pub cascade_student: Option<(Student, String)>,
    /// With a shadow: the model its stack asks for.
    pub shadow_model: Option<String>,
}

impl std::fmt::Debug for Stack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stack")
            .field("classifier", &self.classifier)
            .field("style", &self.style)
            .field("call", &self.call)
            .finish_non_exhaustive()
    }
}
