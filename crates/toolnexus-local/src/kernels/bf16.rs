//! Linear layers in bf16: the weights converted once (round to nearest, ties
//! to even) and packed into panels for the dot-product instruction, the
//! activations converted on the fly, every product accumulated in f32.
//!
//! Why bf16: a bf16 product of two values is exact in f32, and the
//! AVX-512 BF16 instruction `vdpbf16ps` multiplies and adds 32 such pairs
//! per 512-bit register, twice the multiply-adds of an f32 FMA, from half the
//! memory. The weights stay in bf16 (half the bytes of f32); the activations
//! lose their low 16 bits of mantissa on the way in, which is what torch's
//! bf16 autocast does too.
//!
//! Layout: the weight `[in, out]` is cut into panels of [`PANEL`] output
//! columns; within a panel, input pair `p` (inputs `2p` and `2p + 1`) is two
//! 64-byte [`Line`]s, one per 16 columns, each column holding its two bf16
//! values side by side: exactly what one `vdpbf16ps` lane multiplies. An
//! odd last input, and the last panel's columns past the weight's outputs, are
//! zeros.
//! The activations are converted row by row to bf16 (an odd row padded with
//! a zero), so each 32-bit word of a converted row is one input pair, which
//! the kernel broadcasts to every lane. Each row is converted once per
//! product, before the panels are shared out, and every worker reads it.
//!
//! Which path runs is decided once per process ([`unit`](fn@unit)): AVX-512 BF16
//! where the CPU has it, a portable path (the same packing, plain loops, the
//! same rounding) elsewhere; the portable path is also the reference the
//! tests hold the vector path to. The tile kernel ([`amx`]) runs the same
//! products on AMX: the panels are its right-hand tiles as they lie (a tile
//! row is one input pair of 16 columns, a panel line), and 16 converted rows
//! of 16 pairs its left-hand tile; the rows are still converted by AVX-512
//! BF16, which every AMX CPU has. It runs where the tiles are asked for by
//! name and Linux grants them, and is not yet what the detection picks
//! ([`AMX_KERNEL`] says why).
//!
//! The `unsafe` here: the vector and tile kernels' raw reads and writes, each
//! range checked against its slice before the call; the output pointer
//! shared by threads that write disjoint columns; and the detection's
//! `xgetbv` and `arch_prctl` system call, which touch no memory of ours.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{Out, PARALLEL_PRODUCT, Rows, threads};
use toolnexus::classifier::Evaluated;

use crate::engine::Precision;
use crate::error::{LocalError, msg};

pub(crate) mod attention;

/// Output columns in one packed panel: two 16-lane vectors.
const PANEL: usize = 32;

/// Rows of the output one call of the vector kernel computes: 12 rows × 2
/// vectors hold 24 accumulators, enough to hide the instruction's latency,
/// and leave registers for the two weight vectors and the broadcast.
const MR: usize = 12;

/// Below this many multiply-adds (about 75 µs of one core's bf16 work) a
/// product runs on one thread: a scoped thread costs tens of µs to start and
/// join (40–115 µs measured on a shared 2-core machine), so splitting a
/// smaller product saves less than it costs.
const PARALLEL_BF16: usize = 1 << 23;

/// One 64-byte line of a packed panel: 16 columns × one input pair, each
/// column's pair one word (the even input in the low half).
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Line([u32; 16]);

const ZERO_LINE: Line = Line([0; 16]);

/// `x` in bf16, rounded to nearest with ties to even, as `vcvtne2ps2bf16`
/// rounds it: a NaN stays a (quiet) NaN, and a subnormal becomes a zero of
/// its sign.
pub(crate) fn to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        return ((bits >> 16) as u16) | 0x0040;
    }
    if bits & 0x7f80_0000 == 0 {
        return ((bits >> 16) as u16) & 0x8000;
    }
    let rounded = bits + 0x7fff + ((bits >> 16) & 1);
    (rounded >> 16) as u16
}

