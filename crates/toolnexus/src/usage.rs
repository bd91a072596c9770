//! [`ClassifierUsage`]: what a call consumed. A leaf, shared by decisions and
//! chat replies.

/// Token usage and cost of one decision.
///
/// `cost: None` means the backend did not say. It is never printed or summed as zero.
///
/// ```
/// use toolnexus::classifier::ClassifierUsage;
///
/// let u = ClassifierUsage { input_tokens: 210, output_tokens: 24, cost: None };
/// let shown = u.cost.map_or("not reported".to_string(), |c| format!("${c}"));
/// assert_eq!(shown, "not reported");
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClassifierUsage {
    /// Tokens read by the model.
    pub input_tokens: i64,
    /// Tokens written by the model.
    pub output_tokens: i64,
    /// What the call cost in US dollars, when the backend reported it.
    pub cost: Option<f64>,
}
