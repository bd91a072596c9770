use super::*;

use crate::kernels::test_numbers as numbers;

/// The units this CPU can run: the portable one always, the vector one where
/// the CPU has it, the tiles where the OS granted them too.
fn units() -> Vec<Bf16Unit> {
    let mut u = vec![Bf16Unit::Portable];
    if avx512_bf16() {
        u.push(Bf16Unit::Avx512);
    }
    if tiles_granted() {
        u.push(Bf16Unit::Amx);
    }
    u
}

#[test]
fn conversion_rounds_to_nearest_even_as_the_instruction_does() {
    let cases: [(u32, u16); 10] = [
        (0x3f80_0000, 0x3f80), // 1.0
        (0x3f80_8000, 0x3f80), // a tie, down to even
        (0x3f81_8000, 0x3f82), // a tie, up to even
        (0x3f80_8001, 0x3f81), // above the tie
        (0x7f7f_ffff, 0x7f80), // the largest f32 rounds to infinity
        (0x7f80_0000, 0x7f80), // infinity
        (0xff80_0000, 0xff80), // -infinity
        (0x8000_0000, 0x8000), // -0
        (0x8001_16c2, 0x8000), // a subnormal becomes a zero of its sign
        (0x0080_0000, 0x0080), // the smallest normal stays
    ];
    for (bits, want) in cases {
        assert_eq!(to_bf16(f32::from_bits(bits)), want, "{bits:#010x}");
    }
    assert!(from_bf16(to_bf16(f32::NAN)).is_nan());
    assert!(
        from_bf16(to_bf16(f32::from_bits(0x7f80_0001))).is_nan(),
        "a signalling NaN stays a NaN"
    );
    assert_eq!(from_bf16(0x3f80), 1.0);
}

#[test]
fn the_vector_conversion_agrees_with_the_portable_one_on_every_length() {
    if !avx512_bf16() {
        return;
    }
    let mut src = numbers(131, 3);
    src[5] = f32::from_bits(0x3f80_8000);
    src[6] = 1e-40;
    src[7] = f32::INFINITY;
    for n in [1usize, 2, 15, 16, 17, 31, 32, 33, 64, 65, 131] {
        let (mut a, mut b) = (vec![0u32; n.div_ceil(2)], vec![0u32; n.div_ceil(2)]);
        convert_row(false, &src[..n], &mut a);
        convert_row(true, &src[..n], &mut b);
        assert_eq!(a, b, "{n} values");
    }
}

#[test]
fn both_layouts_pack_the_same_rounded_weight() {
    for (k, n) in [(1, 1), (3, 5), (7, 33), (64, 32), (65, 70)] {
        let w = numbers(k * n, (k * 100 + n) as u64);
        let a = Bf16Weights::from_in_out(&w, k, n);
        let t: Vec<f32> = (0..n * k).map(|i| w[(i % k) * n + i / k]).collect();
        let b = Bf16Weights::from_out_in(&t, n, k);
        let rounded: Vec<f32> = w.iter().map(|&v| from_bf16(to_bf16(v))).collect();
        assert_eq!(a.to_f32(), rounded, "{k}×{n} from [in, out]");
        assert_eq!(b.to_f32(), rounded, "{k}×{n} from [out, in]");
        assert_eq!((a.inputs(), a.outputs()), (k, n));
        assert_eq!(a.bytes(), n.div_ceil(32) * k.div_ceil(2) * 128);
    }
}

/// A weight too large for one thread packs the same as a small one would.
#[test]
fn packing_on_threads_matches_the_definition() {
    let (k, n) = (301, 1000);
    let w = numbers(k * n, 9);
    let rounded: Vec<f32> = w.iter().map(|&v| from_bf16(to_bf16(v))).collect();
    assert_eq!(Bf16Weights::from_in_out(&w, k, n).to_f32(), rounded);
}

