//! The AMX tile kernel: 32 rows × one [`PANEL`] of 32 columns on four
//! accumulator tiles, 16 input pairs a step.
//!
//! Tiles `tmm0`–`tmm3` hold the output block (rows 0–15 and 16–31 ×
//! columns 0–15 and 16–31) in f32; `tmm4` and `tmm5` the two 16-row
//! blocks of converted rows, 16 pairs (64 bytes) a row, read where they
//! lie at the rows' stride; `tmm6` and `tmm7` the panel's two 16-column
//! halves, 16 pair lines each, read where they lie at a stride of two
//! lines. Each `tdpbf16ps` adds 16 × 16 × 32 bf16 products in f32 (exact
//! products; the sums round to nearest even, and a subnormal result is
//! flushed to zero, as the instruction defines). A last step of fewer
//! than 16 pairs is copied into zero-padded tiles first: reading it in
//! place would run past the rows and the panel. The block is then stored
//! to a buffer, and its real columns go out with the bias, as the
//! AVX-512 kernel writes them.
//!
//! The tile registers are the thread's; nothing else in the process uses
//! them, and Rust's code never does, so one block's tiles stay as the
//! kernel left them from one `asm!` to the next.

use std::arch::asm;
use std::arch::x86_64::*;

use super::{Line, PANEL, Tile, avx512};

/// Rows of an A tile, and of the output tiles.
const TR: usize = 16;
/// Input pairs of one step: an A tile's row (64 bytes), a B tile's rows.
const TK: usize = 16;
/// Rows of the output block the four accumulators hold.
const BLOCK: usize = 2 * TR;

/// A tile configuration (palette 1), as `ldtilecfg` reads it.
#[repr(C, align(64))]
struct Config([u8; 64]);

impl Config {
    /// The tiles for a block of `upper` (1..=16) and `lower` (0..=16)
    /// rows: a tile of no rows is left unconfigured, and never used.
    fn new(upper: usize, lower: usize) -> Config {
        let mut c = [0u8; 64];
        c[0] = 1;
        // tile: rows (bytes 48..), bytes per row (u16 at 16 + 2·tile).
        let tiles = [
            (0, upper),
            (1, upper),
            (2, lower),
            (3, lower),
            (4, upper),
            (5, lower),
            (6, TK),
            (7, TK),
        ];
        for (t, rows) in tiles {
            if rows > 0 {
                c[48 + t] = rows as u8;
                c[16 + 2 * t] = 64;
            }
        }
        Config(c)
    }
}

/// The tile's rows, [`BLOCK`] at a time.
///
/// # Safety
///
/// The CPU must have AMX-BF16 and AVX-512 F, Linux must have granted this
/// process the tile data, and `t.c` must be as [`Tile`] documents.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn tiles(t: &Tile<'_>) {
    assert!(t.rows >= 1 && t.a.len() >= t.rows * t.pairs);
    assert!(t.panel.len() >= 2 * t.pairs && t.bias.is_none_or(|b| b.len() >= t.cols));
    assert!(t.cols <= PANEL);
    let mut last = (0, 0);
    for r0 in (0..t.rows).step_by(BLOCK) {
        let rows = BLOCK.min(t.rows - r0);
        let shape = (rows.min(TR), rows.saturating_sub(TR));
        if shape != last {
            let config = Config::new(shape.0, shape.1);
            // SAFETY: a valid palette-1 configuration, 64 bytes.
            unsafe { asm!("ldtilecfg [{0}]", in(reg) config.0.as_ptr(), options(nostack)) };
            last = shape;
        }
        // SAFETY: the caller's contract; rows `r0..r0 + rows` are rows
        // of the tile.
        unsafe { block(t, r0, shape.0, shape.1) };
    }
}

/// Returns the thread's tiles to their initial state.
pub(super) fn release() {
    // SAFETY: `tilerelease` touches no memory; it is valid on any CPU
    // with AMX, which a caller of `tiles` has, configured or not.
    unsafe { asm!("tilerelease", options(nostack, nomem)) };
}