/// The f32 a bf16 value stands for (exact).
pub(crate) fn from_bf16(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// What this machine has for bf16 products.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bf16Unit {
    /// AMX tiles with bf16, and the OS granted this process their state
    /// (never detected while [`AMX_KERNEL`] is false; asked for by name, the
    /// tiles run wherever Linux grants them).
    Amx,
    /// AVX-512 BF16 (`vdpbf16ps`).
    Avx512,
    /// Neither: the products run on the portable path, correct but without
    /// any speed-up over f32.
    Portable,
}

impl Bf16Unit {
    /// The name a report or a debug line gives it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Bf16Unit::Amx => "amx-bf16",
            Bf16Unit::Avx512 => "avx512-bf16",
            Bf16Unit::Portable => "none",
        }
    }

    /// Whether the hardware multiplies bf16 itself (what `bf16` needs).
    pub(crate) fn in_hardware(self) -> bool {
        self != Bf16Unit::Portable
    }

    /// Whether products on this unit outrun f32's on a CPU of `vendor`'s
    /// (what `auto` asks for). The tiles do everywhere. AVX-512 BF16 does on
    /// AMD's cores (1.6–2.3× a MiniLM batch on Zen 4), not on Intel's: on a
    /// Xeon (Emerald Rapids) its products ran at 0.51–0.97× f32's and a MiniLM
    /// batch at 0.63× (BENCHMARKS.md), so `auto` keeps f32 there.
    pub(crate) fn outruns_f32(self, vendor: Vendor) -> bool {
        match self {
            Bf16Unit::Amx => true,
            Bf16Unit::Avx512 => vendor != Vendor::Intel,
            Bf16Unit::Portable => false,
        }
    }
}

/// Whose CPU this is, as far as `auto` cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Vendor {
    /// `GenuineIntel`.
    Intel,
    /// Any other (AMD's `AuthenticAMD` among them).
    Other,
}

/// This CPU's vendor, read once from CPUID leaf 0.
pub(crate) fn vendor() -> Vendor {
    static VENDOR: OnceLock<Vendor> = OnceLock::new();
    *VENDOR.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            let id = std::arch::x86_64::__cpuid(0);
            // "Genu" "ineI" "ntel", in EBX, EDX, ECX.
            if (id.ebx, id.edx, id.ecx) == (0x756e_6547, 0x4965_6e69, 0x6c65_746e) {
                return Vendor::Intel;
            }
        }
        Vendor::Other
    })
}

/// The bf16 unit of this machine, detected once per process.
pub(crate) fn unit() -> Bf16Unit {
    static UNIT: OnceLock<Bf16Unit> = OnceLock::new();
    *UNIT.get_or_init(detect)
}

/// The precision an encoder asked for `asked` runs in on this machine:
/// `f32` as asked; `bf16` where the CPU has a bf16 unit, else an error that
/// says so; `auto` as `bf16` where bf16 products outrun f32's here (AMX, or
/// AVX-512 BF16 on a CPU not Intel's), else `f32` (one debug line, no more:
/// falling back is what `auto` is for). Never `Auto`.
///
/// ```
/// use toolnexus_local::{Precision, resolve_precision};
///
/// assert_eq!(resolve_precision(Precision::F32)?, Precision::F32);
/// let auto = resolve_precision(Precision::Auto)?;
/// assert_ne!(auto, Precision::Auto);
/// # Ok::<(), toolnexus_local::LocalError>(())
/// ```
pub fn resolve_precision(asked: Precision) -> Result<Precision, LocalError> {
    resolve_on(unit(), vendor(), asked)
}

/// [`resolve_precision`] for a given unit and vendor (the tests try each).
pub(crate) fn resolve_on(
    unit: Bf16Unit,
    vendor: Vendor,
    asked: Precision,
) -> Result<Precision, LocalError> {
    match asked {
        Precision::F32 => Ok(Precision::F32),
        Precision::Bf16 if unit.in_hardware() => Ok(Precision::Bf16),
        Precision::Bf16 => Err(msg::no_bf16_unit()),
        Precision::Auto if unit.outruns_f32(vendor) => Ok(Precision::Bf16),
        Precision::Auto => {
            tracing::debug!(
                "precision auto: running f32 (bf16 unit: {}, not faster here)",
                unit.name()
            );
            Ok(Precision::F32)
        }
    }
}

