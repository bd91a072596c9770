//! The CPU kernels under the BERT and ModernBERT encoders: matrix products
//! straight on `gemm` into buffers the caller reuses from layer to layer,
//! LayerNorm, GELU (exact, with an erf accurate to f32) and GeGLU, attention
//! run per (row, head) with rotary positions applied on the way in where the
//! model has them, and the packed hidden states both encoders return.
//!
//! Why not candle's tensor ops here: a candle op allocates its output (fresh
//! pages, faulted in, for every intermediate of every layer), a batched
//! matrix product splits each small per-head product over threads that then
//! wait on each other, and a padded batch computes its padding. These kernels
//! take the real tokens only, packed row after row, give each thread whole
//! (row, head) pairs, and write into memory that is already there.
//!
//! The one `unsafe` call is [`gemm::gemm`], behind [`matmul`], which checks
//! every dimension against its slice before the call.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use candle_core::{CpuStorage, CustomOp1, Layout, Shape, Storage, StorageRef, Tensor};
use gemm::Parallelism;

use crate::weights::F32s;

pub(crate) mod bf16;
mod wide;

pub(crate) use bf16::Bf16Weights;
use bf16::{matmul_bf16, matmul_bf16_gelu};

/// Worker threads for the kernels: candle's own count (the cores, or
/// `RAYON_NUM_THREADS`), worked out once per process. candle works it out
/// anew on every call, reading `/proc/cpuinfo` each time: per product, that
/// cost more than a short text's whole forward pass.
pub(crate) fn threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| candle_core::utils::get_num_threads().max(1))
}

/// Below this many multiply-adds a product runs on one thread.
const PARALLEL_PRODUCT: usize = 1 << 20;

/// Below this many values an element-wise kernel runs on one thread.
const PARALLEL_VALUES: usize = 1 << 16;

/// A weight's f32 values, read in place under its storage's read lock: no
/// copy of the weights is ever made.
pub(crate) struct Held<'a> {
    guard: StorageRef<'a>,
    start: usize,
    len: usize,
}

impl<'a> Held<'a> {
    /// Holds `t`, which must be contiguous f32 on the CPU (every weight read
    /// by `read_safetensors` is).
    pub(crate) fn of(t: &'a Tensor) -> candle_core::Result<Held<'a>> {
        let (guard, layout) = t.storage_and_layout();
        let Some((start, end)) = layout.contiguous_offsets() else {
            candle_core::bail!("a weight of shape {:?} is not contiguous", t.dims());
        };
        if !matches!(&*guard, Storage::Cpu(CpuStorage::F32(_))) {
            candle_core::bail!("a weight of shape {:?} is not f32 on the CPU", t.dims());
        }
        Ok(Held {
            guard,
            start,
            len: end - start,
        })
    }

    /// The values, row-major.
    pub(crate) fn values(&self) -> &[f32] {
        match &*self.guard {
            Storage::Cpu(CpuStorage::F32(v)) => &v[self.start..self.start + self.len],
            // `of` admits nothing else.
            _ => &[],
        }
    }
}

/// A matrix in a slice: `rows × cols` values, row `i` starting at `i * stride`.
#[derive(Clone, Copy)]
pub(crate) struct Rows<'a> {
    pub data: &'a [f32],
    pub rows: usize,
    pub cols: usize,
    pub stride: usize,
}

impl<'a> Rows<'a> {
    /// `rows` rows of `cols` values, one after another.
    pub(crate) fn packed(data: &'a [f32], rows: usize, cols: usize) -> Rows<'a> {
        Rows {
            data,
            rows,
            cols,
            stride: cols,
        }
    }

    fn check(&self, what: &str) {
        assert!(
            self.stride >= self.cols
                && (self.rows == 0 || self.data.len() >= (self.rows - 1) * self.stride + self.cols),
            "{what}: {} values cannot hold {} rows of {} at stride {}",
            self.data.len(),
            self.rows,
            self.cols,
            self.stride
        );
    }
}

/// How a product's result meets its destination.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Out {
    /// The destination is overwritten.
    Overwrite,
    /// The result is added to what the destination holds.
    Add,
}

