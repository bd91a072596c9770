//! The BERT encoder (inference only, CPU): the `config.json` it reads, the
//! weights under their Hugging Face names, and the forward pass to the last
//! hidden states. Attention is fused into one query-key-value product per
//! layer, and GELU runs as a parallel kernel with an exact-to-f32 erf.

use candle_core::{CpuStorage, CustomOp1, D, DType, Layout, Module, Shape, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder};
use serde::Deserialize;

/// The parts of a BERT `config.json` the encoder needs; other fields are ignored.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Config {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub hidden_act: String,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub layer_norm_eps: f64,
    #[serde(default)]
    pub position_embedding_type: Option<String>,
}

impl Config {
    /// Why this config cannot be run, if it cannot.
    pub(crate) fn unsupported(&self) -> Option<String> {
        let positive = [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("intermediate_size", self.intermediate_size),
            ("max_position_embeddings", self.max_position_embeddings),
            ("type_vocab_size", self.type_vocab_size),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Some(format!("{name} is 0"));
        }
        if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return Some(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        if self.max_position_embeddings < 3 {
            return Some(format!(
                "max_position_embeddings {} leaves no room for a text between [CLS] and [SEP]",
                self.max_position_embeddings
            ));
        }
        if self.hidden_act != "gelu" {
            return Some(format!(
                "hidden_act {:?} is not supported (only \"gelu\")",
                self.hidden_act
            ));
        }
        match self.position_embedding_type.as_deref() {
            None | Some("absolute") => None,
            Some(other) => Some(format!(
                "position_embedding_type {other:?} is not supported (only \"absolute\")"
            )),
        }
    }
}

/// Multi-head self-attention over a packed query|key|value projection `qkv`
/// of shape (b, t, 3d): each head's scaled dot products plus `mask` (shape
/// (b, 1, 1, t): 0 for a key to attend to, a large negative for padding),
/// softmax, the values mixed; the heads joined again, (b, t, d). BERT and
/// Laya's decision head both attend this way.
pub(crate) fn self_attention(
    qkv: &Tensor,
    heads: usize,
    mask: &Tensor,
) -> candle_core::Result<Tensor> {
    let (b, t, packed) = qkv.dims3()?;
    let d = packed / 3;
    let head_dim = d / heads;
    let scale = 1.0 / (head_dim as f64).sqrt();
    let split = |i: usize| -> candle_core::Result<Tensor> {
        qkv.narrow(D::Minus1, i * d, d)?
            .reshape((b, t, heads, head_dim))?
            .transpose(1, 2)?
            .contiguous()
    };
    let (q, k, v) = (split(0)?, split(1)?, split(2)?);
    let scores = (q.matmul(&k.t()?)? * scale)?.broadcast_add(mask)?;
    let probs = candle_nn::ops::softmax_last_dim(&scores)?;
    probs
        .matmul(&v)?
        .transpose(1, 2)?
        .contiguous()?
        .reshape((b, t, d))
}

pub(crate) struct Bert {
    word: Embedding,
    position: Embedding,
    token_type: Tensor,
    norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
}

struct Layer {
    qkv: Linear,
    out: Linear,
    out_norm: LayerNorm,
    up: Linear,
    down: Linear,
    down_norm: LayerNorm,
}

fn linear(vb: &VarBuilder, name: &str, out: usize, inp: usize) -> candle_core::Result<Linear> {
    let vb = vb.pp(name);
    Ok(Linear::new(
        vb.get((out, inp), "weight")?,
        Some(vb.get(out, "bias")?),
    ))
}

fn layer_norm(
    vb: &VarBuilder,
    name: &str,
    size: usize,
    eps: f64,
) -> candle_core::Result<LayerNorm> {
    let vb = vb.pp(name);
    Ok(LayerNorm::new(
        vb.get(size, "weight")?,
        vb.get(size, "bias")?,
        eps,
    ))
}

impl Bert {
    /// The encoder from weights named as Hugging Face saves a `BertModel`
    /// (`embeddings.…`, `encoder.layer.N.…`), with or without a `bert.` prefix.
    pub(crate) fn load(vb: VarBuilder, c: &Config) -> candle_core::Result<Bert> {
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb
        };
        let (h, eps) = (c.hidden_size, c.layer_norm_eps);
        let e = vb.pp("embeddings");
        let word = Embedding::new(e.get((c.vocab_size, h), "word_embeddings.weight")?, h);
        let position = Embedding::new(
            e.get((c.max_position_embeddings, h), "position_embeddings.weight")?,
            h,
        );
        // Every text is one segment: only the first token type is ever used.
        let token_type = e
            .get((c.type_vocab_size, h), "token_type_embeddings.weight")?
            .get(0)?;
        let norm = layer_norm(&e, "LayerNorm", h, eps)?;
        let layers = (0..c.num_hidden_layers)
            .map(|i| {
                let l = vb.pp(format!("encoder.layer.{i}"));
                let a = l.pp("attention");
                let s = a.pp("self");
                let part = |name: &str| -> candle_core::Result<(Tensor, Tensor)> {
                    let p = s.pp(name);
                    Ok((p.get((h, h), "weight")?, p.get(h, "bias")?))
                };
                let (q, k, v) = (part("query")?, part("key")?, part("value")?);
                let qkv = Linear::new(
                    Tensor::cat(&[&q.0, &k.0, &v.0], 0)?,
                    Some(Tensor::cat(&[&q.1, &k.1, &v.1], 0)?),
                );
                Ok(Layer {
                    qkv,
                    out: linear(&a, "output.dense", h, h)?,
                    out_norm: layer_norm(&a, "output.LayerNorm", h, eps)?,
                    up: linear(&l, "intermediate.dense", c.intermediate_size, h)?,
                    down: linear(&l, "output.dense", h, c.intermediate_size)?,
                    down_norm: layer_norm(&l, "output.LayerNorm", h, eps)?,
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        Ok(Bert {
            word,
            position,
            token_type,
            norm,
            layers,
            heads: c.num_attention_heads,
        })
    }

    /// The last hidden states `[batch, tokens, hidden]` for token ids and an
    /// attention mask (1 for a real token, 0 for padding), both `[batch, tokens]`.
    pub(crate) fn forward(&self, ids: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        let (b, t) = ids.dims2()?;
        let positions = Tensor::arange(0u32, t as u32, ids.device())?;
        let x = self
            .word
            .forward(ids)?
            .broadcast_add(&self.position.forward(&positions)?)?
            .broadcast_add(&self.token_type)?;
        let mut x = self.norm.forward(&x)?;
        // Padding gets the lowest float added to its attention scores: after the
        // softmax it weighs exactly nothing.
        let mask =
            ((mask.to_dtype(DType::F32)? - 1.0)? * f64::from(f32::MAX))?.reshape((b, 1, 1, t))?;
        for layer in &self.layers {
            let qkv = dense(&layer.qkv, &x)?;
            let context = self_attention(&qkv, self.heads, &mask)?;
            let a = dense(&layer.out, &context)?;
            x = layer.out_norm.forward(&(a + &x)?)?;
            let up = dense(&layer.up, &x)?.apply_op1_no_bwd(&Gelu)?;
            let down = dense(&layer.down, &up)?;
            x = layer.down_norm.forward(&(down + &x)?)?;
        }
        Ok(x)
    }
}

/// A linear layer over every token of the batch as one 2-D product: `(b·t, in)`
/// by `(in, out)`. candle's `Linear` on a `(b, t, in)` input runs `b` products
/// of `t` rows each, which keeps gemm's kernels short of rows.
pub(crate) fn dense(layer: &Linear, x: &Tensor) -> candle_core::Result<Tensor> {
    let (b, t, h) = x.dims3()?;
    layer.forward(&x.reshape((b * t, h))?)?.reshape((b, t, ()))
}

/// GELU with the exact (erf) form BERT uses, as a CPU kernel: a rational erf
/// accurate to f32 rounding, split over threads for large inputs.
pub(crate) struct Gelu;

/// Elements below which one thread does all the work.
const PARALLEL_FROM: usize = 1 << 16;

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
        let src = &data[start..end];
        let mut out = vec![0f32; src.len()];
        let threads = candle_core::utils::get_num_threads().max(1);
        if threads == 1 || src.len() < PARALLEL_FROM {
            gelu(src, &mut out);
        } else {
            let chunk = src.len().div_ceil(threads);
            std::thread::scope(|s| {
                for (src, out) in src.chunks(chunk).zip(out.chunks_mut(chunk)) {
                    s.spawn(move || gelu(src, out));
                }
            });
        }
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }
}

pub(crate) fn gelu(src: &[f32], out: &mut [f32]) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        for n in [7, PARALLEL_FROM + 13] {
            let x = Tensor::arange(0u32, n as u32, &candle_core::Device::Cpu)
                .unwrap()
                .to_dtype(DType::F32)
                .unwrap();
            let x = x.affine(12.0 / n as f64, -6.0).unwrap();
            let want = x.gelu_erf().unwrap().to_vec1::<f32>().unwrap();
            let got = x.apply_op1_no_bwd(&Gelu).unwrap().to_vec1::<f32>().unwrap();
            let gap = want
                .iter()
                .zip(&got)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f32::max);
            assert!(gap < 2e-6, "n = {n}: {gap}");
        }
    }
}
