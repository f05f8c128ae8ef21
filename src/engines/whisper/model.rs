//! The Whisper transformer on candle, built for CPU inference: the audio encoder, and a text
//! decoder with a self-attention key/value cache, cross-attention keys/values computed once
//! per 30 s window and shared by every beam, and optional capture of the cross-attention
//! scores of chosen heads (for word timestamps).
//!
//! Weights come from a `VarBuilder` under candle-transformers' Whisper names (see `ct2`). The
//! forward passes follow openai-whisper's `model.py`: pre-norm residual blocks, exact (erf)
//! GELU, sinusoidal encoder positions, learned decoder positions, and logits through the
//! transposed token embedding.

use candle_core::{Device, IndexOp, Module, Result, Tensor};
use candle_nn::{Conv1d, Conv1dConfig, LayerNorm, VarBuilder};

use super::ct2::ModelDims;
use super::skinny;
use super::vector_math;

/// A dense layer: `x W^T + b`, run as one 2-D matrix product over all rows. The weight is
/// kept as stored, `(out, in)`; the product reads it transposed without a copy (a decoder
/// step's few rows through [`skinny`], which reads it in place).
struct Linear {
    weight: Tensor,
    /// What a decoder step's few rows read: the weight, or its half-precision copy (see
    /// [`Linear::for_steps`]).
    step_weight: Tensor,
    bias: Option<Tensor>,
}

impl Linear {
    fn load(
        vb: &VarBuilder,
        name: &str,
        in_dim: usize,
        out_dim: usize,
        bias: bool,
    ) -> Result<Self> {
        let vb = vb.pp(name);
        let weight = vb.get((out_dim, in_dim), "weight")?;
        let bias = if bias {
            Some(vb.get(out_dim, "bias")?)
        } else {
            None
        };
        Ok(Self {
            step_weight: weight.clone(),
            weight,
            bias,
        })
    }

    /// Keeps a half-precision copy of the weight for the decoder's steps when it holds the
    /// weight exactly: a step is bound by reading its weights, and reads half the bytes.
    fn for_steps(mut self) -> Result<Self> {
        self.step_weight = step_copy(&self.weight)?;
        Ok(self)
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let dims = x.dims().to_vec();
        let in_dim = dims[dims.len() - 1];
        let rows = x.elem_count() / in_dim;
        let x = x.reshape((rows, in_dim))?;
        // A decoder step's few rows read the weight in place (see `skinny`).
        let y = if rows <= skinny::MAX_ROWS {
            skinny::matmul_t(&x, &self.step_weight)?
        } else {
            x.matmul(&self.weight.t()?)?
        };
        let y = match &self.bias {
            Some(b) => y.broadcast_add(b)?,
            None => y,
        };
        let mut out_dims = dims;
        let last = out_dims.len() - 1;
        out_dims[last] = self.weight.dim(0)?;
        y.reshape(out_dims)
    }
}

fn layer_norm(vb: &VarBuilder, name: &str, dim: usize) -> Result<LayerNorm> {
    let vb = vb.pp(name);
    Ok(LayerNorm::new(
        vb.get(dim, "weight")?,
        vb.get(dim, "bias")?,
        1e-5,
    ))
}

struct Attention {
    query: Linear,
    key: Linear,
    value: Linear,
    out: Linear,
    n_head: usize,
}

impl Attention {
    fn load(vb: &VarBuilder, name: &str, d: usize, n_head: usize) -> Result<Self> {
        let vb = vb.pp(name);
        Ok(Self {
            query: Linear::load(&vb, "q_proj", d, d, true)?,
            key: Linear::load(&vb, "k_proj", d, d, false)?,
            value: Linear::load(&vb, "v_proj", d, d, true)?,
            out: Linear::load(&vb, "out_proj", d, d, true)?,
            n_head,
        })
    }

    /// Half-precision copies for the projections a decoder step runs: all four of
    /// self-attention; the query and output of cross-attention, whose keys and values are
    /// computed once per window.
    fn for_steps(self, cross: bool) -> Result<Self> {
        Ok(Self {
            query: self.query.for_steps()?,
            key: if cross {
                self.key
            } else {
                self.key.for_steps()?
            },
            value: if cross {
                self.value
            } else {
                self.value.for_steps()?
            },
            out: self.out.for_steps()?,
            n_head: self.n_head,
        })
    }

    /// `(B, T, d)` to `(B, h, T, dh)`.
    fn heads(&self, x: &Tensor) -> Result<Tensor> {
        let (b, t, d) = x.dims3()?;
        x.reshape((b, t, self.n_head, d / self.n_head))?
            .transpose(1, 2)?
            .contiguous()
    }

    /// `(B, h, T, dh)` to `(B, T, d)`.
    fn merge(&self, x: &Tensor) -> Result<Tensor> {
        let (b, h, t, dh) = x.dims4()?;
        x.transpose(1, 2)?.reshape((b, t, h * dh))
    }