/// `e` with what its decision's extensions say of the precision that
/// answered, under every answer key: nothing for f32 (its output stays as it
/// was), `precision: "bf16"` and the unit that ran the products
/// (`precision_unit`) for bf16.
pub(crate) fn mark(precision: Precision, mut e: Evaluated) -> Evaluated {
    if precision == Precision::Bf16 {
        let extra = serde_json::Map::from_iter([
            ("precision".to_string(), "bf16".into()),
            ("precision_unit".to_string(), unit().name().into()),
        ]);
        for key in e.decision.answers.keys() {
            e.extensions
                .entry(key.clone())
                .or_default()
                .extend(extra.clone());
        }
    }
    e
}

/// What a classifier's fingerprint part adds for the precision that answers:
/// nothing for f32 (so every f32 fingerprint, and every cache entry keyed on
/// one, stays as it was), ` precision=bf16` for bf16.
pub(crate) fn fingerprint_part(precision: Precision) -> &'static str {
    match precision {
        Precision::Bf16 => " precision=bf16",
        _ => "",
    }
}

/// Whether the detected unit may be the tiles. The tile kernel ([`amx`]) is
/// written and tested (the products' tests run it wherever Linux grants the
/// tiles), and on a Xeon with AMX it runs the products 5–8 times as fast as
/// AVX-512 BF16, with half the summation error. It is not chosen yet: the
/// real MiniLM in bf16 on the tiles answers one of the guard's 552 held-out
/// calls the other way from f32 (a probability of 0.5017 in f32, 0.4999 on
/// the tiles, 0.5010 on AVX-512 BF16), which moves that question's accuracy
/// by 0.011, past the 0.005 bf16 is held to
/// (`tests/it/precision.rs`). The sums are more exact on the tiles; the
/// answer sat within bf16's rounding of its boundary, and landing on the
/// other side is the draw the tiles' summation order made.
const AMX_KERNEL: bool = false;

/// AMX where it may be chosen ([`AMX_KERNEL`]), the CPU and the OS have it
/// and Linux grants this process the tile data; else AVX-512 BF16; else the
/// portable path.
fn detect() -> Bf16Unit {
    if AMX_KERNEL && tiles_granted() {
        return Bf16Unit::Amx;
    }
    if avx512_bf16() {
        Bf16Unit::Avx512
    } else {
        Bf16Unit::Portable
    }
}

/// Whether this process may run the tile kernel: the CPU and the OS have AMX
/// and Linux granted the tile data, asked once per process, and only where
/// AMX exists. Once granted, each signal frame of the process holds the tile
/// data too (8 KiB), which the kernel counts in the `AT_MINSIGSTKSZ` that
/// Rust sizes each thread's alternate signal stack by.
fn tiles_granted() -> bool {
    static GRANTED: OnceLock<bool> = OnceLock::new();
    *GRANTED.get_or_init(|| amx_in_cpu_and_os() && request_tile_data())
}

/// Whether the CPU has AVX-512 BF16 (and the OS saves the 512-bit state,
/// which `is_x86_feature_detected!` checks).
fn avx512_bf16() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the CPU has AMX with bf16 (beside AVX-512 BF16) and the OS
/// enables the tile state; a process must still ask Linux for the tile data
/// ([`request_tile_data`]). Rust's feature detection for AMX is not stable
/// yet, so CPUID and XCR0 are read here.
fn amx_in_cpu_and_os() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__cpuid, __cpuid_count};
        let (max_leaf, osxsave) = (__cpuid(0).eax, __cpuid(1).ecx & (1 << 27) != 0);
        if max_leaf < 7 || !osxsave {
            return false;
        }
        // Leaf 7 exists (checked above).
        let edx = __cpuid_count(7, 0).edx;
        let (amx_bf16, amx_tile) = (edx & (1 << 22) != 0, edx & (1 << 24) != 0);
        if !(amx_bf16 && amx_tile && avx512_bf16()) {
            return false;
        }
        // XCR0 bits 17 and 18: the OS manages the tile configuration and data.
        xcr0() & (0b11 << 17) == 0b11 << 17
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// XCR0, the state components the OS saves; read only after CPUID said
/// OSXSAVE.
#[cfg(target_arch = "x86_64")]
fn xcr0() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: `xgetbv` with ECX = 0 is valid whenever CPUID reports OSXSAVE,
    // which the only caller checked; it reads a register and nothing else.
    unsafe {
        std::arch::asm!("xgetbv", in("ecx") 0u32, out("eax") lo, out("edx") hi,
            options(nomem, nostack, preserves_flags));
    }
    (u64::from(hi) << 32) | u64::from(lo)
}

