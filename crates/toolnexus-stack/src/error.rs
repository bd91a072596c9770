//! The one error of the builder: what is wrong with a spec, naming the option.

use std::fmt;

/// A spec that cannot make a stack: a missing or contradictory option, or a
/// file it names that cannot be read. The message names the option as the
/// command line spells it (`--model-dir`, `--tape`, …) and the file.
///
/// ```
/// let e = toolnexus_stack::StackError::new("--tape t.json: no such file");
/// assert_eq!(e.to_string(), "--tape t.json: no such file");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackError {
    message: String,
}

impl StackError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> StackError {
        StackError {
            message: message.into(),
        }
    }
}

impl fmt::Display for StackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StackError {}

/// `Err(StackError::new(text))`.
pub(crate) fn bad<T>(text: impl Into<String>) -> Result<T, StackError> {
    Err(StackError::new(text))
}