    fn scale(&self, d: usize) -> f64 {
        ((d / self.n_head) as f64).powf(-0.5)
    }
}

struct EncoderBlock {
    attn: Attention,
    attn_ln: LayerNorm,
    fc1: Linear,
    fc2: Linear,
    mlp_ln: LayerNorm,
}

struct DecoderBlock {
    attn: Attention,
    attn_ln: LayerNorm,
    cross: Attention,
    cross_ln: LayerNorm,
    fc1: Linear,
    fc2: Linear,
    mlp_ln: LayerNorm,
}

fn mlp(ln: &LayerNorm, fc1: &Linear, fc2: &Linear, x: &Tensor) -> Result<Tensor> {
    fc2.forward(&vector_math::gelu_erf(&fc1.forward(&ln.forward(x)?)?)?)
}

/// Softmax attention of `(B, h, T, dh)` queries, keys and values, one head at a time. A 30 s
/// window's scores are 9 MB a head and 54-72 MB for all heads at once: a block that large the
/// allocator maps fresh from the system on every call (and the kernel zeroes it page by page,
/// 200,000 page faults a transcription), where one head's it takes back from the heap.
fn attend_by_head(q: &Tensor, k: &Tensor, v: &Tensor) -> Result<Tensor> {
    let heads = (0..q.dim(1)?)
        .map(|h| {
            let scores = q.narrow(1, h, 1)?.matmul(&k.narrow(1, h, 1)?.t()?)?;
            vector_math::softmax_last_dim(&scores)?.matmul(&v.narrow(1, h, 1)?)
        })
        .collect::<Result<Vec<_>>>()?;
    Tensor::cat(&heads, 1)
}

/// The loaded network.
pub struct WhisperModel {
    pub dims: ModelDims,
    conv1: Conv1d,
    conv2: Conv1d,
    encoder_positions: Tensor,
    encoder_blocks: Vec<EncoderBlock>,
    encoder_ln: LayerNorm,
    token_embedding: Tensor,
    /// What the logits of a decoder step read: the token embedding in half precision when
    /// that holds it exactly (the model files are half precision), half the bytes.
    token_embedding_steps: Tensor,
    decoder_positions: Tensor,
    decoder_blocks: Vec<DecoderBlock>,
    decoder_ln: LayerNorm,
}

/// Per-layer cross-attention keys `(h, dh, S)` and values `(h, S, dh)` of one window.
pub struct CrossKv {
    layers: Vec<(Tensor, Tensor)>,
}

/// The self-attention cache of a batch of hypotheses.
#[derive(Default, Clone)]
pub struct KvCache {
    layers: Vec<(Tensor, Tensor)>,
    len: usize,
}

impl KvCache {
    /// Tokens already processed.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was processed yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Keeps (and repeats) the hypotheses at `sources`, in that order: how a beam step
    /// reorders its caches.
    pub fn reorder(&mut self, sources: &[u32]) -> Result<()> {
        if self.layers.is_empty() {
            return Ok(());
        }
        let index = Tensor::new(sources, &Device::Cpu)?;
        for (k, v) in &mut self.layers {
            *k = k.index_select(&index, 0)?;
            *v = v.index_select(&index, 0)?;
        }
        Ok(())
    }
}