/// Asks Linux for this process's permission to use the AMX tile data
/// (`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`); true when given.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn request_tile_data() -> bool {
    const SYS_ARCH_PRCTL: usize = 158;
    const ARCH_REQ_XCOMP_PERM: usize = 0x1023;
    const XFEATURE_XTILEDATA: usize = 18;
    let ret: isize;
    // SAFETY: a raw `arch_prctl` system call with two integer arguments; it
    // reads and writes no memory of ours. The kernel clobbers rcx and r11.
    unsafe {
        std::arch::asm!("syscall",
            inlateout("rax") SYS_ARCH_PRCTL as isize => ret,
            in("rdi") ARCH_REQ_XCOMP_PERM, in("rsi") XFEATURE_XTILEDATA,
            lateout("rcx") _, lateout("r11") _,
            options(nostack));
    }
    ret == 0
}

/// Elsewhere there is no known way to ask: the tiles stay unused.
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn request_tile_data() -> bool {
    false
}

/// A linear layer's weight in bf16, packed for [`matmul_bf16`]: converted
/// once from f32 and kept, half the bytes of the f32 matrix (plus the padding
/// of the last panel).
pub(crate) struct Bf16Weights {
    lines: Vec<Line>,
    inputs: usize,
    outputs: usize,
}

impl Bf16Weights {
    /// From `[inputs, outputs]` row-major: the layout [`super::linear`] takes.
    #[cfg(test)]
    pub(crate) fn from_in_out(w: &[f32], inputs: usize, outputs: usize) -> Bf16Weights {
        assert_eq!(w.len(), inputs * outputs, "weight does not fit its shape");
        Bf16Weights::from_out_rows(outputs, inputs, |j, row| {
            for (k, v) in row.iter_mut().enumerate() {
                *v = w[k * outputs + j];
            }
        })
    }

    /// From PyTorch's `[outputs, inputs]` row-major, with no transposed copy.
    pub(crate) fn from_out_in(w: &[f32], outputs: usize, inputs: usize) -> Bf16Weights {
        assert_eq!(w.len(), inputs * outputs, "weight does not fit its shape");
        Bf16Weights::from_out_rows(outputs, inputs, |j, row| {
            row.copy_from_slice(&w[j * inputs..(j + 1) * inputs]);
        })
    }

    /// From the weight's rows, `[outputs, inputs]` as PyTorch holds it, each
    /// written by `row(j, buffer)` as f32 into a buffer of `inputs` values
    /// (so a weight stored in f16 or bf16 is read without an f32 copy of
    /// the whole). Each row is converted as the activations are, then its
    /// words spread over its panel's lines; the panels are split over threads.
    pub(crate) fn from_out_rows(
        outputs: usize,
        inputs: usize,
        row: impl Fn(usize, &mut [f32]) + Sync,
    ) -> Bf16Weights {
        let pairs = inputs.div_ceil(2);
        let panels = outputs.div_ceil(PANEL);
        let per_panel = 2 * pairs;
        let mut lines = vec![ZERO_LINE; panels * per_panel];
        let vector = avx512_bf16();
        let fill = |first_panel: usize, chunk: &mut [Line]| {
            let (mut values, mut words) = (vec![0f32; inputs], vec![0u32; pairs]);
            for (i, panel) in chunk.chunks_mut(per_panel.max(1)).enumerate() {
                let j0 = (first_panel + i) * PANEL;
                for c in 0..PANEL.min(outputs - j0) {
                    row(j0 + c, &mut values);
                    convert_row(vector, &values, &mut words);
                    for (pair, &word) in panel.chunks_mut(2).zip(&words) {
                        pair[c / 16].0[c % 16] = word;
                    }
                }
            }
        };
        let t = threads().min(panels);
        if t <= 1 || inputs * outputs < PARALLEL_PRODUCT / 16 {
            fill(0, &mut lines);
        } else {
            let per = panels.div_ceil(t);
            std::thread::scope(|s| {
                for (i, chunk) in lines.chunks_mut(per * per_panel).enumerate() {
                    let fill = &fill;
                    s.spawn(move || fill(i * per, chunk));
                }
            });
        }
        Bf16Weights {
            lines,
            inputs,
            outputs,
        }
    }

