//! The encoders' element-wise kernels (GELU, LayerNorm), compiled twice:
//! for the CPU the build targets, and for AVX-512 where the CPU has it,
//! chosen once per process ([`avx512`]).
//!
//! Why twice: the release build targets the x86-64 baseline, so the
//! compiler vectorises these loops four lanes wide; the AVX-512 copy of the
//! same source runs sixteen. Each value goes through the same operations in
//! the same order either way (the compiler never reassociates or fuses f32
//! arithmetic), so both copies give the same bits, and f32 encoders stay
//! bit-for-bit what they were.

/// Whether the CPU runs AVX-512 F, detected once per process.
pub(super) fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static WIDE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *WIDE.get_or_init(|| is_x86_feature_detected!("avx512f"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Runs `body` compiled for AVX-512 F where the CPU has it, else as built.
/// `body` must be `#[inline(always)]` for the wide copy to be wide.
macro_rules! wide {
    ($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) => $body:path) => {
        $(#[$doc])*
        pub(super) fn $name($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                unsafe fn on_avx512($($arg: $ty),*) {
                    $body($($arg),*)
                }
                if avx512() {
                    // SAFETY: the CPU has AVX-512 F (checked just now).
                    unsafe { on_avx512($($arg),*) };
                    return;
                }
            }
            $body($($arg),*)
        }
    };
}

wide! {
    /// [`super::gelu`]'s loop, sixteen lanes wide where the CPU can.
    fn gelu(src: &[f32], out: &mut [f32]) => super::gelu_body
}

wide! {
    /// [`super::layer_norm`]'s rows, the element-wise steps sixteen lanes
    /// wide where the CPU can.
    fn norm_rows(x: &[f32], out: &mut [f32], d: usize, w: &[f32], b: Option<&[f32]>, eps: f32)
        => super::norm_rows_body::<false>
}

wide! {
    /// [`norm_rows`] with the variance summed in sixteen lanes too.
    fn norm_rows_lanes(x: &[f32], out: &mut [f32], d: usize, w: &[f32], b: Option<&[f32]>, eps: f32)
        => super::norm_rows_body::<true>
}

/// `Σ (x − mean)²` in sixteen lanes, so the compiler may vectorise it.
#[inline(always)]
pub(super) fn sum_of_squares(x: &[f32], mean: f32) -> f32 {
    let mut lanes = [0f32; 16];
    let chunks = x.chunks_exact(16);
    let tail: f32 = chunks
        .remainder()
        .iter()
        .map(|v| (v - mean) * (v - mean))
        .sum();
    for c in chunks {
        for (l, v) in lanes.iter_mut().zip(c) {
            *l += (v - mean) * (v - mean);
        }
    }
    lanes.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests;
