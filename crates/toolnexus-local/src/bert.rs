//! The BERT encoder (inference only, CPU): the `config.json` it reads, the
//! weights under their Hugging Face names, and the forward pass to the last
//! hidden states, on the same kernels as ModernBERT ([`crate::kernels`]):
//! rows packed without padding, query, key and value as one product per
//! layer, attention per (row, head), GELU with an exact-to-f32 erf.

use std::collections::HashMap;

use candle_core::Tensor;
use serde::Deserialize;

use crate::kernels::{
    Attend, Held, HeldLin, HeldNorm, Lin, Norm, Out, Packed, Rows, attention, gelu_rows, groups,
    packed_starts, take,
};

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
    word: Tensor,
    position: Tensor,
    /// The first token type's row: every text is one segment.
    token_type: Vec<f32>,
    norm: Norm,
    layers: Vec<Layer>,
    heads: usize,
    hidden: usize,
    intermediate: usize,
    vocab: usize,
    max_positions: usize,
}

struct Layer {
    qkv: Lin,
    out: Lin,
    out_norm: Norm,
    up: Lin,
    down: Lin,
    down_norm: Norm,
}

fn linear(
    map: &mut HashMap<String, Tensor>,
    name: &str,
    (out, inp): (usize, usize),
) -> candle_core::Result<Lin> {
    let b = take(map, &format!("{name}.bias"), &[out])?;
    Lin::new(take(map, &format!("{name}.weight"), &[out, inp])?, Some(b))
}

impl Bert {
    /// The encoder from weights named as Hugging Face saves a `BertModel`
    /// (`embeddings.…`, `encoder.layer.N.…`), with or without a `bert.`
    /// prefix, each f32 and contiguous, taken out of `map`.
    pub(crate) fn load(map: &mut HashMap<String, Tensor>, c: &Config) -> candle_core::Result<Bert> {
        let prefix = if map.contains_key("bert.embeddings.word_embeddings.weight") {
            "bert."
        } else {
            ""
        };
        let p = |name: &str| format!("{prefix}{name}");
        let (h, eps) = (c.hidden_size, c.layer_norm_eps as f32);
        let word = take(
            map,
            &p("embeddings.word_embeddings.weight"),
            &[c.vocab_size, h],
        )?;
        let position = take(
            map,
            &p("embeddings.position_embeddings.weight"),
            &[c.max_position_embeddings, h],
        )?;
        let types = take(
            map,
            &p("embeddings.token_type_embeddings.weight"),
            &[c.type_vocab_size, h],
        )?;
        let token_type = Held::of(&types)?.values()[..h].to_vec();
        Held::of(&word)?;
        Held::of(&position)?;
        let norm = Norm::take(map, &p("embeddings.LayerNorm"), h, true, eps)?;
        let layers = (0..c.num_hidden_layers)
            .map(|i| {
                let l = |name: &str| p(&format!("encoder.layer.{i}.{name}"));
                // Query, key and value as one product: `[q | k | v]` per token.
                let mut w = Vec::with_capacity(3);
                let mut b = Vec::with_capacity(3);
                for part in ["query", "key", "value"] {
                    let name = l(&format!("attention.self.{part}"));
                    w.push(take(map, &format!("{name}.weight"), &[h, h])?);
                    b.push(take(map, &format!("{name}.bias"), &[h])?);
                }
                let qkv = Lin::new(Tensor::cat(&w, 0)?, Some(Tensor::cat(&b, 0)?))?;
                Ok(Layer {
                    qkv,
                    out: linear(map, &l("attention.output.dense"), (h, h))?,
                    out_norm: Norm::take(map, &l("attention.output.LayerNorm"), h, true, eps)?,
                    up: linear(map, &l("intermediate.dense"), (c.intermediate_size, h))?,
                    down: linear(map, &l("output.dense"), (h, c.intermediate_size))?,
                    down_norm: Norm::take(map, &l("output.LayerNorm"), h, true, eps)?,
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
            hidden: h,
            intermediate: c.intermediate_size,
            vocab: c.vocab_size,
            max_positions: c.max_position_embeddings,
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
        let mut x = vec![0f32; n * h];
        {
            let (word, position) = (Held::of(&self.word)?, Held::of(&self.position)?);
            let (word, position) = (word.values(), position.values());
            let tokens = rows
                .iter()
                .flat_map(|r| r.iter().enumerate())
                .zip(x.chunks_mut(h));
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
        let mut normed = vec![0f32; n * h];
        HeldNorm::of(&self.norm)?.apply(&x, &mut normed);
        std::mem::swap(&mut x, &mut normed);

        let groups = groups(&lengths, GROUP_TOKENS);
        let most = groups.iter().map(|g| g.tokens).max().unwrap_or(0);
        normed.truncate(most * h);
        let mut qkv = vec![0f32; most * 3 * h];
        let mut ctx = vec![0f32; most * h];
        let mut up = vec![0f32; most * inter];
        let mut act = vec![0f32; most * inter];
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
                out_norm.apply(x, normed);
                // x = norm(x + down(gelu(up(x)))).
                let up = &mut up[..tokens * inter];
                w_up.apply(Rows::packed(normed, tokens, h), up, Out::Overwrite);
                let act = &mut act[..tokens * inter];
                gelu_rows(up, act, inter);
                x.copy_from_slice(normed);
                w_down.apply(Rows::packed(act, tokens, inter), x, Out::Add);
                down_norm.apply(x, normed);
                x.copy_from_slice(normed);
            }
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