    /// Inputs per row (the `k` of the product).
    #[cfg(test)]
    pub(crate) fn inputs(&self) -> usize {
        self.inputs
    }

    /// Outputs per row (the `n` of the product).
    pub(crate) fn outputs(&self) -> usize {
        self.outputs
    }

    /// Bytes the packed weight holds.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.lines.len() * size_of::<Line>()
    }

    /// Input pairs (`inputs` rounded up to even, halved).
    fn pairs(&self) -> usize {
        self.inputs.div_ceil(2)
    }

    /// Panel `j`'s lines: pair `p`'s two lines at `2p`, `2p + 1`.
    fn panel(&self, j: usize) -> &[Line] {
        let per = 2 * self.pairs();
        &self.lines[j * per..(j + 1) * per]
    }

    /// The weight as `[inputs, outputs]` f32, every value as bf16 holds it.
    #[cfg(test)]
    pub(crate) fn to_f32(&self) -> Vec<f32> {
        let mut w = vec![0f32; self.inputs * self.outputs];
        for k in 0..self.inputs {
            for j in 0..self.outputs {
                let line = &self.panel(j / PANEL)[2 * (k / 2) + (j % PANEL) / 16];
                w[k * self.outputs + j] = from_bf16((line.0[j % 16] >> (16 * (k % 2))) as u16);
            }
        }
        w
    }
}

/// The output pointer threads share; each writes only its own columns.
#[derive(Clone, Copy)]
struct OutPtr(*mut f32);
// SAFETY: the workers of `matmul_bf16` write disjoint columns of the output,
// which stays mutably borrowed by `matmul_bf16` until they have all ended.
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

/// A linear layer in bf16 on `x`'s rows: `out[i] (=|+=) x[i] · W + bias`,
/// `out` holding `x.rows` rows of `w.outputs()` at `out_stride`. Each row of
/// `x` is rounded to bf16 on the way in; products accumulate in f32. Runs on
/// the path [`unit`](fn@unit) found, the output panels split over [`threads`] when
/// the product is large enough. Panics (a bug in the caller, never an
/// input) if a slice is too short for its dimensions.
pub(crate) fn matmul_bf16(
    x: Rows<'_>,
    w: &Bf16Weights,
    bias: Option<&[f32]>,
    out: &mut [f32],
    out_stride: usize,
    into: Out,
) {
    matmul_bf16_on(unit(), x, w, bias, out, out_stride, into);
}

/// [`matmul_bf16`] of GELU of `x`: each row goes through
/// [`gelu`](super::gelu) on its way to bf16, so the activations are never
/// written out in f32 (the same values as GELU's output multiplied).
pub(crate) fn matmul_bf16_gelu(
    x: Rows<'_>,
    w: &Bf16Weights,
    bias: Option<&[f32]>,
    out: &mut [f32],
    out_stride: usize,
    into: Out,
) {
    matmul_bf16_with(unit(), x, true, w, bias, out, out_stride, into);
}

/// [`matmul_bf16`] on a given unit (the tests run each path this CPU has).
pub(crate) fn matmul_bf16_on(
    unit: Bf16Unit,
    x: Rows<'_>,
    w: &Bf16Weights,
    bias: Option<&[f32]>,
    out: &mut [f32],
    out_stride: usize,
    into: Out,
) {
    matmul_bf16_with(unit, x, false, w, bias, out, out_stride, into);
}

