//! The BERT encoder of MiniLM, written for throughput on CPU.
//!
//! Compared with a straightforward BERT forward pass over a padded batch, this one:
//!
//! - packs the texts of a batch into one token matrix without padding: the dense layers run on
//!   real tokens only, and attention runs per text, so no attention mask is needed;
//! - fuses the query, key and value projections into one matrix product and folds the
//!   `1/sqrt(head_dim)` attention scale into the query weights at load time;
//! - uses candle's fused, parallel softmax and layer-norm kernels;
//! - computes the exact (erf) GELU with a fast erf approximation spread over the cores.
//!
//! The result matches the reference BERT (see the fixture under `benches/reference/`).

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::Config;

struct EncoderLayer {
    /// `(hidden, 3 * hidden)`: query (pre-scaled), key and value projections side by side.
    qkv_w: Tensor,
    qkv_b: Tensor,
    out_w: Tensor,
    out_b: Tensor,
    attn_norm_w: Tensor,
    attn_norm_b: Tensor,
    ffn_in_w: Tensor,
    ffn_in_b: Tensor,
    ffn_out_w: Tensor,
    ffn_out_b: Tensor,
    ffn_norm_w: Tensor,
    ffn_norm_b: Tensor,
}

/// MiniLM / BERT encoder with mean pooling and L2 normalisation.
pub struct Encoder {
    word: Tensor,
    position: Tensor,
    token_type: Tensor,
    norm_w: Tensor,
    norm_b: Tensor,
    layers: Vec<EncoderLayer>,
    heads: usize,
    head_dim: usize,
    hidden: usize,
    eps: f32,
    device: Device,
}

/// `(out, in)` linear weight loaded transposed to `(in, out)`, contiguous, for `x.matmul(w)`.
fn linear(
    vb: &VarBuilder,
    prefix: &str,
    input: usize,
    output: usize,
) -> candle_core::Result<(Tensor, Tensor)> {
    let w = vb.get((output, input), &format!("{prefix}.weight"))?;
    let b = vb.get(output, &format!("{prefix}.bias"))?;
    Ok((w.t()?.contiguous()?, b))
}

fn norm(vb: &VarBuilder, prefix: &str, hidden: usize) -> candle_core::Result<(Tensor, Tensor)> {
    Ok((
        vb.get(hidden, &format!("{prefix}.weight"))?,
        vb.get(hidden, &format!("{prefix}.bias"))?,
    ))
}

