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
            crate::kernels::norm_rows_body(&x, &mut narrow, d, &w, b, 1e-12);
            assert_eq!(
                wide.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                narrow.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                "norm, {rows} × {d}"
            );
        }
    }
}