/// [`matmul_bf16_on`], of GELU of `x` with `gelu`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul_bf16_with(
    unit: Bf16Unit,
    x: Rows<'_>,
    gelu: bool,
    w: &Bf16Weights,
    bias: Option<&[f32]>,
    out: &mut [f32],
    out_stride: usize,
    into: Out,
) {
    let (m, n) = (x.rows, w.outputs);
    assert_eq!(x.cols, w.inputs, "weight does not fit the input");
    if let Some(b) = bias {
        assert_eq!(b.len(), n, "bias does not fit the weight");
    }
    if m == 0 || n == 0 {
        return;
    }
    x.check("left operand");
    Rows {
        data: out,
        rows: m,
        cols: n,
        stride: out_stride,
    }
    .check("destination");
    let vector = match unit {
        Bf16Unit::Amx | Bf16Unit::Avx512 => avx512_bf16(),
        Bf16Unit::Portable => false,
    };
    // The tiles only where this process may use them (the tests ask for each
    // unit by name).
    let kernel = match unit {
        Bf16Unit::Amx if vector && tiles_granted() => Bf16Unit::Amx,
        _ if vector => Bf16Unit::Avx512,
        _ => Bf16Unit::Portable,
    };
    let panels = n.div_ceil(PANEL);
    let t = match threads().min(panels) {
        t if t > 1 && m * n * x.cols >= PARALLEL_BF16 => t,
        _ => 1,
    };
    let dst = OutPtr(out.as_mut_ptr());
    let chunk = chunk_rows(w.inputs, kernel).min(m);
    let pairs = w.pairs();
    // Every row converted once, into one buffer the calling thread keeps
    // from call to call (no fresh pages per product) and every worker reads:
    // a worker that converted only the chunks it took panels from converted
    // each row once per thread.
    let mut scratch = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
    if scratch.len() < m * pairs {
        scratch.resize(m * pairs, 0);
    }
    let a = &mut scratch[..m * pairs];
    convert_rows(vector, x, gelu, a, chunk, t);
    let a = &*a;
    // The panels of each chunk of rows go to whichever worker asks next:
    // a worker slowed down (by another process on its core) takes fewer.
    let next: Vec<AtomicUsize> = (0..m.div_ceil(chunk))
        .map(|_| AtomicUsize::new(0))
        .collect();
    let work = || {
        // SAFETY: `out` was checked above for `m` rows of `n` at
        // `out_stride`; a worker writes only the columns of the panels it
        // took from `next`, which hands each (chunk, panel) out once, and
        // `out` stays mutably borrowed until every worker has ended.
        unsafe { panels_into(kernel, a, m, w, bias, dst, out_stride, into, chunk, &next) }
    };
    on_workers(t, &work);
    SCRATCH.with(|s| *s.borrow_mut() = scratch);
}

/// Runs `work` on `t` threads at once, the calling thread one of them, and
/// returns when every one has ended; `work` shares out what there is to do.
fn on_workers(t: usize, work: &(impl Fn() + Sync)) {
    if t <= 1 {
        work();
        return;
    }
    // On rayon's pool, which stays up between products: a scoped thread of
    // its own per product cost 40–115 µs to start and join on a shared
    // machine, more than a short text's whole product. The calling thread
    // works too, in place.
    rayon::in_place_scope(|s| {
        for _ in 1..t {
            s.spawn(move |_| work());
        }
        work();
    });
}

