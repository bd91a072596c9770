use super::*;

use crate::kernels::test_numbers as numbers;

/// Attention by its definition, in f64: for each row and head, each query's
/// scores against the row's keys (rotary positions applied to both), their
/// softmax, and the values weighed by it.
fn reference(qkv: &[f32], rows: &[(usize, usize)], a: &Attend<'_>, ctx: &mut [f64]) {
    let (hd, h) = (a.head_dim, a.heads * a.head_dim);
    let half = hd / 2;
    let part = |t: usize, which: usize, head: usize, p: usize| -> Vec<f64> {
        let x = &qkv[t * 3 * h + which * h + head * hd..][..hd];
        match (&a.rope, which) {
            (Some(r), 0 | 1) => (0..hd)
                .map(|d| {
                    let (i, other) = (d % half, if d < half { d + half } else { d - half });
                    let (c, s) = (
                        f64::from(r.cos[p * half + i]),
                        f64::from(r.sin[p * half + i]),
                    );
                    let sign = if d < half { -1.0 } else { 1.0 };
                    f64::from(x[d]) * c + sign * f64::from(x[other]) * s
                })
                .collect(),
            _ => x.iter().map(|&v| f64::from(v)).collect(),
        }
    };
    for &(start, len) in rows {
        for head in 0..a.heads {
            for i in 0..len {
                let q = part(start + i, 0, head, i);
                let scores: Vec<f64> = (0..len)
                    .map(|j| {
                        let k = part(start + j, 1, head, j);
                        q.iter().zip(&k).map(|(a, b)| a * b).sum::<f64>() / (hd as f64).sqrt()
                    })
                    .collect();
                let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                let total: f64 = e.iter().sum();
                for d in 0..hd {
                    let v: f64 = (0..len)
                        .map(|j| e[j] * part(start + j, 2, head, j)[d])
                        .sum();
                    ctx[(start + i) * h + head * hd + d] = v / total;
                }
            }
        }
    }
}

/// Rows of `lengths` packed end to end, as (first token, length).
fn packed(lengths: &[usize]) -> Vec<(usize, usize)> {
    let mut at = 0;
    lengths
        .iter()
        .map(|&l| {
            at += l;
            (at - l, l)
        })
        .collect()
}

/// The kernel against the reference on `lengths` packed, `heads` heads of
/// `hd`, with or without rotary positions; the scores spread wide (q and k
/// scaled by `spread`) so the softmax has peaks.
fn check(lengths: &[usize], heads: usize, hd: usize, rope: bool, spread: f32) {
    let rows = packed(lengths);
    let tokens: usize = lengths.iter().sum();
    let h = heads * hd;
    let mut qkv = numbers(tokens * 3 * h, (tokens * 31 + hd) as u64);
    for (i, v) in qkv.iter_mut().enumerate() {
        if i % (3 * h) < 2 * h {
            *v *= spread;
        }
    }
    let longest = lengths.iter().copied().max().unwrap_or(0);
    let angles: Vec<f32> = (0..longest * hd / 2)
        .map(|i| (i / (hd / 2)) as f32 * 0.3 / (1 + i % (hd / 2)) as f32)
        .collect();
    let (cos, sin): (Vec<f32>, Vec<f32>) = angles.iter().map(|a| (a.cos(), a.sin())).unzip();
    let a = Attend {
        heads,
        head_dim: hd,
        rope: rope.then(|| Rope {
            cos: &cos,
            sin: &sin,
        }),
        window: None,
        block: 7,
    };
    let mut got = vec![f32::NAN; tokens * h];
    attention(&qkv, &rows, &a, &mut got);
    let mut want = vec![0f64; tokens * h];
    reference(&qkv, &rows, &a, &mut want);
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (f64::from(g) - w).abs() <= 2e-6,
            "{lengths:?}, {heads}×{hd}, rope {rope}: cell {i} is {g}, not {w}"
        );
    }
}

#[test]
fn attention_matches_the_reference_on_lengths_off_the_blocks() {
    // One token, fewer than a query block, lengths around 16 and 32, odd.
    for hd in [16, 32, 48, 64] {
        check(&[1], 2, hd, false, 1.0);
        check(&[3, 1, 17], 2, hd, false, 1.0);
        check(&[15, 16, 33], 3, hd, hd == 32, 2.0);
    }
    check(&[31, 32, 5, 64, 65], 12, 32, false, 3.0);
    check(&[50, 7], 4, 64, true, 3.0);
}

#[test]
fn a_large_batch_split_over_threads_matches_the_reference() {
    let lengths: Vec<usize> = (0..40).map(|i| 5 + (i * 7) % 60).collect();
    check(&lengths, 6, 32, false, 2.0);
}

#[test]
fn a_shape_the_kernel_does_not_take_runs_the_gemm_path() {
    let rows = packed(&[9, 20]);
    // A head width off 16, and a sliding window.
    for (hd, window) in [(24, None), (32, Some(3))] {
        let a = Attend {
            heads: 2,
            head_dim: hd,
            rope: None,
            window,
            block: 8,
        };
        let h = 2 * hd;
        let qkv = numbers(29 * 3 * h, 4);
        assert!(!supports(&a));
        let (mut got, mut want) = (vec![0f32; 29 * h], vec![0f32; 29 * h]);
        attention(&qkv, &rows, &a, &mut got);
        super::super::super::attention(&qkv, &rows, &a, &mut want);
        let bits = |v: &[f32]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want), "head {hd}, window {window:?}");
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn the_vector_exp_is_within_two_ulp() {
    use std::arch::x86_64::*;
    if !wide::avx512() {
        return;
    }
    let xs: Vec<f32> = (0..=16 * 6000)
        .map(|i| -(i as f32) * 87.0 / 96_000.0)
        .collect();
    for block in xs.chunks_exact(16) {
        let mut out = [0f32; 16];
        // SAFETY: the CPU has AVX-512 F (checked above); 16 values each way.
        unsafe { _mm512_storeu_ps(out.as_mut_ptr(), exp(_mm512_loadu_ps(block.as_ptr()))) };
        for (&x, &e) in block.iter().zip(&out) {
            let want = f64::from(x).exp();
            let ulp = f64::from(f32::EPSILON) * want;
            assert!(
                (f64::from(e) - want).abs() <= 2.0 * ulp,
                "exp({x}) is {e}, not {want}"
            );
        }
    }
    // Far below: a tiny positive number, never a NaN or a negative.
    let mut out = [0f32; 16];
    // SAFETY: as above.
    unsafe { _mm512_storeu_ps(out.as_mut_ptr(), exp(_mm512_set1_ps(-1e30))) };
    assert!(out.iter().all(|&e| (0.0..1e-37).contains(&e)));
}
