use super::*;

#[test]
fn transpose_matches_the_definition_on_one_thread_and_on_many() {
    // 5 × 7 runs on one thread; 300 × 401 (past PARALLEL_VALUES, and not a
    // multiple of the tile) splits its columns over threads.
    for (rows, cols) in [(5, 7), (300, 401), (1, 3), (3, 1)] {
        let src: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
        let t = transpose(&src, rows, cols);
        for r in 0..rows {
            for c in 0..cols {
                assert_eq!(
                    t[c * rows + r],
                    src[r * cols + c],
                    "{rows}×{cols} at ({r}, {c})"
                );
            }
        }
    }
    assert!(transpose(&[], 0, 4).is_empty());
}

#[test]
fn packed_rows_start_where_the_last_ended() {
    assert_eq!(packed_starts(&[3, 1, 4]), (vec![0, 3, 4], 8));
    assert_eq!(packed_starts(&[]), (vec![], 0));
}

#[test]
fn erf_is_accurate_to_f32() {
    // erf at a few points, to 12 digits.
    let table = [
        (0.0, 0.0),
        (0.1, 0.112_462_916_018),
        (0.5, 0.520_499_877_813),
        (1.0, 0.842_700_792_950),
        (1.5, 0.966_105_146_475),
        (2.0, 0.995_322_265_019),
        (3.0, 0.999_977_909_503),
        (5.0, 1.0),
    ];
    for (x, want) in table {
        assert!((f64::from(erf(x as f32)) - want).abs() < 2e-7, "erf({x})");
        assert!((f64::from(erf(-x as f32)) + want).abs() < 2e-7, "erf(-{x})");
    }
}

#[test]
fn the_kernel_matches_gelu_erf_serial_and_parallel() {
    use candle_core::{DType, Device};
    for n in [7, (1 << 16) + 13] {
        let x = Tensor::arange(0u32, n as u32, &Device::Cpu)
            .unwrap()
            .to_dtype(DType::F32)
            .unwrap();
        let x = x.affine(12.0 / n as f64, -6.0).unwrap();
        let want = x.gelu_erf().unwrap().to_vec1::<f32>().unwrap();
        let src = x.to_vec1::<f32>().unwrap();
        let mut got = vec![0f32; n];
        gelu_rows(&src, &mut got, 1);
        let gap = want
            .iter()
            .zip(&got)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(gap < 2e-6, "n = {n}: {gap}");
    }
}
