//! Pure metrics over confidences, probabilities and labels.

/// One bin of a reliability table.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Bin {
    /// Lower edge.
    pub lo: f64,
    /// Upper edge.
    pub hi: f64,
    /// Rows whose confidence fell in the bin.
    pub count: usize,
    /// Mean confidence of those rows (0 when empty).
    pub mean_confidence: f64,
    /// Share of those rows that were right (for noul: that were `true`); 0 when empty.
    pub observed: f64,
}
