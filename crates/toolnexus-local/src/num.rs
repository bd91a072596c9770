//! The two numeric helpers the zero-shot style and the students share.

/// The dot product of two vectors, summed in f64 (for unit vectors: their
/// cosine similarity).
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum()
}

/// The softmax of `logits`, shifted by their maximum so that no term
/// overflows; sums to 1.
pub(crate) fn softmax(logits: &[f64]) -> Vec<f64> {
    let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let exps: Vec<f64> = logits.iter().map(|l| (l - max).exp()).collect();
    let total: f64 = exps.iter().sum();
    exps.into_iter().map(|e| e / total).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_sums_to_one_and_survives_large_logits() {
        let p = softmax(&[1000.0, 1000.0, 0.0]);
        assert_eq!(p[0], p[1]);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(softmax(&[0.7]), [1.0]);
    }

    #[test]
    fn dot_sums_in_f64() {
        assert_eq!(dot(&[1.0, 2.0], &[3.0, 4.0]), 11.0);
    }
}