/// One product checked cell by cell against the sum, in f64, of the
/// bf16-rounded operands: the only difference left is f32's rounding of the
/// running sum.
#[allow(clippy::too_many_arguments)]
fn check(
    unit: Bf16Unit,
    m: usize,
    k: usize,
    n: usize,
    x_pad: usize,
    out_pad: usize,
    bias: bool,
    into: Out,
) {
    let x_stride = k + x_pad;
    let x = numbers(m.max(1) * x_stride, (m * 7 + k * 3 + n) as u64);
    let w = numbers(k * n, (k * 11 + n) as u64);
    let b = bias.then(|| numbers(n, 5));
    let ldc = n + out_pad;
    let before = numbers(m * ldc, 77);
    let mut out = before.clone();
    let weights = Bf16Weights::from_in_out(&w, k, n);
    let rows = Rows {
        data: &x,
        rows: m,
        cols: k,
        stride: x_stride,
    };
    matmul_bf16_on(unit, rows, &weights, b.as_deref(), &mut out, ldc, into);
    let r = |v: f32| f64::from(from_bf16(to_bf16(v)));
    let what = format!(
        "{unit:?} {m}×{k}·{k}×{n}, bias {bias}, add {}",
        into == Out::Add
    );
    for i in 0..m {
        for j in 0..ldc {
            let got = out[i * ldc + j];
            if j >= n {
                assert_eq!(
                    got,
                    before[i * ldc + j],
                    "{what}: padding ({i}, {j}) touched"
                );
                continue;
            }
            let (mut want, mut size) = (0f64, 0f64);
            for kk in 0..k {
                let p = r(x[i * x_stride + kk]) * r(w[kk * n + j]);
                want += p;
                size += p.abs();
            }
            if let Some(b) = &b {
                want += f64::from(b[j]);
                size += f64::from(b[j]).abs();
            }
            if into == Out::Add {
                want += f64::from(before[i * ldc + j]);
                size += f64::from(before[i * ldc + j]).abs();
            }
            let gap = (f64::from(got) - want).abs();
            assert!(
                gap <= 1e-6 * (size + 1.0),
                "{what}: ({i}, {j}) is {got}, not {want}"
            );
        }
    }
}

#[test]
fn products_match_the_reference_on_shapes_off_the_tile() {
    // Rows: one, fewer than a tile, a tile, a tile and one, odd; inputs: one,
    // odd, even; outputs: less than a vector, a panel and a bit, several panels.
    let shapes = [
        (1, 1, 1),
        (1, 7, 5),
        (3, 33, 31),
        (12, 64, 32),
        (13, 65, 33),
        (25, 129, 70),
        (7, 384, 96),
        (37, 100, 17),
        // The tiles' edges: 16 and 32 rows and one past, a step of 32 inputs
        // and one past, a whole panel.
        (16, 32, 32),
        (17, 34, 64),
        (32, 96, 32),
        (33, 66, 65),
        (31, 1024, 40),
    ];
    for unit in units() {
        for &(m, k, n) in &shapes {
            check(unit, m, k, n, 0, 0, false, Out::Overwrite);
            check(unit, m, k, n, 3, 5, true, Out::Overwrite);
            check(unit, m, k, n, 1, 0, true, Out::Add);
            check(unit, m, k, n, 0, 2, false, Out::Add);
        }
    }
}

#[test]
fn large_products_split_over_threads_match_the_reference() {
    // Past PARALLEL_BF16, with rows in several conversion chunks, and with
    // fewer panels than threads.
    for unit in units() {
        check(unit, 97, 512, 200, 2, 3, true, Out::Overwrite);
        check(unit, 230, 1030, 70, 0, 0, false, Out::Add);
        check(unit, 2000, 600, 20, 0, 1, true, Out::Overwrite);
    }
}

#[test]
fn an_empty_product_writes_nothing() {
    let w = Bf16Weights::from_in_out(&numbers(6, 1), 3, 2);
    let mut out = vec![7f32; 4];
    matmul_bf16(
        Rows::packed(&[], 0, 3),
        &w,
        None,
        &mut out,
        2,
        Out::Overwrite,
    );
    assert_eq!(out, [7.0; 4]);
}

#[test]
fn bf16_stays_within_its_rounding_of_the_f32_product() {
    let (m, k, n) = (9, 384, 64);
    let x = numbers(m * k, 21);
    let w = numbers(k * n, 22);
    let mut exact = vec![0f32; m * n];
    super::super::linear(
        Rows::packed(&x, m, k),
        &w,
        None,
        &mut exact,
        n,
        Out::Overwrite,
    );
    let mut got = vec![0f32; m * n];
    matmul_bf16(
        Rows::packed(&x, m, k),
        &Bf16Weights::from_in_out(&w, k, n),
        None,
        &mut got,
        n,
        Out::Overwrite,
    );
    for i in 0..m {
        for j in 0..n {
            let size: f32 = (0..k).map(|kk| (x[i * k + kk] * w[kk * n + j]).abs()).sum();
            let gap = (got[i * n + j] - exact[i * n + j]).abs();
            // Each operand is off by at most 2⁻⁹ of itself, so each product by
            // about 2⁻⁸.
            assert!(gap <= size / 256.0, "({i}, {j}): {gap} of {size}");
        }
    }
}

