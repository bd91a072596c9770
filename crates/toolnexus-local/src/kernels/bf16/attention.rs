//! Self-attention for encoders that run in bf16, on AVX-512 F: the same
//! packed rows and (row, head) tasks as [`super::super::attention`], without a
//! `gemm` call per product.
//!
//! Why a kernel of its own: a head's products are tiny (a MiniLM head is 32
//! wide, a short text 20 tokens), so `gemm`'s packing and dispatch cost more
//! than its arithmetic, and the softmax ran scalar, through libm's `expf`.
//! Here, per (row, head): the keys are transposed once; four queries at a
//! time, each query's scores against 32 keys are held in two registers while
//! the head's width passes (8 independent sums, enough to keep both FMA
//! units busy); the softmax runs 16 lanes wide with a polynomial `exp`
//! ([`exp`], within 2 ulp of the true value); and the context of the four
//! queries stays in registers while the values pass. Sums are in f32.
//!
//! Only the bf16 path runs it: f32 encoders keep the `gemm` path and its
//! bits. A shape it does not take (a sliding window, a head width that is not
//! a multiple of 16 up to 64) or a CPU without AVX-512 F falls back to that
//! path.
//!
//! The `unsafe` here: the vector loads and stores, each range inside a
//! buffer whose length is checked before the loop; the context pointer the
//! workers share, each writing only its (row, head) cells.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::super::{Attend, Rope, rotate, threads, wide};
use super::on_workers;

/// Queries whose scores and context are computed together.
const QUERIES: usize = 4;

/// Keys whose scores one pass computes for each query: two registers.
const KEYS: usize = 32;

/// Below this many multiply-adds in all the heads' products, attention runs
/// on the calling thread: handing work to another thread costs more.
const PARALLEL_ATTENTION: usize = 1 << 19;

/// Whether this kernel runs `a` on this machine.
pub(crate) fn supports(a: &Attend<'_>) -> bool {
    a.window.is_none()
        && a.head_dim.is_multiple_of(16)
        && (16..=64).contains(&a.head_dim)
        && wide::avx512()
}

/// Self-attention of packed rows as [`super::super::attention`] computes it
/// (rotary positions on q and k, each query's softmax over its row's keys),
/// in this kernel where it [`supports`] the shape and the CPU, else on the
/// `gemm` path.
pub(crate) fn attention(qkv: &[f32], rows: &[(usize, usize)], a: &Attend<'_>, ctx: &mut [f32]) {
    if !supports(a) {
        super::super::attention(qkv, rows, a, ctx);
        return;
    }
    let (hd, h) = (a.head_dim, a.heads * a.head_dim);
    let tokens = rows.iter().map(|(s, l)| s + l).max().unwrap_or(0);
    let longest = rows.iter().map(|r| r.1).max().unwrap_or(0);
    assert!(qkv.len() >= tokens * 3 * h && ctx.len() >= tokens * h);
    if let Some(r) = &a.rope {
        assert!(r.cos.len() >= longest * hd / 2 && r.sin.len() >= longest * hd / 2);
    }
    let tasks = rows.len() * a.heads;
    let work: usize = rows.iter().map(|r| r.1 * r.1).sum::<usize>() * a.heads * hd * 2;
    let t = match threads().min(tasks) {
        t if t > 1 && work >= PARALLEL_ATTENTION => t,
        _ => 1,
    };
    let next = AtomicUsize::new(0);
    let out = Ctx(ctx.as_mut_ptr());
    let worker = || {
        let out = &out;
        let mut buf = Buffers::new(longest, hd);
        loop {
            let task = next.fetch_add(1, Ordering::Relaxed);
            if task >= tasks {
                break;
            }
            let ((start, len), head) = (rows[task / a.heads], task % a.heads);
            if len == 0 {
                continue;
            }
            let task = Task {
                qkv,
                start,
                len,
                head,
                hd,
                h,
            };
            buf.gather(&task, a.rope.as_ref());
            // SAFETY: the CPU has AVX-512 F (`supports`); `qkv` holds the
            // row's tokens (checked above); the cells written are columns
            // `head·hd..(head+1)·hd` of rows `start..start + len` of `ctx`,
            // inside it (`start + len <= tokens`), and only this task, the
            // one for (this row, this head), touches them; `ctx` stays
            // borrowed by this function until the workers end.
            unsafe {
                match hd / 16 {
                    1 => head_of::<1>(&task, &mut buf, out.0),
                    2 => head_of::<2>(&task, &mut buf, out.0),
                    3 => head_of::<3>(&task, &mut buf, out.0),
                    _ => head_of::<4>(&task, &mut buf, out.0),
                }
            }
        }
    };
    on_workers(t, &worker);
}

