//! One builder for every style: a [`StackSpec`] — style, model, endpoint,
//! key variable, tape, model directory, student, cascade, calibration,
//! fallback, pricing, caps, cache and shadow — becomes a classifier [`Stack`], its
//! layers applied in one order (SPEC §23). Every surface builds its classifier
//! here: the command line's commands, `serve`, `mcp`, the guard, and bindings.
//!
//! The order, innermost first, and why:
//!
//! ```text
//!   style or engine            systemone | llm | tape | static | a local engine
//!   └ fallback                 the next endpoints, asked when one is unavailable
//!     └ cascade                a local student in front; the style answers what it passes on
//!       └ calibration          maps the answers' probabilities
//!         └ pricing            settles each call's cost on the model that answered
//!           └ budget           caps: refuses, unsent, once a cap is reached
//!             └ cache          a hit never reaches the budget: it costs nothing
//!               └ pricing      so a hit is a known $0, not unknown
//!                 └ shadow     outermost: compares what the caller gets; shares the caps
//! ```
//!
//! Every layer keeps the [`Identity`](toolnexus::classifier::Identity) of what
//! it wraps and adds to the stack's
//! [`Fingerprint`](toolnexus::classifier::Fingerprint) what can change an
//! answer, so the cache keys on all of it.
//!
//! ```
//! use toolnexus_stack::{StackSpec, build};
//!
//! let spec = StackSpec {
//!     style: Some("systemone".into()),
//!     base_url: Some("http://127.0.0.1:9/v1".into()),
//!     model: Some("jev-1.13".into()),
//!     ..Default::default()
//! };
//! let stack = build(&spec)?;
//! assert_eq!(stack.style, "systemone");
//! assert_eq!(stack.classifier.identity().model, "jev-1.13");
//! # Ok::<(), toolnexus_stack::StackError>(())
//! ```

mod bottom;
mod error;
mod layers;
mod spec;
mod stack;

pub use bottom::{
    ca_cert_pem, embedder, embedder_in, first_connection_flag, is_local_style, key_env,
    library_retries, style_names, style_summary,
};
pub use error::StackError;
pub use layers::{carry, share};
pub use spec::{Caps, ShadowSpec, StackSpec, StudentSource, TapeSource};
pub use stack::Stack;

/// Builds the stack `spec` describes, its layers in the crate's one order.
/// Every refusal names the option at fault (as the command line spells it:
/// `--model-dir`, `--student`, …).
///
/// ```
/// use toolnexus_stack::{StackSpec, build};
/// let e = build(&StackSpec { style: Some("laya".into()), ..Default::default() }).unwrap_err();
/// assert!(e.to_string().starts_with("--style laya needs --model-dir DIR"), "{e}");
/// ```
pub fn build(spec: &StackSpec) -> Result<Stack, StackError> {
    let mut stack = bottom::build(spec)?;
    layers::apply(spec, &mut stack)?;
    Ok(stack)
}

/// The stack without its caps, cache and outer pricing: the style with its
/// fallback, cascade and calibration. What a shadow or an estimate asks.
///
/// ```
/// use toolnexus_stack::{StackSpec, build_answering};
/// let spec = StackSpec { style: Some("systemone".into()), ..Default::default() };
/// let stack = build_answering(&spec)?;
/// assert!(stack.budget.is_none());
/// # Ok::<(), toolnexus_stack::StackError>(())
/// ```
pub fn build_answering(spec: &StackSpec) -> Result<Stack, StackError> {
    bottom::build(spec)
}