#[test]
fn precision_resolves_to_what_the_unit_can_run() {
    use crate::engine::Precision::{Auto, Bf16, F32};
    use Vendor::{Intel, Other};
    for unit in [Bf16Unit::Amx, Bf16Unit::Avx512, Bf16Unit::Portable] {
        for vendor in [Intel, Other] {
            assert_eq!(resolve_on(unit, vendor, F32).unwrap(), F32, "{unit:?}");
        }
    }
    for unit in [Bf16Unit::Amx, Bf16Unit::Avx512] {
        for vendor in [Intel, Other] {
            assert_eq!(resolve_on(unit, vendor, Bf16).unwrap(), Bf16, "{unit:?}");
        }
    }
    // auto takes bf16 where it outruns f32: the tiles, and AVX-512 BF16 on
    // a CPU not Intel's. On Intel's, AVX-512 BF16 is slower than f32, and
    // auto keeps f32 (bf16 asked by name still runs).
    assert_eq!(resolve_on(Bf16Unit::Amx, Intel, Auto).unwrap(), Bf16);
    assert_eq!(resolve_on(Bf16Unit::Avx512, Other, Auto).unwrap(), Bf16);
    assert_eq!(resolve_on(Bf16Unit::Avx512, Intel, Auto).unwrap(), F32);
    // Without a unit, auto falls back and bf16 is refused, saying why.
    for vendor in [Intel, Other] {
        assert_eq!(resolve_on(Bf16Unit::Portable, vendor, Auto).unwrap(), F32);
    }
    let e = resolve_on(Bf16Unit::Portable, Other, Bf16).unwrap_err();
    assert!(e.is_bad_spec());
    assert_eq!(
        e.to_string(),
        "local: bf16 needs a CPU with AMX or AVX-512 BF16 and this one has neither; use f32 or auto"
    );
    // What this machine resolves to is what its unit can run.
    let here = crate::resolve_precision(Auto).unwrap();
    assert_eq!(here == Bf16, unit().outruns_f32(vendor()));
}

#[test]
fn a_linear_layer_in_bf16_answers_as_its_f32_twin_within_bf16_rounding() {
    use super::super::{HeldLin, Lin};
    use crate::weights::F32s;
    // PyTorch's [out, in] weight, a bias, rows of input; one layer kept in
    // f32 (transposed) and one packed in bf16 from the same values.
    let (rows, inp, out) = (5, 37, 70);
    let (w, b, x) = (
        numbers(out * inp, 11),
        numbers(out, 12),
        numbers(rows * inp, 13),
    );
    let f32_lin = Lin::transposed(&w, (out, inp), Some(F32s::from(b.clone())));
    let bf16_lin = Lin::bf16(
        Bf16Weights::from_out_in(&w, out, inp),
        Some(F32s::from(b.clone())),
    );
    assert!(bf16_lin.is_bf16() && bf16_lin.weight_t().is_none());
    assert!(!f32_lin.is_bf16() && f32_lin.weight_t().is_some());
    for into in [Out::Overwrite, Out::Add] {
        let (mut a, mut h) = (vec![0.5f32; rows * out], vec![0.5f32; rows * out]);
        HeldLin::of(&f32_lin)
            .unwrap()
            .apply(Rows::packed(&x, rows, inp), &mut a, into);
        HeldLin::of(&bf16_lin)
            .unwrap()
            .apply(Rows::packed(&x, rows, inp), &mut h, into);
        for i in 0..rows {
            for j in 0..out {
                // bf16 keeps 8 bits of mantissa: each product is off by at
                // most 2⁻⁸ of its size (both operands rounded).
                let bound: f32 = (0..inp)
                    .map(|k| (x[i * inp + k] * w[j * inp + k]).abs())
                    .sum();
                let gap = (a[i * out + j] - h[i * out + j]).abs();
                assert!(
                    gap <= bound / 128.0 + 1e-6,
                    "({i}, {j}): {gap} > {bound}/128"
                );
            }
        }
    }
}