/// The context pointer the workers share; each writes its own (row, head)
/// cells only.
struct Ctx(*mut f32);
// SAFETY: the workers write disjoint cells (see `attention`), and the
// function that holds them ends after they do, before the buffer is read.
unsafe impl Send for Ctx {}
unsafe impl Sync for Ctx {}

/// One (row, head): where its q, k and v are in the packed `[q | k | v]`.
struct Task<'a> {
    qkv: &'a [f32],
    /// The row's first token and its length (at least 1).
    start: usize,
    len: usize,
    head: usize,
    /// The head's width and the hidden size (`heads × hd`).
    hd: usize,
    h: usize,
}

impl Task<'_> {
    /// Where token `p`'s part (0 q, 1 k, 2 v) of this head starts in `qkv`.
    fn at(&self, p: usize, part: usize) -> usize {
        (self.start + p) * 3 * self.h + part * self.h + self.head * self.hd
    }
}

/// A worker's buffers, sized for the longest row once.
struct Buffers {
    /// The queries, scaled by 1/√hd: `len` rounded up to [`QUERIES`] rows of
    /// `hd` (the rows past `len` zero).
    q: Vec<f32>,
    /// The keys transposed: `hd` rows of `stride` (keys past `len` zero).
    kt: Vec<f32>,
    /// Scores, then the softmax's numerators, of [`QUERIES`] queries: rows of `stride`.
    s: Vec<f32>,
    /// The keys, rotated where the model has rotary positions: `len` rows of `hd`.
    k: Vec<f32>,
    /// The row length the transposed keys are laid out for: `len` rounded up to [`KEYS`].
    stride: usize,
}

impl Buffers {
    fn new(longest: usize, hd: usize) -> Buffers {
        let stride = longest.div_ceil(KEYS) * KEYS;
        Buffers {
            q: vec![0f32; longest.div_ceil(QUERIES) * QUERIES * hd],
            kt: vec![0f32; hd * stride],
            s: vec![0f32; QUERIES * stride],
            k: vec![0f32; longest * hd],
            stride,
        }
    }

    /// The task's queries (scaled) and keys (transposed) into the buffers,
    /// with rotary positions applied where the model has them.
    fn gather(&mut self, t: &Task<'_>, rope: Option<&Rope<'_>>) {
        let (hd, len) = (t.hd, t.len);
        let half = hd / 2;
        self.stride = len.div_ceil(KEYS) * KEYS;
        let stride = self.stride;
        let scale = 1.0 / (hd as f32).sqrt();
        prefetch(t);
        // The keys first into rows of their own, so the transposition below
        // reads them from L1 (its scattered stores would otherwise hold up
        // the reads of the next tokens).
        for p in 0..len {
            let (qs, ks) = (&t.qkv[t.at(p, 0)..][..hd], &t.qkv[t.at(p, 1)..][..hd]);
            let (q, k) = (
                &mut self.q[p * hd..(p + 1) * hd],
                &mut self.k[p * hd..(p + 1) * hd],
            );
            match rope {
                Some(r) => {
                    let (cos, sin) = (&r.cos[p * half..][..half], &r.sin[p * half..][..half]);
                    rotate(qs, cos, sin, q);
                    rotate(ks, cos, sin, k);
                }
                None => {
                    q.copy_from_slice(qs);
                    k.copy_from_slice(ks);
                }
            }
            q.iter_mut().for_each(|v| *v *= scale);
        }
        self.q[len * hd..len.div_ceil(QUERIES) * QUERIES * hd].fill(0.0);
        for (d, row) in self.kt.chunks_exact_mut(stride).take(hd).enumerate() {
            for (v, k) in row.iter_mut().zip(self.k.chunks_exact(hd).take(len)) {
                *v = k[d];
            }
            row[len..].fill(0.0);
        }
    }
}