impl WhisperModel {
    /// Builds the network from weights under candle-transformers' names.
    pub fn load(vb: &VarBuilder, dims: ModelDims) -> Result<Self> {
        let d = dims.d_model;
        let enc = vb.pp("model.encoder");
        let dec = vb.pp("model.decoder");
        let conv = |name: &str, in_dim: usize, stride: usize| -> Result<Conv1d> {
            let vb = enc.pp(name);
            let cfg = Conv1dConfig {
                padding: 1,
                stride,
                dilation: 1,
                groups: 1,
                cudnn_fwd_algo: None,
            };
            Ok(Conv1d::new(
                vb.get((d, in_dim, 3), "weight")?,
                Some(vb.get(d, "bias")?),
                cfg,
            ))
        };
        let conv1 = conv("conv1", dims.n_mels, 1)?;
        let conv2 = conv("conv2", d, 2)?;
        let encoder_blocks = (0..dims.n_encoder_layers)
            .map(|i| {
                let vb = enc.pp(format!("layers.{i}"));
                Ok(EncoderBlock {
                    attn: Attention::load(&vb, "self_attn", d, dims.n_encoder_heads)?,
                    attn_ln: layer_norm(&vb, "self_attn_layer_norm", d)?,
                    fc1: Linear::load(&vb, "fc1", d, 4 * d, true)?,
                    fc2: Linear::load(&vb, "fc2", 4 * d, d, true)?,
                    mlp_ln: layer_norm(&vb, "final_layer_norm", d)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let decoder_blocks = (0..dims.n_decoder_layers)
            .map(|i| {
                let vb = dec.pp(format!("layers.{i}"));
                Ok(DecoderBlock {
                    attn: Attention::load(&vb, "self_attn", d, dims.n_decoder_heads)?
                        .for_steps(false)?,
                    attn_ln: layer_norm(&vb, "self_attn_layer_norm", d)?,
                    cross: Attention::load(&vb, "encoder_attn", d, dims.n_decoder_heads)?
                        .for_steps(true)?,
                    cross_ln: layer_norm(&vb, "encoder_attn_layer_norm", d)?,
                    fc1: Linear::load(&vb, "fc1", d, 4 * d, true)?.for_steps()?,
                    fc2: Linear::load(&vb, "fc2", 4 * d, d, true)?.for_steps()?,
                    mlp_ln: layer_norm(&vb, "final_layer_norm", d)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let token_embedding = dec.get((dims.n_vocab, d), "embed_tokens.weight")?;
        let token_embedding_steps = step_copy(&token_embedding)?;
        Ok(Self {
            conv1,
            conv2,
            encoder_positions: enc.get((dims.n_audio_ctx, d), "embed_positions.weight")?,
            encoder_blocks,
            encoder_ln: layer_norm(&enc, "layer_norm", d)?,
            token_embedding_steps,
            token_embedding,
            decoder_positions: dec.get((dims.n_text_ctx, d), "embed_positions.weight")?,
            decoder_blocks,
            decoder_ln: layer_norm(&dec, "layer_norm", d)?,
            dims,
        })
    }

    /// Encodes one `(1, n_mels, 3000)` mel window to `(1, 1500, d)` audio features.
    pub fn encode(&self, mel: &Tensor) -> Result<Tensor> {
        let x = vector_math::gelu_erf(&self.conv1.forward(mel)?)?;
        let x = vector_math::gelu_erf(&self.conv2.forward(&x)?)?;
        let x = x.transpose(1, 2)?;
        let (_, frames, _) = x.dims3()?;
        if frames > self.dims.n_audio_ctx {
            candle_core::bail!("the mel window is longer than the encoder context");
        }
        let mut x = x.broadcast_add(&self.encoder_positions.narrow(0, 0, frames)?)?;
        let d = self.dims.d_model;
        for block in &self.encoder_blocks {
            let h = block.attn_ln.forward(&x)?;
            let a = &block.attn;
            let q = a.heads(&(a.query.forward(&h)? * a.scale(d))?)?;
            let k = a.heads(&a.key.forward(&h)?)?;
            let v = a.heads(&a.value.forward(&h)?)?;
            let attn = a.out.forward(&a.merge(&attend_by_head(&q, &k, &v)?)?)?;
            x = (x + attn)?;
            x = (&x + mlp(&block.mlp_ln, &block.fc1, &block.fc2, &x)?)?;
        }
        self.encoder_ln.forward(&x)
    }

    /// The cross-attention keys and values of encoded audio, computed once per window.
    pub fn cross_kv(&self, audio: &Tensor) -> Result<CrossKv> {
        let layers = self
            .decoder_blocks
            .iter()
            .map(|block| {
                let a = &block.cross;
                let k = a.heads(&a.key.forward(audio)?)?.squeeze(0)?;
                let v = a.heads(&a.value.forward(audio)?)?.squeeze(0)?;
                Ok((k.t()?.contiguous()?, v))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(CrossKv { layers })
    }

    /// Runs the decoder over `tokens` (`B` hypotheses of `T` new tokens each, after the
    /// `cache.len()` tokens already in the cache) and returns the final hidden states
    /// `(B, T, d)`. When `capture` names `(layer, head)` pairs, their pre-softmax
    /// cross-attention scores are appended to `captured` as `(B * T, S)` tensors.
    pub fn decode(
        &self,
        tokens: &[Vec<u32>],
        cache: &mut KvCache,
        cross: &CrossKv,
        capture: &[(usize, usize)],
        captured: &mut Vec<Tensor>,
    ) -> Result<Tensor> {
        let b = tokens.len();
        let t = tokens.first().map_or(0, Vec::len);
        if b == 0 || t == 0 || tokens.iter().any(|row| row.len() != t) {
            candle_core::bail!("decoder input must be a non-empty rectangle of tokens");
        }
        let past = cache.len;
        if past + t > self.dims.n_text_ctx {
            candle_core::bail!(
                "the text context of {} tokens is full",
                self.dims.n_text_ctx
            );
        }
        if tokens
            .iter()
            .flatten()
            .any(|&id| id as usize >= self.dims.n_vocab)
        {
            candle_core::bail!("a token id is outside the vocabulary");
        }
        let flat: Vec<u32> = tokens.iter().flatten().copied().collect();
        let ids = Tensor::from_vec(flat, b * t, &Device::Cpu)?;
        let d = self.dims.d_model;
        let mut x = self
            .token_embedding
            .index_select(&ids, 0)?
            .reshape((b, t, d))?
            .broadcast_add(&self.decoder_positions.narrow(0, past, t)?)?;
        let mask = if t > 1 {
            let values: Vec<f32> = (0..t)
                .flat_map(|i| {
                    (0..past + t).map(move |j| if j > past + i { f32::NEG_INFINITY } else { 0.0 })
                })
                .collect();
            Some(Tensor::from_vec(values, (t, past + t), &Device::Cpu)?)
        } else {
            None
        };
        let fresh = cache.layers.is_empty();
        for (layer, block) in self.decoder_blocks.iter().enumerate() {
            // Self-attention over the cached and the new positions.
            let h = block.attn_ln.forward(&x)?;
            let a = &block.attn;
            let q = a.heads(&(a.query.forward(&h)? * a.scale(d))?)?;
            let k_new = a.heads(&a.key.forward(&h)?)?;
            let v_new = a.heads(&a.value.forward(&h)?)?;
            let (k, v) = if fresh {
                (k_new, v_new)
            } else {
                let (k_old, v_old) = &cache.layers[layer];
                (
                    Tensor::cat(&[k_old, &k_new], 2)?,
                    Tensor::cat(&[v_old, &v_new], 2)?,
                )
            };
            let mut scores = q.matmul(&k.t()?)?;
            if let Some(mask) = &mask {
                scores = scores.broadcast_add(mask)?;
            }
            let w = vector_math::softmax_last_dim(&scores)?;
            let attn = a.out.forward(&a.merge(&w.matmul(&v)?)?)?;
            if fresh {
                cache.layers.push((k, v));
            } else {
                cache.layers[layer] = (k, v);
            }
            x = (x + attn)?;

            // Cross-attention: all hypotheses' rows share the window's keys and values.
            let h = block.cross_ln.forward(&x)?;
            let c = &block.cross;
            let nh = c.n_head;
            let q = (c.query.forward(&h)? * c.scale(d))?
                .reshape((b * t, nh, d / nh))?
                .transpose(0, 1)?
                .contiguous()?;
            let (ck, cv) = &cross.layers[layer];
            let scores = q.matmul(ck)?;
            for &(_, head) in capture.iter().filter(|(l, _)| *l == layer) {
                captured.push(scores.i(head)?);
            }
            let w = vector_math::softmax_last_dim(&scores)?;
            let attn = w.matmul(cv)?.transpose(0, 1)?.reshape((b, t, d))?;
            x = (&x + c.out.forward(&attn)?)?;

            x = (&x + mlp(&block.mlp_ln, &block.fc1, &block.fc2, &x)?)?;
        }
        cache.len = past + t;
        self.decoder_ln.forward(&x)
    }

    /// Logits `(N, n_vocab)` of hidden states `(N, d)`.
    pub fn logits(&self, hidden: &Tensor) -> Result<Tensor> {
        if hidden.dim(0)? <= skinny::MAX_ROWS {
            skinny::matmul_t(hidden, &self.token_embedding_steps)
        } else {
            hidden.matmul(&self.token_embedding.t()?)
        }
    }

    /// The hidden states of position `pos` of every hypothesis: `(B, d)`.
    pub fn at_position(hidden: &Tensor, pos: usize) -> Result<Tensor> {
        hidden.i((.., pos, ..))?.contiguous()
    }
}

/// What a decoder step reads of `weight`: its half-precision copy if every value survives
/// the trip there and back unchanged (the weights of a half-precision model file do), else
/// the weight itself (a full-precision file keeps its f32 products).
fn step_copy(weight: &Tensor) -> Result<Tensor> {
    use half::slice::HalfFloatSliceExt as _;
    let values: Vec<f32> = weight.flatten_all()?.to_vec1()?;
    let mut half = vec![half::f16::ZERO; values.len()];
    half.convert_from_f32_slice(&values);
    let mut back = [0f32; 4096];
    for (h, v) in half.chunks(back.len()).zip(values.chunks(back.len())) {
        let back = &mut back[..h.len()];
        h.convert_to_f32_slice(back);
        if back.iter().zip(v).any(|(b, v)| b.to_bits() != v.to_bits()) {
            return Ok(weight.clone());
        }
    }
    drop(values);
    Tensor::from_vec(half, weight.shape(), &Device::Cpu)
}

/// Log-softmax of one row of logits, in place.
pub fn log_softmax_in_place(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if !max.is_finite() {
        return;
    }
    let sum: f32 = row.iter().map(|&v| (v - max).exp()).sum();
    let log_sum = max + sum.ln();
    for v in row.iter_mut() {
        *v -= log_sum;
    }
}