#[test]
fn the_unit_reports_what_the_cpu_has() {
    let u = unit();
    assert_eq!(u, detect(), "detected once, the same every time");
    // The tiles only once they may be chosen, and then wherever the CPU and
    // the OS have them.
    assert_eq!(
        u == Bf16Unit::Amx,
        AMX_KERNEL && amx_in_cpu_and_os(),
        "{u:?}"
    );
    assert_eq!(u.in_hardware(), avx512_bf16());
    if !u.in_hardware() {
        assert_eq!(u, Bf16Unit::Portable);
    }
    // AMX is only ever found beside AVX-512 BF16, which runs its products.
    if amx_in_cpu_and_os() {
        assert!(avx512_bf16());
    }
    assert_eq!(Bf16Unit::Amx.name(), "amx-bf16");
    assert_eq!(Bf16Unit::Avx512.name(), "avx512-bf16");
    assert_eq!(Bf16Unit::Portable.name(), "none");
    assert!(Bf16Unit::Amx.in_hardware() && Bf16Unit::Avx512.in_hardware());
}

/// The request for the tile data reaches Linux and is answered: granted
/// where the CPU and the OS have AMX, refused (not crashed) elsewhere.
#[test]
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn the_tile_data_request_is_answered() {
    if !amx_in_cpu_and_os() {
        assert!(!request_tile_data(), "granted without AMX");
    }
}

