//! The BERT encoder (inference only, CPU): the `config.json` it reads, the
//! weights under their Hugging Face names, and the forward pass to the last
//! hidden states, on the same kernels as ModernBERT ([`crate::kernels`]):
//! rows packed without padding, query, key and value as one product per
//! layer, attention per (row, head), GELU with an exact-to-f32 erf.

use std::sync::Mutex;

use serde::Deserialize;

use crate::kernels::{
    Attend, Bf16Weights, HeldLin, HeldNorm, Lin, Norm, Out, Packed, Rows, attention, bf16,
    gelu_rows, groups, packed_starts,
};
use crate::weights::prepared::Part;
use crate::weights::{F32s, Tensors};

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

pub(crate) struct Bert {
    word: F32s,
    position: F32s,
    /// The first token type's row: every text is one segment.
    token_type: Vec<f32>,
    norm: Norm,
    layers: Vec<Layer>,
    heads: usize,
    hidden: usize,
    intermediate: usize,
    vocab: usize,
    max_positions: usize,
    /// The last forward pass's working buffers, kept for the next (see [`Scratch`]).
    scratch: Mutex<Option<Scratch>>,
}

/// A forward pass's working buffers (all but the hidden states it returns),
/// kept by the encoder from pass to pass: allocated afresh, about 13 MB for
/// a group of 32 short texts came from newly mapped pages, each faulted in
/// and zeroed by the kernel, every pass. Every cell a pass reads it has
/// written first in the same pass, so what a kept buffer held before never
/// reaches a result.
#[derive(Default)]
struct Scratch {
    normed: Vec<f32>,
    qkv: Vec<f32>,
    ctx: Vec<f32>,
    up: Vec<f32>,
    act: Vec<f32>,
}

impl Scratch {
    /// The most bytes of buffers kept between passes (a group of 32 texts
    /// of 40 tokens needs about 25 MB in f32, 18 MB in bf16); a pass that
    /// needed more lets its own go, as every pass did before.
    const KEEP: usize = 32 << 20;

    /// Each buffer at least as long as a pass needs.
    fn fit(&mut self, normed: usize, qkv: usize, ctx: usize, up: usize, act: usize) {
        for (v, n) in [
            (&mut self.normed, normed),
            (&mut self.qkv, qkv),
            (&mut self.ctx, ctx),
            (&mut self.up, up),
            (&mut self.act, act),
        ] {
            if v.len() < n {
                v.resize(n, 0.0);
            }
        }
    }

    fn bytes(&self) -> usize {
        let values = [&self.normed, &self.qkv, &self.ctx, &self.up, &self.act]
            .iter()
            .map(|v| v.capacity())
            .sum::<usize>();
        values * size_of::<f32>()
    }
}

struct Layer {
    qkv: Lin,
    out: Lin,
    out_norm: Norm,
    up: Lin,
    down: Lin,
    down_norm: Norm,
}

/// The name of the layout [`Bert::prepared`] writes and [`Bert::load`] reads
/// (see [`crate::weights::prepared`]): each layer's four linear matrices
/// `[in, out]`, query, key and value side by side. A change to what is
/// prepared or how is a new name.
pub(crate) const PREPARED_LAYOUT: &str = "bert-linear-in-out/1";

/// The four linear matrices of each layer, by their name in the prepared
/// layout, and their `[in, out]` shape.
fn prepared_names(layers: usize, h: usize, i: usize) -> Vec<[(String, [usize; 2]); 4]> {
    (0..layers)
        .map(|l| {
            let n = |part: &str| format!("layer.{l}.{part}.weight_t");
            [
                (n("qkv"), [h, 3 * h]),
                (n("out"), [h, h]),
                (n("up"), [h, i]),
                (n("down"), [i, h]),
            ]
        })
        .collect()
}

/// Every layer's four linear matrices taken out of a prepared layout, or
/// the first reason it does not fit `c`.
fn take_prepared(p: &mut Tensors, c: &Config) -> candle_core::Result<Vec<[F32s; 4]>> {
    prepared_names(c.num_hidden_layers, c.hidden_size, c.intermediate_size)
        .into_iter()
        .map(|names| {
            let [qkv, out, up, down] = names.map(|(name, dims)| p.take(&name, &dims));
            Ok([qkv?, out?, up?, down?])
        })
        .collect()
}

