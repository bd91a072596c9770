use super::*;

use crate::kernels::test_numbers as numbers;

#[test]
fn the_wide_element_wise_kernels_give_the_same_bits_as_the_narrow_ones() {
    // Lengths off every vector width, values across GELU's range.
    for n in [1usize, 7, 16, 33, 384, 1537] {
        let src: Vec<f32> = numbers(n, n as u64).iter().map(|v| v * 6.0).collect();
        let (mut wide, mut narrow) = (vec![0f32; n], vec![0f32; n]);
        gelu(&src, &mut wide);
        crate::kernels::gelu_body(&src, &mut narrow);
        assert_eq!(
            wide.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            narrow.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "gelu, n = {n}"
        );
    }
    for (rows, d) in [(1usize, 7usize), (3, 384), (5, 33)] {
        let x = numbers(rows * d, 11);
        let (w, b) = (numbers(d, 12), numbers(d, 13));
        for b in [Some(&b[..]), None] {
            let (mut wide, mut narrow) = (vec![0f32; rows * d], vec![0f32; rows * d]);
            norm_rows(&x, &mut wide, d, &w, b, 1e-12);
            crate::kernels::norm_rows_body::<false>(&x, &mut narrow, d, &w, b, 1e-12);
            assert_eq!(
                wide.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                narrow.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                "norm, {rows} × {d}"
            );
        }
    }
}

#[test]
fn the_norm_with_the_variance_in_lanes_is_within_f32_rounding_of_the_definition() {
    for (rows, d) in [(1usize, 7usize), (3, 384), (5, 33), (2, 16)] {
        let x: Vec<f32> = numbers(rows * d, 21)
            .iter()
            .map(|v| v * 3.0 + 0.5)
            .collect();
        let (w, b) = (numbers(d, 22), numbers(d, 23));
        let mut got = vec![0f32; rows * d];
        norm_rows_lanes(&x, &mut got, d, &w, Some(&b), 1e-12);
        for (r, row) in x.chunks(d).enumerate() {
            let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / d as f64;
            let var = row
                .iter()
                .map(|&v| (f64::from(v) - mean).powi(2))
                .sum::<f64>()
                / d as f64;
            for (c, &v) in row.iter().enumerate() {
                let want = (f64::from(v) - mean) / (var + 1e-12).sqrt() * f64::from(w[c])
                    + f64::from(b[c]);
                let g = f64::from(got[r * d + c]);
                assert!(
                    (g - want).abs() <= 1e-5,
                    "{rows} × {d}: ({r}, {c}) is {g}, not {want}"
                );
            }
        }
    }
}