/// `x`'s rows (through GELU first with `gelu`) to bf16 pairs into `a`
/// (`x.rows × pairs` words, row after row), chunk by chunk to whichever of
/// `t` workers asks next.
fn convert_rows(vector: bool, x: Rows<'_>, gelu: bool, a: &mut [u32], chunk: usize, t: usize) {
    let pairs = x.cols.div_ceil(2);
    assert!(a.len() >= x.rows * pairs, "conversion buffer too short");
    // Each chunk's words behind a lock of its own, taken once, by the worker
    // `next` hands the chunk to: never contended.
    let parts: Vec<std::sync::Mutex<&mut [u32]>> = a[..x.rows * pairs]
        .chunks_mut((chunk * pairs).max(1))
        .map(std::sync::Mutex::new)
        .collect();
    let next = AtomicUsize::new(0);
    let work = || {
        let mut row = vec![0f32; if gelu { x.cols } else { 0 }];
        loop {
            let c = next.fetch_add(1, Ordering::Relaxed);
            let Some(part) = parts.get(c) else { break };
            let mut part = part.lock().unwrap_or_else(|e| e.into_inner());
            for (r, dst) in (c * chunk..).zip(part.chunks_mut(pairs.max(1))) {
                let src = &x.data[r * x.stride..][..x.cols];
                if gelu {
                    super::gelu(src, &mut row);
                    convert_row(vector, &row, dst);
                } else {
                    convert_row(vector, src, dst);
                }
            }
        }
    };
    on_workers(t.min(parts.len()), &work);
}

thread_local! {
    /// The converted rows' buffer of the products this thread calls.
    static SCRATCH: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Rows a panel passes over before the next panel (and converted as one
/// piece): their bf16 copy (`rows × inputs × 2` bytes) stays within about
/// 256 KiB, so it is read from L2 while every panel passes over it; on the
/// tiles, 1 MiB (every AMX CPU has at least 2 MiB of L2 a core), so that each
/// panel read from memory serves four times the rows.
fn chunk_rows(inputs: usize, kernel: Bf16Unit) -> usize {
    let bytes = match kernel {
        Bf16Unit::Amx => 1024 * 1024,
        _ => 256 * 1024,
    };
    let rows = (bytes / (2 * inputs.max(1))).max(MR);
    rows / MR * MR
}

/// The product's panels that `next` hands this worker, all `m` rows: `a`
/// holds every row converted to bf16 (`pairs` words each); in chunks of `chunk`
/// rows, each panel taken from the chunk's counter runs over the chunk,
/// [`MR`] rows at a time.
///
/// # Safety
///
/// `out` must be valid for reads and writes of `m` rows of
/// `w.outputs()` at `out_stride`, and nothing else may access the columns of
/// a (chunk, panel) this worker takes from `next` during the call;
/// `kernel` only where the CPU has that unit, and [`Bf16Unit::Amx`] only
/// once Linux granted the tile data.
#[allow(clippy::too_many_arguments)]
unsafe fn panels_into(
    kernel: Bf16Unit,
    a: &[u32],
    m: usize,
    w: &Bf16Weights,
    bias: Option<&[f32]>,
    out: OutPtr,
    out_stride: usize,
    into: Out,
    chunk: usize,
    next: &[AtomicUsize],
) {
    let pairs = w.pairs();
    let panels = w.outputs.div_ceil(PANEL);
    for (i0, next) in (0..m).step_by(chunk).zip(next) {
        let rows = chunk.min(m - i0);
        let a = &a[i0 * pairs..(i0 + rows) * pairs];
        loop {
            let j = next.fetch_add(1, Ordering::Relaxed);
            if j >= panels {
                break;
            }
            let panel = w.panel(j);
            let cols = PANEL.min(w.outputs - j * PANEL);
            let bias = bias.map(|b| &b[j * PANEL..j * PANEL + cols]);
            // SAFETY: rows `i0..i0 + rows` and columns `j·PANEL..j·PANEL +
            // cols` are inside `out` (the caller's contract), in a (chunk,
            // panel) only this worker took.
            let c = unsafe { out.0.add(i0 * out_stride + j * PANEL) };
            let tile = Tile {
                a,
                pairs,
                rows,
                panel,
                c,
                ldc: out_stride,
                cols,
                bias,
                add: into == Out::Add,
            };
            #[cfg(target_arch = "x86_64")]
            match kernel {
                // SAFETY: the CPU has the unit, and the OS granted the tiles
                // (the caller's contract); the tile's ranges are as `Tile`
                // documents.
                Bf16Unit::Amx => {
                    unsafe { amx::tiles(&tile) };
                    continue;
                }
                Bf16Unit::Avx512 => {
                    unsafe { avx512::tiles(&tile) };
                    continue;
                }
                Bf16Unit::Portable => {}
            }
            for r0 in (0..rows).step_by(MR) {
                // SAFETY: as above.
                unsafe { portable_tile(&tile.block(r0)) };
            }
        }
    }
    #[cfg(target_arch = "x86_64")]
    if kernel == Bf16Unit::Amx {
        // The thread's tiles back to their initial state: a thread that keeps
        // them in use has their 8 KiB saved and restored at every switch.
        amx::release();
    }
}

/// Rows of converted activations against one panel: a (chunk, panel) of
/// the product, or one kernel call's [`MR`] rows of it ([`Tile::block`]).
#[derive(Clone, Copy)]
struct Tile<'a> {
    /// `rows × pairs` words, one input pair each, row after row.
    a: &'a [u32],
    pairs: usize,
    rows: usize,
    /// The panel: `2 × pairs` lines.
    panel: &'a [Line],
    /// The output's first cell: row `r`, column `c` at `c + r·ldc`, valid for
    /// reads and writes for `r < rows`, `c < cols`.
    c: *mut f32,
    ldc: usize,
    /// Real columns of this panel (the rest is padding, never written).
    cols: usize,
    bias: Option<&'a [f32]>,
    add: bool,
}

impl<'a> Tile<'a> {
    /// Rows `r0..r0 + MR` of this tile (fewer at its end), `r0 < rows`.
    fn block(&self, r0: usize) -> Tile<'a> {
        let rows = MR.min(self.rows - r0);
        Tile {
            a: &self.a[r0 * self.pairs..(r0 + rows) * self.pairs],
            rows,
            c: self.c.wrapping_add(r0 * self.ldc),
            ..*self
        }
    }
}

