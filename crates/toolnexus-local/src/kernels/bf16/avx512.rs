//! The AVX-512 BF16 kernels: row conversion and the [`MR`] × [`PANEL`](super::PANEL) tile.

use std::arch::x86_64::*;

use super::{Line, MR, Tile};

/// [`super::convert_row`] with `vcvtne2ps2bf16`, 32 values at a time.
///
/// # Safety
///
/// The CPU must have AVX-512 F and BF16; `dst.len() == src.len().div_ceil(2)`.
#[target_feature(enable = "avx512f,avx512bf16")]
pub(super) unsafe fn convert_row(src: &[f32], dst: &mut [u32]) {
    let n = src.len();
    let mut i = 0;
    while i < n {
        let left = n - i;
        let (m0, m1) = (lanes(left), lanes(left.saturating_sub(16)));
        // SAFETY: masked loads read only lanes below `left`, inside `src`
        // (a masked-off lane is never read, so the second address may
        // lie past the end).
        let (v0, v1) = unsafe {
            (
                _mm512_maskz_loadu_ps(m0, src.as_ptr().add(i)),
                _mm512_maskz_loadu_ps(m1, src.as_ptr().wrapping_add(i + 16)),
            )
        };
        let h: __m512i = unsafe { std::mem::transmute(_mm512_cvtne2ps_pbh(v1, v0)) };
        // Words `i/2..`: one per pair, `left.div_ceil(2)` of them here.
        // SAFETY: the masked store writes only words inside `dst`.
        unsafe {
            _mm512_mask_storeu_epi32(
                dst.as_mut_ptr().add(i / 2).cast(),
                lanes(left.div_ceil(2)),
                h,
            )
        };
        i += 32;
    }
}

/// A mask of the first `n` (at most 16) lanes.
#[inline(always)]
fn lanes(n: usize) -> __mmask16 {
    if n >= 16 { 0xffff } else { (1u16 << n) - 1 }
}

/// The tile's rows, [`MR`] at a time, each block on the kernel for its
/// row count (one copy of the kernel per count, so the accumulators stay
/// in registers), all in one call.
///
/// # Safety
///
/// The CPU must have AVX-512 F and BF16; `t.c` as [`Tile`] documents.
#[target_feature(enable = "avx512f,avx512bf16")]
pub(super) unsafe fn tiles(t: &Tile<'_>) {
    assert!(t.rows >= 1 && t.a.len() >= t.rows * t.pairs);
    assert!(t.panel.len() >= 2 * t.pairs && t.bias.is_none_or(|b| b.len() >= t.cols));
    for r0 in (0..t.rows).step_by(MR) {
        let b = t.block(r0);
        // SAFETY: the caller's contract, and the asserts above: a block
        // is rows of the tile, `b.rows == R` for the kernel it runs on.
        unsafe {
            match b.rows {
                1 => tile_of::<1>(&b),
                2 => tile_of::<2>(&b),
                3 => tile_of::<3>(&b),
                4 => tile_of::<4>(&b),
                5 => tile_of::<5>(&b),
                6 => tile_of::<6>(&b),
                7 => tile_of::<7>(&b),
                8 => tile_of::<8>(&b),
                9 => tile_of::<9>(&b),
                10 => tile_of::<10>(&b),
                11 => tile_of::<11>(&b),
                _ => tile_of::<MR>(&b),
            }
        }
    }
}

/// `R` rows × 32 columns: 2R accumulators; per input pair, two loads of
/// the panel, R broadcasts of the rows' pairs and 2R `vdpbf16ps`.
///
/// # Safety
///
/// As [`tiles`], with `t.rows == R`.
#[target_feature(enable = "avx512f,avx512bf16")]
#[inline]
unsafe fn tile_of<const R: usize>(t: &Tile<'_>) {
    let mut acc = [[_mm512_setzero_ps(); 2]; R];
    let a = t.a.as_ptr();
    let b = t.panel.as_ptr();
    let pairs = t.pairs;
    for p in 0..pairs {
        // SAFETY: `2p + 1 < 2·pairs <= panel.len()`, lines are 64-byte
        // aligned; `r·pairs + p < rows·pairs <= a.len()`.
        unsafe {
            let b0: __m512bh = std::mem::transmute(_mm512_load_si512(b.add(2 * p).cast()));
            let b1: __m512bh = std::mem::transmute(_mm512_load_si512(b.add(2 * p + 1).cast()));
            for (r, acc) in acc.iter_mut().enumerate() {
                let x: __m512bh =
                    std::mem::transmute(_mm512_set1_epi32(*a.add(r * pairs + p) as i32));
                acc[0] = _mm512_dpbf16_ps(acc[0], x, b0);
                acc[1] = _mm512_dpbf16_ps(acc[1], x, b1);
            }
        }
    }
    let bias = bias_of(t);
    for (r, acc) in acc.iter().enumerate() {
        // SAFETY: row `r < rows`: a row the tile may read and write.
        unsafe { put_row(t, t.c.add(r * t.ldc), (acc[0], acc[1]), bias) };
    }
}

/// The bias of the tile's columns as two vectors (zeros without one).
#[target_feature(enable = "avx512f")]
pub(super) fn bias_of(t: &Tile<'_>) -> (__m512, __m512) {
    let (m0, m1) = (lanes(t.cols), lanes(t.cols.saturating_sub(16)));
    match t.bias {
        // SAFETY: masked loads read only the first `cols` values, which
        // the bias holds (checked by the callers' asserts).
        Some(bias) => unsafe {
            (
                _mm512_maskz_loadu_ps(m0, bias.as_ptr()),
                _mm512_maskz_loadu_ps(m1, bias.as_ptr().wrapping_add(16)),
            )
        },
        None => (_mm512_setzero_ps(), _mm512_setzero_ps()),
    }
}

/// One output row of the tile: its 32 `sums` plus `bias`, added to what
/// the row holds where the tile adds, written masked to the tile's
/// columns.
///
/// # Safety
///
/// `row` is a row of `t.c` (as [`Tile`] documents): its first `t.cols`
/// cells valid for reads and writes.
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) unsafe fn put_row(
    t: &Tile<'_>,
    row: *mut f32,
    sums: (__m512, __m512),
    bias: (__m512, __m512),
) {
    let (m0, m1) = (lanes(t.cols), lanes(t.cols.saturating_sub(16)));
    let (mut v0, mut v1) = (_mm512_add_ps(sums.0, bias.0), _mm512_add_ps(sums.1, bias.1));
    // SAFETY: masked to the first `cols` cells of the row (the caller's
    // contract).
    unsafe {
        if t.add {
            v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, row));
            v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, row.wrapping_add(16)));
        }
        _mm512_mask_storeu_ps(row, m0, v0);
        _mm512_mask_storeu_ps(row.wrapping_add(16), m1, v1);
    }
}

/// Keeps [`Line`]'s alignment what the aligned loads above need.
const _: () = assert!(align_of::<Line>() == 64);