/// Asks for the task's q, k and v lines ahead of their reads: each token's
/// are a few hundred bytes, thousands apart, likely in the other core's
/// cache (its half of the product wrote them).
fn prefetch(t: &Task<'_>) {
    #[cfg(target_arch = "x86_64")]
    for p in 0..t.len {
        for part in 0..3 {
            let at = t.at(p, part);
            for line in (0..t.hd).step_by(16) {
                if let Some(v) = t.qkv.get(at + line) {
                    // SAFETY: a prefetch reads nothing into the program and
                    // cannot fault; the address is inside `qkv` anyway.
                    unsafe {
                        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                            std::ptr::from_ref(v).cast(),
                        )
                    };
                }
            }
        }
    }
}

/// One (row, head) with a head `16·C` wide, its buffers gathered: the
/// context of each query into `ctx` (row `start + i`, columns
/// `head·hd..(head+1)·hd`, rows `h` apart).
///
/// # Safety
///
/// The CPU must have AVX-512 F; `buf` gathered for `t`; `t.hd == 16·C`;
/// `ctx` valid for writes of the cells named above, which nothing else
/// touches during the call.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn head_of<const C: usize>(t: &Task<'_>, buf: &mut Buffers, ctx: *mut f32) {
    use std::arch::x86_64::*;
    let (hd, len, stride) = (t.hd, t.len, buf.stride);
    assert!(hd == 16 * C && stride >= len && stride.is_multiple_of(KEYS));
    assert!(buf.q.len() >= len.div_ceil(QUERIES) * QUERIES * hd);
    assert!(buf.kt.len() >= hd * stride && buf.s.len() >= QUERIES * stride);
    assert!(t.qkv.len() >= t.at(len - 1, 2) + hd);
    let (q, kt, s) = (buf.q.as_ptr(), buf.kt.as_ptr(), buf.s.as_mut_ptr());
    let last = lanes(len % 16);
    for q0 in (0..len).step_by(QUERIES) {
        // Scores: s[r][j] = q[q0 + r] · k[j], 32 keys a pass.
        for j0 in (0..stride).step_by(KEYS) {
            let mut acc = [[_mm512_setzero_ps(); 2]; QUERIES];
            for d in 0..hd {
                // SAFETY: `d < hd`, `j0 + 32 <= stride`: inside `kt`;
                // `(q0 + r)·hd + d` < the gathered queries, padded to QUERIES.
                unsafe {
                    let k0 = _mm512_loadu_ps(kt.add(d * stride + j0));
                    let k1 = _mm512_loadu_ps(kt.add(d * stride + j0 + 16));
                    for (r, acc) in acc.iter_mut().enumerate() {
                        let x = _mm512_set1_ps(*q.add((q0 + r) * hd + d));
                        acc[0] = _mm512_fmadd_ps(x, k0, acc[0]);
                        acc[1] = _mm512_fmadd_ps(x, k1, acc[1]);
                    }
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                // SAFETY: `r·stride + j0 + 32 <= QUERIES·stride`: inside `s`.
                unsafe {
                    _mm512_storeu_ps(s.add(r * stride + j0), acc[0]);
                    _mm512_storeu_ps(s.add(r * stride + j0 + 16), acc[1]);
                }
            }
        }
        // Softmax numerators in place, keys past `len` zero; their sums' inverses.
        let mut inv = [0f32; QUERIES];
        for (r, inv) in inv.iter_mut().enumerate() {
            // SAFETY: row `r` of `s`, blocks below `len.div_ceil(16)·16 <= stride`.
            unsafe {
                let row = s.add(r * stride);
                let mask = |j: usize| if j + 16 <= len { 0xffff } else { last };
                let mut max = _mm512_set1_ps(f32::NEG_INFINITY);
                for j in (0..len).step_by(16) {
                    max = _mm512_mask_max_ps(max, mask(j), max, _mm512_loadu_ps(row.add(j)));
                }
                let max = _mm512_set1_ps(_mm512_reduce_max_ps(max));
                let mut total = _mm512_setzero_ps();
                for j in (0..len).step_by(16) {
                    let e = exp(_mm512_sub_ps(_mm512_loadu_ps(row.add(j)), max));
                    let e = _mm512_maskz_mov_ps(mask(j), e);
                    _mm512_storeu_ps(row.add(j), e);
                    total = _mm512_add_ps(total, e);
                }
                *inv = 1.0 / _mm512_reduce_add_ps(total);
            }
        }
        // Context: ctx[q0 + r] = Σⱼ s[r][j] · v[j] / total[r].
        let mut acc = [[_mm512_setzero_ps(); C]; QUERIES];
        for j in 0..len {
            // SAFETY: token `j < len` of the row: its v inside `qkv` (asserted
            // above for the last); `r·stride + j` inside `s`.
            unsafe {
                let v = t.qkv.as_ptr().add(t.at(j, 2));
                let mut vs = [_mm512_setzero_ps(); C];
                for (c, vs) in vs.iter_mut().enumerate() {
                    *vs = _mm512_loadu_ps(v.add(16 * c));
                }
                for (r, acc) in acc.iter_mut().enumerate() {
                    let p = _mm512_set1_ps(*s.add(r * stride + j));
                    for (acc, &v) in acc.iter_mut().zip(&vs) {
                        *acc = _mm512_fmadd_ps(p, v, *acc);
                    }
                }
            }
        }
        for (r, acc) in acc.iter().enumerate().take(len - q0) {
            let inv = _mm512_set1_ps(inv[r]);
            for (c, &acc) in acc.iter().enumerate() {
                // SAFETY: row `start + q0 + r` (`q0 + r < len`), columns
                // `head·hd + 16c..+16` of this head: the caller's cells.
                unsafe {
                    let at = (t.start + q0 + r) * t.h + t.head * hd + 16 * c;
                    _mm512_storeu_ps(ctx.add(at), _mm512_mul_ps(acc, inv));
                }
            }
        }
    }
}