/// A linear layer out of the weights: its `[out, in]` matrix and bias taken
/// (the shapes checked); in bf16, packed straight from the `[out, in]`
/// rows; in f32, the matrix read `[in, out]` from `prepared` when given,
/// else transposed here.
fn linear(
    t: &mut Tensors,
    name: &str,
    (out, inp): (usize, usize),
    prepared: Option<F32s>,
    bf16: bool,
) -> candle_core::Result<Lin> {
    let b = t.take(&format!("{name}.bias"), &[out])?;
    let w = t.take(&format!("{name}.weight"), &[out, inp])?;
    Ok(match prepared {
        _ if bf16 => Lin::bf16(Bf16Weights::from_out_in(w.values(), out, inp), Some(b)),
        Some(wt) => Lin::prepared(wt, Some(b)),
        None => Lin::transposed(w.values(), (out, inp), Some(b)),
    })
}

/// `{name}.weight` and `{name}.bias` of `size`, taken out of the weights.
fn take_norm(t: &mut Tensors, name: &str, size: usize, eps: f32) -> candle_core::Result<Norm> {
    let w = t.take(&format!("{name}.weight"), &[size])?;
    let b = t.take(&format!("{name}.bias"), &[size])?;
    Ok(Norm::new(w, Some(b), eps))
}