impl Encoder {
    /// Loads the weights of a sentence-transformers BERT (with or without a `bert.` prefix).
    pub fn load(vb: VarBuilder, config: &Config) -> candle_core::Result<Self> {
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb
        };
        let hidden = config.hidden_size;
        let heads = config.num_attention_heads;
        if heads == 0 || hidden % heads != 0 {
            candle_core::bail!("hidden size {hidden} does not split into {heads} heads");
        }
        let head_dim = hidden / heads;
        let inter = config.intermediate_size;
        let emb = vb.pp("embeddings");
        let word = emb.get((config.vocab_size, hidden), "word_embeddings.weight")?;
        let position = emb.get(
            (config.max_position_embeddings, hidden),
            "position_embeddings.weight",
        )?;
        let token_type = emb
            .get(
                (config.type_vocab_size, hidden),
                "token_type_embeddings.weight",
            )?
            .get(0)?;
        let (norm_w, norm_b) = norm(&emb, "LayerNorm", hidden)?;
        let scale = 1.0 / (head_dim as f64).sqrt();
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for index in 0..config.num_hidden_layers {
            let l = vb.pp(format!("encoder.layer.{index}"));
            let (q_w, q_b) = linear(&l, "attention.self.query", hidden, hidden)?;
            let (k_w, k_b) = linear(&l, "attention.self.key", hidden, hidden)?;
            let (v_w, v_b) = linear(&l, "attention.self.value", hidden, hidden)?;
            let qkv_w = Tensor::cat(&[(q_w * scale)?, k_w, v_w], 1)?.contiguous()?;
            let qkv_b = Tensor::cat(&[(q_b * scale)?, k_b, v_b], 0)?;
            let (out_w, out_b) = linear(&l, "attention.output.dense", hidden, hidden)?;
            let (attn_norm_w, attn_norm_b) = norm(&l, "attention.output.LayerNorm", hidden)?;
            let (ffn_in_w, ffn_in_b) = linear(&l, "intermediate.dense", hidden, inter)?;
            let (ffn_out_w, ffn_out_b) = linear(&l, "output.dense", inter, hidden)?;
            let (ffn_norm_w, ffn_norm_b) = norm(&l, "output.LayerNorm", hidden)?;
            layers.push(EncoderLayer {
                qkv_w,
                qkv_b,
                out_w,
                out_b,
                attn_norm_w,
                attn_norm_b,
                ffn_in_w,
                ffn_in_b,
                ffn_out_w,
                ffn_out_b,
                ffn_norm_w,
                ffn_norm_b,
            });
        }
        Ok(Self {
            word,
            position,
            token_type,
            norm_w,
            norm_b,
            layers,
            heads,
            head_dim,
            hidden,
            eps: config.layer_norm_eps as f32,
            device: vb.device().clone(),
        })
    }

    /// Mean-pooled, L2-normalised vectors of token id sequences (each non-empty, no longer
    /// than the position table).
    pub fn embed(&self, seqs: &[&[u32]]) -> candle_core::Result<Vec<Vec<f32>>> {
        let max_len = self.position.dim(0)?;
        if let Some(bad) = seqs.iter().find(|s| s.is_empty() || s.len() > max_len) {
            candle_core::bail!(
                "a sequence of {} tokens (1 to {max_len} allowed)",
                bad.len()
            );
        }
        let ids: Vec<u32> = seqs.iter().flat_map(|s| s.iter().copied()).collect();
        let positions: Vec<u32> = seqs.iter().flat_map(|s| 0..s.len() as u32).collect();
        let total = ids.len();
        let ids = Tensor::from_vec(ids, total, &self.device)?;
        let positions = Tensor::from_vec(positions, total, &self.device)?;
        let x = (self.word.index_select(&ids, 0)? + self.position.index_select(&positions, 0)?)?
            .broadcast_add(&self.token_type)?;
        let mut x = candle_nn::ops::layer_norm(&x, &self.norm_w, &self.norm_b, self.eps)?;
        let lens: Vec<usize> = seqs.iter().map(|s| s.len()).collect();
        for layer in &self.layers {
            let qkv = x.matmul(&layer.qkv_w)?.broadcast_add(&layer.qkv_b)?;
            let context = self.attention(&qkv, &lens)?;
            let attended = (context.matmul(&layer.out_w)?.broadcast_add(&layer.out_b)? + &x)?;
            let attended = candle_nn::ops::layer_norm(
                &attended,
                &layer.attn_norm_w,
                &layer.attn_norm_b,
                self.eps,
            )?;
            let inner = attended
                .matmul(&layer.ffn_in_w)?
                .broadcast_add(&layer.ffn_in_b)?;
            let inner = gelu(&inner)?;
            let out = (inner
                .matmul(&layer.ffn_out_w)?
                .broadcast_add(&layer.ffn_out_b)?
                + attended)?;
            x = candle_nn::ops::layer_norm(&out, &layer.ffn_norm_w, &layer.ffn_norm_b, self.eps)?;
        }
        let mut vectors = Vec::with_capacity(seqs.len());
        let mut offset = 0;
        for &len in &lens {
            let mean = x.narrow(0, offset, len)?.mean(0)?;
            let norm = mean
                .sqr()?
                .sum_all()?
                .sqrt()?
                .to_scalar::<f32>()?
                .max(1e-12);
            vectors.push((mean / f64::from(norm))?.to_vec1::<f32>()?);
            offset += len;
        }
        Ok(vectors)
    }

    /// Self-attention of each text over its own tokens: `qkv` is `(tokens, 3 * hidden)`.
    fn attention(&self, qkv: &Tensor, lens: &[usize]) -> candle_core::Result<Tensor> {
        let (h, hd, width) = (self.heads, self.head_dim, self.hidden);
        let mut contexts = Vec::with_capacity(lens.len());
        let mut offset = 0;
        for &len in lens {
            let rows = qkv.narrow(0, offset, len)?;
            let split = |index: usize| -> candle_core::Result<Tensor> {
                rows.narrow(1, index * width, width)?
                    .reshape((len, h, hd))?
                    .transpose(0, 1)?
                    .contiguous()
            };
            let (q, k, v) = (split(0)?, split(1)?, split(2)?);
            let scores = q.matmul(&k.t()?)?;
            let probs = candle_nn::ops::softmax_last_dim(&scores)?;
            let context = probs.matmul(&v)?.transpose(0, 1)?.reshape((len, width))?;
            contexts.push(context);
            offset += len;
        }
        Tensor::cat(&contexts, 0)
    }
}

/// Exact GELU, `x * (1 + erf(x / sqrt 2)) / 2`, over all cores.
fn gelu(x: &Tensor) -> candle_core::Result<Tensor> {
    let shape = x.shape().clone();
    let mut data = x.flatten_all()?.to_vec1::<f32>()?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = data.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for part in data.chunks_mut(chunk) {
            scope.spawn(move || {
                for v in part.iter_mut() {
                    *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
                }
            });
        }
    });
    Tensor::from_vec(data, shape, &x.device().clone())?.to_dtype(DType::F32)
}

/// erf by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7).
fn erf(x: f32) -> f32 {
    let sign = x.signum();
    let x = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_8 + t * (-1.453_152_1 + t * 1.061_405_4))));
    sign * (1.0 - poly * (-x * x).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_is_accurate() {
        for (x, expected) in [
            (0.0f32, 0.0f32),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (-2.0, -0.995_322_3),
            (3.5, 0.999_999_3),
        ] {
            assert!((erf(x) - expected).abs() < 3e-7, "erf({x}) = {}", erf(x));
        }
    }

    #[test]
    fn gelu_matches_the_definition() {
        let x = Tensor::new(&[-3.0f32, -0.5, 0.0, 0.7, 2.0], &Device::Cpu).unwrap();
        let ours = gelu(&x).unwrap().to_vec1::<f32>().unwrap();
        let reference = x.gelu_erf().unwrap().to_vec1::<f32>().unwrap();
        for (a, b) in ours.iter().zip(&reference) {
            assert!((a - b).abs() < 1e-6, "{ours:?} vs {reference:?}");
        }
    }
}