/// `out[i, j] (=|+=) scale · Σₖ a[i, k] · b(k, j)` for `a` `[m, k]`, where
/// `b(k, j)` is `b_data[k * b_rs + j * b_cs]` and `out` holds `m` rows of `n`
/// at `out_stride`. Panics (a bug here, never an input) if a slice is too
/// short for its dimensions.
#[allow(clippy::too_many_arguments)]
fn matmul(
    a: Rows<'_>,
    b_data: &[f32],
    b_strides: (usize, usize),
    n: usize,
    out: &mut [f32],
    out_stride: usize,
    into: Out,
    scale: f32,
    parallel: bool,
) {
    Rows {
        data: out,
        rows: a.rows,
        cols: n,
        stride: out_stride,
    }
    .check("destination");
    // SAFETY: `out` was just checked for `m` rows of `n` at `out_stride`, and
    // it is borrowed mutably, so nothing else touches it during the call.
    unsafe {
        matmul_to(
            a,
            b_data,
            b_strides,
            n,
            out.as_mut_ptr(),
            out_stride,
            into,
            scale,
            parallel,
        )
    }
}

/// [`matmul`] into cells a pointer names.
///
/// # Safety
///
/// `out.add(i * out_stride + j)` must be valid for reads and writes for every
/// `i < a.rows`, `j < n`, and nothing else may access those cells during the
/// call (other cells between them may be in use elsewhere: they are not touched).
#[allow(clippy::too_many_arguments)]
unsafe fn matmul_to(
    a: Rows<'_>,
    b_data: &[f32],
    (b_rs, b_cs): (usize, usize),
    n: usize,
    out: *mut f32,
    out_stride: usize,
    into: Out,
    scale: f32,
    parallel: bool,
) {
    let (m, k) = (a.rows, a.cols);
    if m == 0 || n == 0 {
        return;
    }
    a.check("left operand");
    let b_last = if k == 0 {
        0
    } else {
        (k - 1) * b_rs + (n - 1) * b_cs + 1
    };
    assert!(b_data.len() >= b_last, "right operand too short");
    let parallelism = match threads() {
        t if t > 1 && parallel && m * n * k >= PARALLEL_PRODUCT => Parallelism::Rayon(t),
        _ => Parallelism::None,
    };
    // SAFETY: gemm reads `a` and `b` inside their slices (checked above for
    // `m` rows of `k` and for the last element `(k-1, n-1)`), and reads and
    // writes only the `m × n` destination cells the caller vouches for.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out,
            1,
            out_stride as isize,
            into == Out::Add,
            a.data.as_ptr(),
            1,
            a.stride as isize,
            b_data.as_ptr(),
            b_cs as isize,
            b_rs as isize,
            1.0,
            scale,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// A linear layer on `x`'s rows: `out[i] (=|+=) x[i] · w + bias` with `w`
/// `[k, n]` row-major: PyTorch's `[n, k]` weight [`transpose`]d.
pub(crate) fn linear(
    x: Rows<'_>,
    w: &[f32],
    bias: Option<&[f32]>,
    out: &mut [f32],
    out_stride: usize,
    into: Out,
) {
    let k = x.cols;
    assert!(
        k > 0 && w.len().is_multiple_of(k),
        "weight does not fit the input"
    );
    let n = w.len() / k;
    let into = match bias {
        Some(b) => {
            assert_eq!(b.len(), n, "bias does not fit the weight");
            for row in out.chunks_mut(out_stride).take(x.rows) {
                let row = &mut row[..n];
                if into == Out::Add {
                    row.iter_mut().zip(b).for_each(|(o, b)| *o += b);
                } else {
                    row.copy_from_slice(b);
                }
            }
            Out::Add
        }
        None => into,
    };
    matmul(x, w, (n, 1), n, out, out_stride, into, 1.0, true);
}

/// Runs `work` over `out` cut into whole rows of `row_len` values, on up to
/// [`threads`] threads when there is enough of it; `work` gets the index of
/// its first row.
pub(crate) fn rows_in_parallel(
    out: &mut [f32],
    row_len: usize,
    work: impl Fn(usize, &mut [f32]) + Sync,
) {
    let rows = out.len() / row_len.max(1);
    let t = threads().min(rows.max(1));
    if t <= 1 || out.len() < PARALLEL_VALUES {
        work(0, out);
        return;
    }
    let per = rows.div_ceil(t);
    // On rayon's pool, which stays up between calls: a scoped thread of its
    // own per call cost tens of µs to start and join, and faulted in a fresh
    // stack, about twenty times per forward pass. The calling thread takes
    // the first rows itself. The rows each thread gets are as before.
    rayon::in_place_scope(|s| {
        let work = &work;
        let mut chunks = out.chunks_mut(per * row_len).enumerate();
        let mine = chunks.next();
        for (i, chunk) in chunks {
            s.spawn(move |_| work(i * per, chunk));
        }
        if let Some((i, chunk)) = mine {
            work(i * per, chunk);
        }
    });
}

/// LayerNorm over rows of `d` values: `(x − mean) / √(var + eps) · w + b`.
/// With `lanes`, the variance is summed in sixteen lanes (the bf16 path's:
/// a running sum in one lane, as f32 sums it, waits on each addition).
pub(crate) fn layer_norm(
    x: &[f32],
    out: &mut [f32],
    d: usize,
    w: &[f32],
    b: Option<&[f32]>,
    eps: f32,
    lanes: bool,
) {
    assert!(x.len() == out.len() && w.len() == d && b.is_none_or(|b| b.len() == d));
    rows_in_parallel(out, d, |first, out| {
        let x = &x[first * d..first * d + out.len()];
        match lanes {
            true => wide::norm_rows_lanes(x, out, d, w, b, eps),
            false => wide::norm_rows(x, out, d, w, b, eps),
        }
    });
}

/// [`layer_norm`] of whole rows, `x` and `out` holding the same rows (the
/// loop [`wide::norm_rows`] compiles twice), the variance summed in one lane
/// or, with `LANES`, in sixteen.
#[inline(always)]
fn norm_rows_body<const LANES: bool>(
    x: &[f32],
    out: &mut [f32],
    d: usize,
    w: &[f32],
    b: Option<&[f32]>,
    eps: f32,
) {
    for (x, o) in x.chunks_exact(d).zip(out.chunks_mut(d)) {
        let mean = sum(x) / d as f32;
        let var = match LANES {
            true => wide::sum_of_squares(x, mean),
            false => x.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>(),
        } / d as f32;
        let inv = 1.0 / (var + eps).sqrt();
        match b {
            Some(b) => {
                for (((o, &v), &w), &b) in o.iter_mut().zip(x).zip(w).zip(b) {
                    *o = (v - mean) * inv * w + b;
                }
            }
            None => {
                for ((o, &v), &w) in o.iter_mut().zip(x).zip(w) {
                    *o = (v - mean) * inv * w;
                }
            }
        }
    }
}

/// A sum in eight lanes, so the compiler may vectorise it.
#[inline(always)]
fn sum(x: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let chunks = x.chunks_exact(8);
    let tail: f32 = chunks.remainder().iter().sum();
    for c in chunks {
        for (l, v) in lanes.iter_mut().zip(c) {
            *l += v;
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// GeGLU: for rows of `2 · i` values `[input | gate]`, `out = gelu(input) · gate`
/// (the exact, erf GELU), rows of `i` values.
pub(crate) fn geglu(up: &[f32], out: &mut [f32], i: usize) {
    assert_eq!(up.len(), 2 * out.len());
    rows_in_parallel(out, i, |first, out| {
        for (r, o) in out.chunks_mut(i).enumerate() {
            let row = &up[(first + r) * 2 * i..(first + r + 1) * 2 * i];
            let (input, gate) = row.split_at(i);
            gelu(input, o);
            o.iter_mut().zip(gate).for_each(|(o, g)| *o *= g);
        }
    });
}

/// Rotary positions for one attention kind: `cos` and `sin` of
/// `[positions, head_dim / 2]`.
pub(crate) struct Rope<'a> {
    pub cos: &'a [f32],
    pub sin: &'a [f32],
}

/// One attention kind's shape.
pub(crate) struct Attend<'a> {
    pub heads: usize,
    pub head_dim: usize,
    /// Rotary positions, if the model uses them.
    pub rope: Option<Rope<'a>>,
    /// `Some(w)`: a query sees keys at most `w` positions away; `None`: every key.
    pub window: Option<usize>,
    /// Queries scored at once: bounds the scores to `block × keys` floats.
    pub block: usize,
}

/// A pointer the attention workers share; each writes its own (row, head)
/// cells only.
struct Shared(*mut f32);
// SAFETY: the workers write disjoint cells (see `attention`), and the scope
// that holds them ends before the buffer is read.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

/// Self-attention of packed rows: `qkv` holds, for each token of each row in
/// turn, its `[q | k | v]` (`3 · heads · head_dim` values); `rows` gives each
/// row's first token and length. Rotary positions (0 at each row's start) go
/// onto q and k; each query's softmax runs over its row's keys (within the
/// window); the context, `heads · head_dim` per token, goes to `ctx`.
pub(crate) fn attention(qkv: &[f32], rows: &[(usize, usize)], a: &Attend<'_>, ctx: &mut [f32]) {
    let (hd, h) = (a.head_dim, a.heads * a.head_dim);
    let half = hd / 2;
    let tokens = rows.iter().map(|(s, l)| s + l).max().unwrap_or(0);
    let longest = rows.iter().map(|r| r.1).max().unwrap_or(0);
    assert!(qkv.len() >= tokens * 3 * h && ctx.len() >= tokens * h);
    if let Some(r) = &a.rope {
        assert!(r.cos.len() >= longest * half && r.sin.len() >= longest * half);
    }
    let tasks = rows.len() * a.heads;
    let next = AtomicUsize::new(0);
    let out = Shared(ctx.as_mut_ptr());
    let worker = || {
        let out = &out;
        let block = a.block.max(1);
        let mut q = vec![0f32; longest * hd];
        let mut k = vec![0f32; longest * hd];
        let mut scores = vec![0f32; block.min(longest) * longest];
        loop {
            let task = next.fetch_add(1, Ordering::Relaxed);
            if task >= tasks {
                break;
            }
            let ((start, len), head) = (rows[task / a.heads], task % a.heads);
            for p in 0..len {
                let at = (start + p) * 3 * h + head * hd;
                let (qs, ks) = (&qkv[at..at + hd], &qkv[at + h..at + h + hd]);
                let (qo, ko) = (&mut q[p * hd..(p + 1) * hd], &mut k[p * hd..(p + 1) * hd]);
                match &a.rope {
                    Some(r) => {
                        let (cos, sin) = (&r.cos[p * half..][..half], &r.sin[p * half..][..half]);
                        rotate(qs, cos, sin, qo);
                        rotate(ks, cos, sin, ko);
                    }
                    None => {
                        qo.copy_from_slice(qs);
                        ko.copy_from_slice(ks);
                    }
                }
            }
            let scale = 1.0 / (hd as f32).sqrt();
            for q0 in (0..len).step_by(block) {
                let qn = block.min(len - q0);
                let (k0, k1) = match a.window {
                    Some(w) => (q0.saturating_sub(w), (q0 + qn + w).min(len)),
                    None => (0, len),
                };
                let kw = k1 - k0;
                let s = &mut scores[..qn * kw];
                // scores = scale · Q[q0..] · K[k0..k1]ᵀ
                matmul(
                    Rows {
                        data: &q[q0 * hd..(q0 + qn) * hd],
                        rows: qn,
                        cols: hd,
                        stride: hd,
                    },
                    &k[k0 * hd..k1 * hd],
                    (1, hd),
                    kw,
                    s,
                    kw,
                    Out::Overwrite,
                    scale,
                    false,
                );
                for (i, row) in s.chunks_mut(kw).enumerate() {
                    let qi = q0 + i;
                    let (lo, hi) = match a.window {
                        Some(w) => (qi.saturating_sub(w) - k0, (qi + w + 1).min(k1) - k0),
                        None => (0, kw),
                    };
                    softmax_within(row, lo, hi);
                }
                // ctx[q0..] (this head's columns) = P · V[k0..k1]
                let v_at = (start + k0) * 3 * h + 2 * h + head * hd;
                let dst = (start + q0) * h + head * hd;
                // SAFETY: the cells are columns `head·hd..(head+1)·hd` of
                // rows `start + q0..start + q0 + qn` of `ctx`, inside it
                // (checked above: `start + len <= tokens`), and only this
                // task, the one for (this row, this head), touches them;
                // `ctx` stays borrowed by this function until the workers end.
                unsafe {
                    matmul_to(
                        Rows {
                            data: s,
                            rows: qn,
                            cols: kw,
                            stride: kw,
                        },
                        &qkv[v_at..],
                        (3 * h, 1),
                        hd,
                        out.0.add(dst),
                        h,
                        Out::Overwrite,
                        1.0,
                        false,
                    );
                }
            }
        }
    };
    let t = threads().min(tasks);
    if t <= 1 {
        worker();
    } else {
        std::thread::scope(|s| {
            for _ in 0..t {
                s.spawn(worker);
            }
        });
    }
}

/// Rotary position embedding, the half-split form: with `x = [x1 | x2]`,
/// `[x1·cos − x2·sin | x2·cos + x1·sin]`.
fn rotate(x: &[f32], cos: &[f32], sin: &[f32], out: &mut [f32]) {
    let half = cos.len();
    let (x1, x2) = x.split_at(half);
    let (o1, o2) = out.split_at_mut(half);
    for i in 0..half {
        o1[i] = x1[i] * cos[i] - x2[i] * sin[i];
        o2[i] = x2[i] * cos[i] + x1[i] * sin[i];
    }
}

/// A softmax over `row[lo..hi]`; the rest of the row becomes 0.
fn softmax_within(row: &mut [f32], lo: usize, hi: usize) {
    let max = row[lo..hi]
        .iter()
        .copied()
        .fold(f32::NEG_INFINITY, f32::max);
    let mut total = 0f32;
    for v in &mut row[lo..hi] {
        *v = (*v - max).exp();
        total += *v;
    }
    let inv = 1.0 / total;
    row[lo..hi].iter_mut().for_each(|v| *v *= inv);
    row[..lo].fill(0.0);
    row[hi..].fill(0.0);
}

/// `src` (`rows × cols`, row-major) transposed, in cache-sized tiles, the
/// columns split over threads.
pub(crate) fn transpose(src: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    assert_eq!(src.len(), rows * cols);
    const TILE: usize = 32;
    let mut out = vec![0f32; src.len()];
    if rows == 0 {
        return out;
    }
    // Row `c` of the result is column `c` of `src`.
    rows_in_parallel(&mut out, rows, |first, out| {
        let n = out.len() / rows;
        for c0 in (0..n).step_by(TILE) {
            for r0 in (0..rows).step_by(TILE) {
                for c in c0..(c0 + TILE).min(n) {
                    for r in r0..(r0 + TILE).min(rows) {
                        out[c * rows + r] = src[r * cols + first + c];
                    }
                }
            }
        }
    });
    out
}

/// A tensor taken out of a checkpoint's map (so it is held once), checked
/// against the shape its config implies.
pub(crate) fn take(
    map: &mut HashMap<String, Tensor>,
    name: &str,
    dims: &[usize],
) -> candle_core::Result<Tensor> {
    as_f32(take_as_stored(map, name, dims)?)
}

/// `t` as f32: itself when it is, else converted (a copy).
fn as_f32(t: Tensor) -> candle_core::Result<Tensor> {
    match t.dtype() {
        candle_core::DType::F32 => Ok(t),
        _ => t.to_dtype(candle_core::DType::F32),
    }
}

/// [`take`], in the type the file stores (a half-precision tensor that
/// [`read_safetensors`](crate::modernbert::read_safetensors) was asked to keep).
pub(crate) fn take_as_stored(
    map: &mut HashMap<String, Tensor>,
    name: &str,
    dims: &[usize],
) -> candle_core::Result<Tensor> {
    let t = map
        .remove(name)
        .ok_or_else(|| candle_core::Error::Msg(format!("cannot find tensor {name}")))?;
    if t.dims() != dims {
        candle_core::bail!(
            "shape mismatch for {name}, expected {dims:?}, got {:?}",
            t.dims()
        );
    }
    Ok(t)
}

/// A linear layer's weights. In f32, the matrix in `[in, out]`, the layout
/// the matrix product packs fastest: PyTorch's `[out, in]` transposed, at
/// load or once into the prepared layout beside the weights
/// ([`crate::weights::prepared`]) and read from there in place. In bf16,
/// packed once for [`bf16::matmul_bf16`], and no f32 copy kept.
pub(crate) struct Lin {
    w: LinWeight,
    b: Option<F32s>,
}

/// A linear layer's matrix in the precision its encoder runs in.
enum LinWeight {
    /// `[in, out]` f32.
    F32(F32s),
    /// bf16, packed.
    Bf16(Bf16Weights),
}

impl Lin {
    /// From PyTorch's `[out, in]` weight (f32, contiguous) and its bias, in
    /// bf16 when `bf16`.
    pub(crate) fn new(w: Tensor, b: Option<Tensor>, bf16: bool) -> candle_core::Result<Lin> {
        let (out, inp) = w.dims2()?;
        let b = b
            .as_ref()
            .map(|b| Held::of(b).map(|b| F32s::from(b.values().to_vec())))
            .transpose()?;
        if bf16 && w.dtype() != candle_core::DType::F32 {
            // A weight kept as stored (f16 or bf16) is packed a row at a time,
            // never upcast whole: a load in bf16 then frees no large f32
            // buffer, which would leave the allocator's heap fragmented and
            // the process's peak memory hundreds of MB higher.
            let first = w.get(0).and_then(|r| r.to_dtype(candle_core::DType::F32))?;
            Held::of(&first)?;
            let packed = Bf16Weights::from_out_rows(out, inp, |j, row| {
                // Cannot fail: `j` is within the rows checked above, and the
                // first row converted and read as this one will.
                let r = w.get(j).and_then(|r| r.to_dtype(candle_core::DType::F32));
                if let Some(held) = r.as_ref().ok().and_then(|r| Held::of(r).ok()) {
                    row.copy_from_slice(held.values());
                }
            });
            return Ok(Lin::bf16(packed, b));
        }
        let w = as_f32(w)?;
        let held = Held::of(&w)?;
        Ok(match bf16 {
            true => Lin::bf16(Bf16Weights::from_out_in(held.values(), out, inp), b),
            false => Lin::transposed(held.values(), (out, inp), b),
        })
    }

    /// From PyTorch's `[out, in]` weight `w` (transposed here) and its bias.
    pub(crate) fn transposed(w: &[f32], (out, inp): (usize, usize), b: Option<F32s>) -> Lin {
        Lin {
            w: LinWeight::F32(F32s::from(transpose(w, out, inp))),
            b,
        }
    }

    /// From a weight already `[in, out]` and its bias.
    pub(crate) fn prepared(wt: F32s, b: Option<F32s>) -> Lin {
        Lin {
            w: LinWeight::F32(wt),
            b,
        }
    }

    /// From a weight already packed in bf16 and its bias.
    pub(crate) fn bf16(w: Bf16Weights, b: Option<F32s>) -> Lin {
        Lin {
            w: LinWeight::Bf16(w),
            b,
        }
    }

    /// The weight, `[in, out]` row-major, when it is kept in f32.
    pub(crate) fn weight_t(&self) -> Option<&[f32]> {
        match &self.w {
            LinWeight::F32(wt) => Some(wt.values()),
            LinWeight::Bf16(_) => None,
        }
    }

    /// Whether the weight is kept in bf16.
    pub(crate) fn is_bf16(&self) -> bool {
        matches!(self.w, LinWeight::Bf16(_))
    }

    /// Whether the weight is read in place from a mapped file.
    #[cfg(test)]
    pub(crate) fn weight_is_in_place(&self) -> bool {
        match &self.w {
            LinWeight::F32(wt) => wt.is_in_place(),
            LinWeight::Bf16(_) => false,
        }
    }
}

/// A LayerNorm's weights and epsilon.
pub(crate) struct Norm {
    w: F32s,
    b: Option<F32s>,
    eps: f32,
}

impl Norm {
    /// A norm of weight `w`, bias `b` and epsilon `eps`.
    pub(crate) fn new(w: F32s, b: Option<F32s>, eps: f32) -> Norm {
        Norm { w, b, eps }
    }

    /// `{name}.weight` (and `{name}.bias` when `bias`) of `size`, taken out of `map`.
    pub(crate) fn take(
        map: &mut HashMap<String, Tensor>,
        name: &str,
        size: usize,
        bias: bool,
        eps: f32,
    ) -> candle_core::Result<Norm> {
        let owned = |t: Tensor| Held::of(&t).map(|h| F32s::from(h.values().to_vec()));
        let w = owned(take(map, &format!("{name}.weight"), &[size])?)?;
        let b = if bias {
            Some(owned(take(map, &format!("{name}.bias"), &[size])?)?)
        } else {
            None
        };
        Ok(Norm { w, b, eps })
    }
}

/// A linear layer's weights, read in place for one pass.
pub(crate) struct HeldLin<'a> {
    w: HeldWeight<'a>,
    b: Option<&'a [f32]>,
}

/// A linear layer's matrix as one pass reads it.
enum HeldWeight<'a> {
    /// `[in, out]` f32.
    F32(&'a [f32]),
    /// bf16, packed.
    Bf16(&'a Bf16Weights),
}

impl<'a> HeldLin<'a> {
    pub(crate) fn of(l: &'a Lin) -> candle_core::Result<HeldLin<'a>> {
        Ok(HeldLin {
            w: match &l.w {
                LinWeight::F32(wt) => HeldWeight::F32(wt.values()),
                LinWeight::Bf16(w) => HeldWeight::Bf16(w),
            },
            b: l.b.as_ref().map(F32s::values),
        })
    }

    /// `out[i] (=|+=) x[i] · W + b` for `x`'s rows, `out` packed: in f32 on
    /// `gemm`, or in bf16 (f32 accumulation) when the weight is kept in bf16.
    pub(crate) fn apply(&self, x: Rows<'_>, out: &mut [f32], into: Out) {
        match self.w {
            HeldWeight::F32(wt) => {
                let out_stride = wt.len() / x.cols;
                linear(x, wt, self.b, out, out_stride, into);
            }
            HeldWeight::Bf16(w) => matmul_bf16(x, w, self.b, out, w.outputs(), into),
        }
    }

    /// [`apply`](HeldLin::apply) to GELU of `x`; in bf16 without writing
    /// GELU's output anywhere (each row goes through it on its way to bf16).
    pub(crate) fn apply_gelu(&self, x: Rows<'_>, out: &mut [f32], into: Out) {
        match self.w {
            HeldWeight::Bf16(w) => matmul_bf16_gelu(x, w, self.b, out, w.outputs(), into),
            HeldWeight::F32(_) => {
                let mut act = vec![0f32; x.rows * x.cols];
                for (r, act) in act.chunks_mut(x.cols.max(1)).enumerate() {
                    gelu(&x.data[r * x.stride..][..x.cols], act);
                }
                self.apply(Rows::packed(&act, x.rows, x.cols), out, into);
            }
        }
    }
}

/// A LayerNorm's weights, read in place for one pass.
pub(crate) struct HeldNorm<'a> {
    w: &'a [f32],
    b: Option<&'a [f32]>,
    eps: f32,
}

impl<'a> HeldNorm<'a> {
    pub(crate) fn of(n: &'a Norm) -> candle_core::Result<HeldNorm<'a>> {
        Ok(HeldNorm {
            w: n.w.values(),
            b: n.b.as_ref().map(F32s::values),
            eps: n.eps,
        })
    }

    /// The norm of each row of `x` into `out`.
    pub(crate) fn apply(&self, x: &[f32], out: &mut [f32]) {
        layer_norm(x, out, self.w.len(), self.w, self.b, self.eps, false);
    }

    /// [`apply`](HeldNorm::apply) with the variance summed in sixteen lanes:
    /// the bf16 path's (not f32's bits, within f32 rounding of them).
    pub(crate) fn apply_lanes(&self, x: &[f32], out: &mut [f32]) {
        layer_norm(x, out, self.w.len(), self.w, self.b, self.eps, true);
    }
}

/// Each row's first token when rows of `lengths` are packed end to end, and
/// the tokens in all.
pub(crate) fn packed_starts(lengths: &[usize]) -> (Vec<usize>, usize) {
    let mut at = 0;
    let starts = lengths
        .iter()
        .map(|&l| {
            let s = at;
            at += l;
            s
        })
        .collect();
    (starts, at)
}

/// Whole rows of a packed batch run through a layer together.
pub(crate) struct Group {
    pub first_row: usize,
    pub row_count: usize,
    pub first_token: usize,
    pub tokens: usize,
}

impl Group {
    /// Each of the group's rows as (first token within the group, length).
    pub(crate) fn rows(&self, starts: &[usize], lengths: &[usize]) -> Vec<(usize, usize)> {
        (self.first_row..self.first_row + self.row_count)
            .map(|r| (starts[r] - self.first_token, lengths[r]))
            .collect()
    }
}

/// Rows of `lengths` in order, in groups of at most `most` tokens (a longer
/// row alone).
pub(crate) fn groups(lengths: &[usize], most: usize) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    let mut at = 0;
    for (row, &len) in lengths.iter().enumerate() {
        match groups.last_mut() {
            Some(g) if g.tokens + len <= most => {
                g.row_count += 1;
                g.tokens += len;
            }
            _ => groups.push(Group {
                first_row: row,
                row_count: 1,
                first_token: at,
                tokens: len,
            }),
        }
        at += len;
    }
    groups
}

/// Hidden states of real tokens only, packed row after row.
pub(crate) struct Packed {
    /// `[tokens, hidden]`, row-major.
    pub data: Vec<f32>,
    /// Each row's first token.
    pub starts: Vec<usize>,
    pub hidden: usize,
}

impl Packed {
    /// Token `p` of row `row`.
    pub(crate) fn token(&self, row: usize, p: usize) -> &[f32] {
        let at = (self.starts[row] + p) * self.hidden;
        &self.data[at..at + self.hidden]
    }
}

/// [`gelu`] over rows of `width` values, split over threads for large inputs.
pub(crate) fn gelu_rows(src: &[f32], out: &mut [f32], width: usize) {
    rows_in_parallel(out, width, |first, out| {
        gelu(&src[first * width..first * width + out.len()], out);
    });
}

/// [`gelu`] as a candle op on a contiguous f32 tensor, for the small heads
/// that run on candle tensors (Laya's scorer and act head).
pub(crate) struct Gelu;

impl CustomOp1 for Gelu {
    fn name(&self) -> &'static str {
        "gelu-erf"
    }

    fn cpu_fwd(
        &self,
        storage: &CpuStorage,
        layout: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let CpuStorage::F32(data) = storage else {
            candle_core::bail!("gelu-erf takes f32 only");
        };
        let Some((start, end)) = layout.contiguous_offsets() else {
            candle_core::bail!("gelu-erf takes a contiguous tensor");
        };
        let mut out = vec![0f32; end - start];
        gelu_rows(&data[start..end], &mut out, 1);
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }
}

/// GELU with the exact (erf) form BERT uses, with an erf accurate to f32
/// rounding.
pub(crate) fn gelu(src: &[f32], out: &mut [f32]) {
    wide::gelu(src, out);
}

/// [`gelu`]'s loop (the one [`wide::gelu`] compiles twice).
#[inline(always)]
fn gelu_body(src: &[f32], out: &mut [f32]) {
    for (o, &x) in out.iter_mut().zip(src) {
        *o = 0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// erf(x) in f32 as a rational function of x (odd degree 13 over even degree
/// 8, on [-4, 4]; ±1 to f32 precision outside). Absolute error below 1e-7.
#[inline(always)]
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.726_142_3e-10_f32;
    p = p * x2 + 2.770_681_4e-8;
    p = p * x2 - 2.101_024e-6;
    p = p * x2 - 5.692_506_4e-5;
    p = p * x2 - 7.349_906_3e-4;
    p = p * x2 - 2.954_6e-3;
    p = p * x2 - 1.609_603_3e-2;
    let mut q = -1.456_607_2e-5_f32;
    q = q * x2 - 2.133_740_6e-4;
    q = q * x2 - 1.682_827e-3;
    q = q * x2 - 7.373_329e-3;
    q = q * x2 - 1.426_474e-2;
    x * p / q
}

/// Numbers in [-1, 1) from a fixed seed (xorshift), so every run of a kernel
/// test sees the same.
#[cfg(test)]
pub(crate) fn test_numbers(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

#[cfg(test)]
mod tests;
