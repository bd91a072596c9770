//! What a server answers with: a built stack's outermost classifier and what
//! it is.

use toolnexus::classifier::Classifier;

/// The stack a server answers with: its outermost classifier, the style at
/// its bottom and the call name evaluations run under.
///
/// ```
/// use toolnexus_server::Backend;
/// let stack = toolnexus_stack::build(&toolnexus_stack::StackSpec {
///     style: Some("systemone".into()),
///     base_url: Some("http://127.0.0.1:9/v1".into()),
///     ..Default::default()
/// })?;
/// let backend = Backend::from_stack(&stack);
/// assert_eq!((backend.style.as_str(), backend.call.as_str()), ("systemone", "cli"));
/// # Ok::<(), toolnexus_stack::StackError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Backend {
    /// The outermost classifier of the stack: every request goes through it.
    pub classifier: Classifier,
    /// The style at the bottom, as the command line spells it (`systemone`,
    /// `tape`, `static`, `llm`, an engine's name). The System One style
    /// forwards the model, the assets and every extra field; others answer
    /// with their own model.
    pub style: String,
    /// The call name evaluations run under (a tape's call, for a replay).
    pub call: String,
}

impl Backend {
    /// A backend from a classifier, the style at its bottom and a call name.
    ///
    /// ```
    /// use toolnexus::classifier::{ClassifierOptions, create_classifier};
    /// use toolnexus_server::Backend;
    /// let judge = create_classifier(ClassifierOptions {
    ///     base_url: "http://127.0.0.1:9/v1".into(),
    ///     ..Default::default()
    /// })?;
    /// let backend = Backend::new(judge, "systemone", "cli");
    /// assert_eq!(backend.call, "cli");
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn new(
        classifier: Classifier,
        style: impl Into<String>,
        call: impl Into<String>,
    ) -> Backend {
        Backend {
            classifier,
            style: style.into(),
            call: call.into(),
        }
    }

    /// The backend of a built stack.
    pub fn from_stack(stack: &toolnexus_stack::Stack) -> Backend {
        Backend::new(stack.classifier.clone(), &stack.style, &stack.call)
    }

    /// Whether a layer with this name in the stack's fingerprint can change
    /// an answer (`calibration`, `cascade`).
    pub(crate) fn has_layer(&self, layer: &str) -> bool {
        self.classifier
            .fingerprint()
            .parts()
            .iter()
            .any(|(l, _)| l == layer)
    }
}