/// Elsewhere [`supports`] is never true, so this is never called.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn head_of<const C: usize>(_: &Task<'_>, _: &mut Buffers, _: *mut f32) {}

/// A mask of the first `n` lanes, all 16 for `n == 0` (a full last block).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn lanes(n: usize) -> u16 {
    if n == 0 || n >= 16 {
        0xffff
    } else {
        (1u16 << n) - 1
    }
}

/// eˣ for each lane, x ≤ 0 (a score less the row's maximum): x = n·ln 2 + r
/// with |r| ≤ ln 2 / 2, eʳ by its Taylor polynomial to degree 6 (truncation
/// below 1.2e-7 relative), scaled by 2ⁿ. Below −87.3 (where eˣ leaves f32's
/// normal range) it gives e^−87.3, far too small to move a softmax.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) fn exp(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let x = _mm512_max_ps(x, _mm512_set1_ps(-87.3));
    let n = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
        _mm512_mul_ps(x, _mm512_set1_ps(std::f32::consts::LOG2_E)),
    );
    // ln 2 in two parts, so that n·ln 2 is taken off x exactly enough.
    let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693_145_75), x);
    let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428_606_8e-6), r);
    let mut p = _mm512_set1_ps(1.0 / 720.0);
    for c in [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
    }
    _mm512_scalef_ps(p, n)
}

#[cfg(test)]
mod tests;