/// A row of activations to bf16 pairs: `dst[p]` holds `src[2p]` in its low
/// half and `src[2p + 1]` (or 0 past the end) in its high half.
fn convert_row(vector: bool, src: &[f32], dst: &mut [u32]) {
    assert_eq!(dst.len(), src.len().div_ceil(2));
    #[cfg(target_arch = "x86_64")]
    if vector {
        // SAFETY: the caller runs `vector` only where the CPU has AVX-512 BF16.
        unsafe { avx512::convert_row(src, dst) };
        return;
    }
    let _ = vector;
    for (p, d) in dst.iter_mut().enumerate() {
        let lo = to_bf16(src[2 * p]);
        let hi = src.get(2 * p + 1).map_or(0, |&v| to_bf16(v));
        *d = u32::from(lo) | (u32::from(hi) << 16);
    }
}

/// The portable tile: the same sums as `vdpbf16ps` (each pair's odd product
/// added, then its even one: bf16 products are exact in f32, so only the
/// additions round), in plain loops.
///
/// # Safety
///
/// `t.c` as [`Tile`] documents.
unsafe fn portable_tile(t: &Tile<'_>) {
    let mut acc = [[0f32; PANEL]; MR];
    for p in 0..t.pairs {
        let (l0, l1) = (&t.panel[2 * p].0, &t.panel[2 * p + 1].0);
        for (r, acc) in acc.iter_mut().enumerate().take(t.rows) {
            let a = t.a[r * t.pairs + p];
            let (a0, a1) = (from_bf16(a as u16), from_bf16((a >> 16) as u16));
            for (c, v) in acc.iter_mut().enumerate() {
                let line = if c < 16 { l0 } else { l1 };
                let b = line[c % 16];
                let (b0, b1) = (from_bf16(b as u16), from_bf16((b >> 16) as u16));
                *v += a1 * b1;
                *v += a0 * b0;
            }
        }
    }
    for (r, acc) in acc.iter().enumerate().take(t.rows) {
        for (c, &v) in acc.iter().enumerate().take(t.cols) {
            let v = v + t.bias.map_or(0.0, |b| b[c]);
            // SAFETY: `r < rows` and `c < cols`: a cell the tile may write.
            unsafe {
                let cell = t.c.add(r * t.ldc + c);
                *cell = if t.add { *cell + v } else { v };
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512;

#[cfg(target_arch = "x86_64")]
mod amx;

#[cfg(test)]
mod tests;