/// One block: rows `r0..r0 + upper + lower` of the tile against its panel.
///
/// # Safety
///
/// As [`tiles`], with the tiles configured for `upper` and `lower`.
#[target_feature(enable = "avx512f")]
unsafe fn block(t: &Tile<'_>, r0: usize, upper: usize, lower: usize) {
    let pairs = t.pairs;
    let stride = 4 * pairs;
    let a0 = t.a[r0 * pairs..].as_ptr();
    // Past the upper rows only when there are lower rows to read.
    let a1 = a0.wrapping_add(TR * pairs);
    let b = t.panel.as_ptr();
    let line = size_of::<Line>();
    // SAFETY: the tiles were configured for this block (the caller).
    unsafe {
        if lower > 0 {
            asm!(
                "tilezero tmm0",
                "tilezero tmm1",
                "tilezero tmm2",
                "tilezero tmm3",
                options(nostack, nomem)
            );
        } else {
            asm!("tilezero tmm0", "tilezero tmm1", options(nostack, nomem));
        }
    }
    let full = pairs / TK * TK;
    for p0 in (0..full).step_by(TK) {
        // SAFETY: the A tiles read `upper` (and `lower`) rows of 64 bytes
        // from pair `p0`, `p0 + 16 <= pairs`: inside the tile's rows; the B
        // tiles read lines `2(p0 + q)` and `2(p0 + q) + 1`, `q < 16`:
        // inside the panel's `2 · pairs`.
        unsafe {
            step(
                a0.add(p0).cast(),
                a1.wrapping_add(p0).cast(),
                stride,
                b.add(2 * p0).cast(),
                b.add(2 * p0 + 1).cast(),
                2 * line,
                lower > 0,
            );
        }
    }
    let left = pairs - full;
    if left > 0 {
        // The last pairs, zero-padded to a whole step.
        let mut a = [[0u32; TK]; BLOCK];
        for (r, row) in a.iter_mut().enumerate().take(upper + lower) {
            let from = (r0 + r) * pairs + full;
            row[..left].copy_from_slice(&t.a[from..from + left]);
        }
        let mut halves = [[[0u32; 16]; TK]; 2];
        for (h, half) in halves.iter_mut().enumerate() {
            for (q, row) in half.iter_mut().enumerate().take(left) {
                *row = t.panel[2 * (full + q) + h].0;
            }
        }
        // SAFETY: every tile reads inside the local, padded copies.
        unsafe {
            step(
                a.as_ptr().cast(),
                a[TR..].as_ptr().cast(),
                4 * TK,
                halves[0].as_ptr().cast(),
                halves[1].as_ptr().cast(),
                64,
                lower > 0,
            );
        }
    }
    let mut acc = [[0f32; PANEL]; BLOCK];
    let ldc = 4 * PANEL;
    let c = acc.as_mut_ptr().cast::<f32>();
    // SAFETY: each store writes its tile's rows of 64 bytes into `acc`
    // (32 rows of 128 bytes).
    unsafe {
        asm!("tilestored [{c} + {s}*1], tmm0", "tilestored [{c1} + {s}*1], tmm1",
            c = in(reg) c, c1 = in(reg) c.add(16), s = in(reg) ldc, options(nostack));
        if lower > 0 {
            asm!("tilestored [{c} + {s}*1], tmm2", "tilestored [{c1} + {s}*1], tmm3",
                c = in(reg) c.add(TR * PANEL), c1 = in(reg) c.add(TR * PANEL + 16),
                s = in(reg) ldc, options(nostack));
        }
    }
    let bias = avx512::bias_of(t);
    for (r, acc) in acc.iter().enumerate().take(upper + lower) {
        // SAFETY: row `r0 + r < rows`: a row the tile may read and write;
        // `acc`'s row holds 32 values.
        unsafe {
            let sums = (
                _mm512_loadu_ps(acc.as_ptr()),
                _mm512_loadu_ps(acc.as_ptr().add(16)),
            );
            avx512::put_row(t, t.c.add((r0 + r) * t.ldc), sums, bias);
        }
    }
}

/// One step of 16 pairs: the A tiles from `a0` (and `a1` with `lower`)
/// at `a_stride`, the B tiles from `b0` and `b1` at `b_stride`, their
/// products added to the accumulators.
///
/// # Safety
///
/// The tiles configured; every row each tile reads valid for reads.
#[inline(always)]
unsafe fn step(
    a0: *const u8,
    a1: *const u8,
    a_stride: usize,
    b0: *const u8,
    b1: *const u8,
    b_stride: usize,
    lower: bool,
) {
    // SAFETY: the caller's contract.
    unsafe {
        if lower {
            asm!(
                "tileloadd tmm4, [{a0} + {as_}*1]",
                "tileloadd tmm6, [{b0} + {bs}*1]",
                "tdpbf16ps tmm0, tmm4, tmm6",
                "tileloadd tmm7, [{b1} + {bs}*1]",
                "tdpbf16ps tmm1, tmm4, tmm7",
                "tileloadd tmm5, [{a1} + {as_}*1]",
                "tdpbf16ps tmm2, tmm5, tmm6",
                "tdpbf16ps tmm3, tmm5, tmm7",
                a0 = in(reg) a0, a1 = in(reg) a1, as_ = in(reg) a_stride,
                b0 = in(reg) b0, b1 = in(reg) b1, bs = in(reg) b_stride,
                options(nostack, readonly),
            );
        } else {
            asm!(
                "tileloadd tmm6, [{b0} + {bs}*1]",
                "tileloadd tmm7, [{b1} + {bs}*1]",
                "tileloadd tmm4, [{a0} + {as_}*1]",
                "tdpbf16ps tmm0, tmm4, tmm6",
                "tdpbf16ps tmm1, tmm4, tmm7",
                a0 = in(reg) a0, as_ = in(reg) a_stride,
                b0 = in(reg) b0, b1 = in(reg) b1, bs = in(reg) b_stride,
                options(nostack, readonly),
            );
        }
    }
}
