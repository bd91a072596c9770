//! The cascade: a student in front of a teacher, answering locally where it
//! is confident enough on every asked key and passing the rest on.

use super::runtime::LocalStudent;

/// How many calls a [`cascade`] answered where.
#[derive(Debug, Clone, Default)]
pub struct CascadeStats {
    local: std::sync::Arc<std::sync::atomic::AtomicU64>,
    teacher: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl CascadeStats {
    /// Calls the student answered.
    pub fn local(&self) -> u64 {
        self.local.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Calls passed to the teacher.
    pub fn teacher(&self) -> u64 {
        self.teacher.load(std::sync::atomic::Ordering::Relaxed)
    }
}

struct Cascade {
    local: LocalStudent,
    teacher: toolnexus::classifier::Classifier,
    threshold: f64,
    stats: CascadeStats,
}

impl toolnexus::classifier::FullEvaluator for Cascade {
    /// The student's answers cost an explicit 0 (`local`), whatever style the
    /// teacher is; the teacher's come back as its classifier settled them
    /// (request id, cost), for a pricing layer outside to price.
    fn call_full(
        &self,
        ctx: toolnexus::classifier::EvalContext,
        request: toolnexus::classifier::EvalRequest,
    ) -> toolnexus::classifier::BoxFuture<
        Result<toolnexus::classifier::Evaluated, toolnexus::classifier::ClassifierError>,
    > {
        use std::sync::atomic::Ordering;
        use toolnexus::cost::{Cost, CostSource};
        let (teacher, threshold, stats, student) = (
            self.teacher.clone(),
            self.threshold,
            self.stats.clone(),
            self.local.clone(),
        );
        // A student that never serves (no cut kept the target) is not asked.
        let local = threshold
            .is_finite()
            .then(|| self.local.decide_blocking(request.clone()));
        Box::pin(async move {
            let local = match local {
                Some(local) => Some(local.await),
                None => None,
            };
            match local {
                Some(Ok((d, least))) if least >= threshold => {
                    stats.local.fetch_add(1, Ordering::Relaxed);
                    // A field of the call's one span, not a span of its own.
                    toolnexus::classifier::record_cascade_stage("student");
                    let mut e = student.mark_precision(toolnexus::classifier::Evaluated::new(d));
                    e.cost = Cost::new(0.0, CostSource::Local);
                    Ok(e)
                }
                // Unsure, or a question it has no head for: the teacher answers.
                _ => {
                    stats.teacher.fetch_add(1, Ordering::Relaxed);
                    toolnexus::classifier::record_cascade_stage("teacher");
                    teacher.evaluate_request(ctx, request).await
                }
            }
        })
    }
}

/// Answers locally when the student is at least `threshold` confident on
/// every asked key (the file's threshold when `None`), else asks `teacher`.
/// The decision's `model` says which answered; `stats` counts both. The
/// student's answers carry an explicit 0 cost with source `local`
/// ([`toolnexus::cost::CostSource::Local`]), which a pricing layer outside
/// keeps; the teacher's are priced as the teacher's.
pub fn cascade(
    local: LocalStudent,
    teacher: toolnexus::classifier::Classifier,
    threshold: Option<f64>,
) -> (toolnexus::classifier::Classifier, CascadeStats) {
    let threshold = threshold.unwrap_or(local.student().threshold);
    let stats = CascadeStats::default();
    let model = format!("cascade ({} / {})", local.model(), teacher.model());
    // The teacher's fingerprint, then the student and the threshold that
    // decides which of the two answers.
    let part = format!("{} threshold={threshold:?}", local.fingerprint());
    let beneath = teacher.clone();
    let c = Cascade {
        local,
        teacher,
        threshold,
        stats: stats.clone(),
    };
    (
        toolnexus::classifier::Classifier::from_evaluator(model, c)
            .layered_over(&beneath)
            .with_fingerprint_part("cascade", part),
        stats,
    )
}