/// The bench: GFLOP/s of the f32 product (`linear`, on `gemm`) and of
/// `matmul_bf16` on the encoders' shapes, each the median of several runs,
/// the two alternating.
/// Prints a table; asserts nothing about speed. On one thread
/// (`RAYON_NUM_THREADS=1`) it times the thread's time on the CPU
/// (`/proc/thread-self/schedstat`), which other processes on the machine do
/// not inflate; else the wall clock.
///
/// `cargo test --release -p toolnexus-local --lib kernels::bf16::tests::bench -- --ignored --nocapture`
/// (`BF16_BENCH_UNIT=amx|avx512|portable` for a unit other than the one detected)
#[test]
#[ignore = "a bench: prints figures, takes a minute"]
fn bench() {
    use std::time::Instant;
    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }
    /// Seconds this thread has run on a CPU: `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`,
    /// exact to the nanosecond (`/proc`'s figures move only at scheduler ticks).
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    fn on_cpu() -> Option<f64> {
        const SYS_CLOCK_GETTIME: isize = 228;
        const CLOCK_THREAD_CPUTIME_ID: usize = 3;
        let mut ts = [0i64; 2];
        let ret: isize;
        // SAFETY: the call writes one `struct timespec` (two i64) into `ts`.
        unsafe {
            std::arch::asm!("syscall",
                inlateout("rax") SYS_CLOCK_GETTIME => ret,
                in("rdi") CLOCK_THREAD_CPUTIME_ID, in("rsi") ts.as_mut_ptr(),
                lateout("rcx") _, lateout("r11") _, options(nostack));
        }
        (ret == 0).then(|| ts[0] as f64 + ts[1] as f64 / 1e9)
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    fn on_cpu() -> Option<f64> {
        None
    }
    static START: OnceLock<Instant> = OnceLock::new();
    let single = threads() == 1 && on_cpu().is_some();
    let clock = move || {
        if single {
            on_cpu().unwrap_or(0.0)
        } else {
            START.get_or_init(Instant::now).elapsed().as_secs_f64()
        }
    };
    // Seconds per call of `f` and of `g`: the medians of 9 timings each of
    // enough calls to fill about 50 ms, the two taking turns so that both
    // meet the same load.
    let time = |f: &mut dyn FnMut(), g: &mut dyn FnMut()| {
        let reps = |f: &mut dyn FnMut()| {
            f();
            let (start, mut calls) = (clock(), 0);
            while clock() - start < 0.01 {
                f();
                calls += 1;
            }
            ((0.05 * calls as f64 / (clock() - start)) as usize).max(1)
        };
        let (rf, rg) = (reps(f), reps(g));
        let once = |f: &mut dyn FnMut(), reps: usize| {
            let start = clock();
            for _ in 0..reps {
                f();
            }
            (clock() - start) / reps as f64
        };
        let (tf, tg): (Vec<f64>, Vec<f64>) = (0..9).map(|_| (once(f, rf), once(g, rg))).unzip();
        (median(tf), median(tg))
    };
    let load = || std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    // `BF16_BENCH_UNIT=amx`, `avx512` or `portable` times that unit instead
    // of the one detected (the tiles where Linux grants them).
    let chosen = match std::env::var("BF16_BENCH_UNIT").as_deref() {
        Ok("amx") => Bf16Unit::Amx,
        Ok("avx512") => Bf16Unit::Avx512,
        Ok("portable") => Bf16Unit::Portable,
        _ => unit(),
    };
    println!(
        "unit: {}, threads: {}, timed by {}, load before: {}",
        chosen.name(),
        threads(),
        if single {
            "time on the CPU"
        } else {
            "the wall clock"
        },
        load().trim()
    );
    println!("| model | rows | in→out | f32 GFLOP/s | bf16 GFLOP/s | bf16 / f32 |");
    println!("|---|---|---|---|---|---|");
    let shapes: &[(&str, &[usize], usize, usize)] = &[
        ("MiniLM", &[32, 128], 384, 384),
        ("MiniLM", &[32, 128], 384, 1536),
        ("MiniLM", &[32, 128], 1536, 384),
        ("ModernBERT-large", &[120, 3840], 1024, 3072),
        ("ModernBERT-large", &[120, 3840], 1024, 5248),
        ("ModernBERT-large", &[120, 3840], 2624, 1024),
        ("ModernBERT-large", &[120, 3840], 1024, 1024),
    ];
    let mut packing = Vec::new();
    let only: Option<usize> = std::env::var("BF16_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok());
    for &(model, rows, k, n) in shapes {
        let w = numbers(k * n, 1);
        let b = numbers(n, 2);
        let t: Vec<f32> = (0..n * k).map(|i| w[(i % k) * n + i / k]).collect();
        let start = Instant::now();
        let packed = Bf16Weights::from_in_out(&w, k, n);
        let from_in_out = start.elapsed().as_secs_f64() * 1e3;
        let start = Instant::now();
        let again = Bf16Weights::from_out_in(&t, n, k);
        let from_out_in = start.elapsed().as_secs_f64() * 1e3;
        assert_eq!(again.bytes(), packed.bytes());
        packing.push(format!("| {k}→{n} | {from_in_out:.1} | {from_out_in:.1} |"));
        for &m in rows.iter().filter(|&&m| only.is_none_or(|o| o == m)) {
            let x = numbers(m * k, 3);
            let mut out = vec![0f32; m * n];
            let flop = 2.0 * (m * k * n) as f64;
            let mut f32_out = vec![0f32; m * n];
            let (f32_s, bf16_s) = time(
                &mut || {
                    super::super::linear(
                        Rows::packed(&x, m, k),
                        &w,
                        Some(&b),
                        &mut f32_out,
                        n,
                        Out::Overwrite,
                    )
                },
                &mut || {
                    matmul_bf16_on(
                        chosen,
                        Rows::packed(&x, m, k),
                        &packed,
                        Some(&b),
                        &mut out,
                        n,
                        Out::Overwrite,
                    )
                },
            );
            let (f, h) = (flop / f32_s / 1e9, flop / bf16_s / 1e9);
            println!(
                "| {model} | {m} | {k}→{n} | {f:.0} | {h:.0} | {:.2}× |",
                h / f
            );
        }
    }
    println!(
        "\npacking the weight, wall ms:\n| in→out | from [in, out] | from [out, in] |\n|---|---|---|"
    );
    packing.iter().for_each(|l| println!("{l}"));
    println!("load after: {}", load().trim());
}

/// GELU taken on the way to bf16 gives the product of GELU's output, to the bit.
#[test]
fn a_product_of_gelu_is_the_product_of_gelus_output() {
    for unit in units() {
        // One thread, and past PARALLEL_BF16 over several conversion chunks.
        for (m, k, n) in [(5, 33, 40), (230, 1030, 70)] {
            let x: Vec<f32> = numbers(m * k, 31).iter().map(|v| v * 4.0).collect();
            let w = Bf16Weights::from_in_out(&numbers(k * n, 32), k, n);
            let b = numbers(n, 33);
            let mut act = vec![0f32; m * k];
            crate::kernels::gelu(&x, &mut act);
            let before = numbers(m * n, 34);
            let (mut fused, mut apart) = (before.clone(), before);
            let rows = |d| Rows::packed(d, m, k);
            matmul_bf16_with(unit, rows(&x), true, &w, Some(&b), &mut fused, n, Out::Add);
            matmul_bf16_on(unit, rows(&act), &w, Some(&b), &mut apart, n, Out::Add);
            let bits = |v: &[f32]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&fused), bits(&apart), "{unit:?} {m}×{k}·{k}×{n}");
        }
    }
}