impl Bert {
    /// The encoder from weights named as Hugging Face saves a `BertModel`
    /// (`embeddings.…`, `encoder.layer.N.…`), with or without a `bert.`
    /// prefix, each taken out of `t` and read as f32. The linear matrices
    /// come from `prepared` when it holds all of them in their shapes (the
    /// second value says so), else they are transposed here. With `bf16`,
    /// the linear matrices are packed in bf16 from the weights themselves
    /// (contiguous rows: faster than reading the prepared layout's columns)
    /// and no f32 copy of them is kept; the embeddings and norms stay f32.
    pub(crate) fn load(
        t: &mut Tensors,
        prepared: Option<&mut Tensors>,
        c: &Config,
        bf16: bool,
    ) -> candle_core::Result<(Bert, bool)> {
        let prefix = if t.contains("bert.embeddings.word_embeddings.weight") {
            "bert."
        } else {
            ""
        };
        let p = |name: &str| format!("{prefix}{name}");
        let (h, eps) = (c.hidden_size, c.layer_norm_eps as f32);
        let word = t.take(&p("embeddings.word_embeddings.weight"), &[c.vocab_size, h])?;
        let position = t.take(
            &p("embeddings.position_embeddings.weight"),
            &[c.max_position_embeddings, h],
        )?;
        let types = t.take(
            &p("embeddings.token_type_embeddings.weight"),
            &[c.type_vocab_size, h],
        )?;
        let token_type = types.values()[..h].to_vec();
        let norm = take_norm(t, &p("embeddings.LayerNorm"), h, eps)?;
        let prepared = prepared
            .filter(|_| !bf16)
            .and_then(|p| take_prepared(p, c).ok());
        let used = prepared.is_some();
        let mut prepared = prepared.map(Vec::into_iter);
        let layers = (0..c.num_hidden_layers)
            .map(|i| {
                let l = |name: &str| p(&format!("encoder.layer.{i}.{name}"));
                let [qkv_t, out_t, up_t, down_t] = match prepared.as_mut().and_then(Iterator::next)
                {
                    Some(four) => four.map(Some),
                    None => [None, None, None, None],
                };
                // Query, key and value as one product: `[q | k | v]` per token.
                let mut w = Vec::with_capacity(3);
                let mut b = Vec::with_capacity(3 * h);
                for part in ["query", "key", "value"] {
                    let name = l(&format!("attention.self.{part}"));
                    w.push(t.take(&format!("{name}.weight"), &[h, h])?);
                    b.extend_from_slice(t.take(&format!("{name}.bias"), &[h])?.values());
                }
                let b = Some(F32s::from(b));
                let qkv = match qkv_t {
                    // Row `j` of `[q; k; v]`: row `j % h` of part `j / h`.
                    _ if bf16 => Lin::bf16(
                        Bf16Weights::from_out_rows(3 * h, h, |j, row| {
                            row.copy_from_slice(&w[j / h].values()[(j % h) * h..][..h]);
                        }),
                        b,
                    ),
                    Some(wt) => Lin::prepared(wt, b),
                    None => {
                        let w: Vec<f32> = w.iter().flat_map(|w| w.values()).copied().collect();
                        Lin::transposed(&w, (3 * h, h), b)
                    }
                };
                Ok(Layer {
                    qkv,
                    out: linear(t, &l("attention.output.dense"), (h, h), out_t, bf16)?,
                    out_norm: take_norm(t, &l("attention.output.LayerNorm"), h, eps)?,
                    up: linear(
                        t,
                        &l("intermediate.dense"),
                        (c.intermediate_size, h),
                        up_t,
                        bf16,
                    )?,
                    down: linear(
                        t,
                        &l("output.dense"),
                        (h, c.intermediate_size),
                        down_t,
                        bf16,
                    )?,
                    down_norm: take_norm(t, &l("output.LayerNorm"), h, eps)?,
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        let bert = Bert {
            word,
            position,
            token_type,
            norm,
            layers,
            heads: c.num_attention_heads,
            hidden: h,
            intermediate: c.intermediate_size,
            vocab: c.vocab_size,
            max_positions: c.max_position_embeddings,
            scratch: Mutex::new(None),
        };
        Ok((bert, used))
    }

    /// The layout [`load`](Bert::load) reads from a prepared file: every
    /// layer's linear matrices, `[in, out]`, by name and shape; `None` when
    /// they are kept in bf16 (the prepared layout is f32's).
    pub(crate) fn prepared(&self) -> Option<Vec<Part<'_>>> {
        let names = prepared_names(self.layers.len(), self.hidden, self.intermediate);
        names
            .into_iter()
            .zip(&self.layers)
            .flat_map(|(names, layer)| {
                let lins = [&layer.qkv, &layer.out, &layer.up, &layer.down];
                names
                    .into_iter()
                    .zip(lins)
                    .map(|((name, dims), lin)| lin.weight_t().map(|w| (name, dims.to_vec(), w)))
            })
            .collect()
    }

    /// Whether the linear matrices are kept in bf16.
    pub(crate) fn is_bf16(&self) -> bool {
        self.layers.first().is_some_and(|l| l.qkv.is_bf16())
    }

    /// Whether every linear matrix is read in place (from a prepared layout)
    /// rather than transposed into memory of its own.
    #[cfg(test)]
    pub(crate) fn reads_prepared_layout(&self) -> bool {
        self.layers.iter().all(|l| {
            [&l.qkv, &l.out, &l.up, &l.down]
                .iter()
                .all(|lin| lin.weight_is_in_place())
        })
    }

    /// The last hidden states of every token of `rows`, packed row after
    /// row. Rows never see each other and nothing is padded: a row's states
    /// are the same (to float rounding) whatever rows run beside it.
    pub(crate) fn forward(&self, rows: &[&[u32]]) -> candle_core::Result<Packed> {
        let (h, inter) = (self.hidden, self.intermediate);
        let lengths: Vec<usize> = rows.iter().map(|r| r.len()).collect();
        if let Some(&long) = lengths.iter().find(|&&l| l > self.max_positions) {
            candle_core::bail!(
                "a text of {long} tokens is longer than the model's {} positions",
                self.max_positions
            );
        }
        let (starts, n) = packed_starts(&lengths);
        let groups = groups(&lengths, GROUP_TOKENS);
        let most = groups.iter().map(|g| g.tokens).max().unwrap_or(0);
        // Another pass running at the same time finds none and makes its own.
        let kept = self.scratch.lock().ok().and_then(|mut s| s.take());
        let mut scratch = kept.unwrap_or_default();
        let in_bf16 = self.is_bf16();
        // In bf16, GELU's output is never written out: no buffer for it.
        let act = if in_bf16 { 0 } else { most * inter };
        scratch.fit(n * h, most * 3 * h, most * h, most * inter, act);
        let Scratch {
            normed,
            qkv,
            ctx,
            up,
            act,
        } = &mut scratch;
        // The embeddings into `normed`, their norm into `x`.
        {
            let (word, position) = (self.word.values(), self.position.values());
            let tokens = rows
                .iter()
                .flat_map(|r| r.iter().enumerate())
                .zip(normed[..n * h].chunks_mut(h));
            for ((p, &id), x) in tokens {
                let id = id as usize;
                if id >= self.vocab {
                    candle_core::bail!("token id {id} is outside the vocabulary ({})", self.vocab);
                }
                let (w, pos) = (&word[id * h..(id + 1) * h], &position[p * h..(p + 1) * h]);
                for (((x, w), pos), t) in x.iter_mut().zip(w).zip(pos).zip(&self.token_type) {
                    *x = w + pos + t;
                }
            }
        }
        // In bf16, attention on the bf16 path's own kernel and the norms'
        // variance summed in lanes; f32 keeps the `gemm` path, the one-lane
        // sum and their bits.
        let attention = match in_bf16 {
            true => bf16::attention::attention,
            false => attention,
        };
        let norm = |n: &HeldNorm<'_>, x: &[f32], out: &mut [f32]| match in_bf16 {
            true => n.apply_lanes(x, out),
            false => n.apply(x, out),
        };
        let mut x = vec![0f32; n * h];
        norm(&HeldNorm::of(&self.norm)?, &normed[..n * h], &mut x);
        let attend = Attend {
            heads: self.heads,
            head_dim: h / self.heads,
            rope: None,
            window: None,
            block: self.max_positions,
        };
        for layer in &self.layers {
            let (w_qkv, w_out) = (HeldLin::of(&layer.qkv)?, HeldLin::of(&layer.out)?);
            let (w_up, w_down) = (HeldLin::of(&layer.up)?, HeldLin::of(&layer.down)?);
            let out_norm = HeldNorm::of(&layer.out_norm)?;
            let down_norm = HeldNorm::of(&layer.down_norm)?;
            for g in &groups {
                let (first, tokens) = (g.first_token, g.tokens);
                let x = &mut x[first * h..(first + tokens) * h];
                let normed = &mut normed[..tokens * h];
                // x = norm(x + attention(x)), BERT's post-norm.
                let qkv = &mut qkv[..tokens * 3 * h];
                w_qkv.apply(Rows::packed(x, tokens, h), qkv, Out::Overwrite);
                let ctx = &mut ctx[..tokens * h];
                attention(qkv, &g.rows(&starts, &lengths), &attend, ctx);
                w_out.apply(Rows::packed(ctx, tokens, h), x, Out::Add);
                norm(&out_norm, x, normed);
                // x = norm(x + down(gelu(up(x)))), the sum made in `normed`
                // (which holds x) and its norm written back to `x`: no copy.
                let up = &mut up[..tokens * inter];
                w_up.apply(Rows::packed(normed, tokens, h), up, Out::Overwrite);
                if in_bf16 {
                    // GELU on each row as it goes to bf16 for the product.
                    w_down.apply_gelu(Rows::packed(up, tokens, inter), normed, Out::Add);
                } else {
                    let act = &mut act[..tokens * inter];
                    gelu_rows(up, act, inter);
                    w_down.apply(Rows::packed(act, tokens, inter), normed, Out::Add);
                }
                norm(&down_norm, normed, x);
            }
        }
        if scratch.bytes() <= Scratch::KEEP
            && let Ok(mut kept) = self.scratch.lock()
        {
            *kept = Some(scratch);
        }
        Ok(Packed {
            data: x,
            starts,
            hidden: h,
        })
    }
}

/// Tokens per group of rows run through a layer together: enough rows for
/// the matrix products' kernels, few enough that the buffers stay in cache.
const GROUP_TOKENS: usize = 2048;
