//! GGUF loading, Q8_0 requantisation and the llama forward pass of the local language model.
//!
//! The weights ([`LlamaModel`]) are immutable once loaded and shared by every request; the
//! attention state of one token sequence lives apart from them in a [`KvCache`]. That split is
//! what lets concurrent requests run the same model at once (each with its own cache) and what
//! lets the prompt cache keep, rewind and reuse the state of earlier conversations.
//!
//! Weights stored in a format candle has no fast CPU kernel for (Q4_1 among them) are
//! dequantized and requantized to Q8_0 at load time: Q8_0 matrix-vector products use the
//! AVX2 / AVX-512 integer kernels, which makes decoding several times faster than Q4_1 at the
//! price of about twice the weight memory (~145 MB for SmolLM2-135M).
//!
//! Those integer kernels compute one dot product at a time, which suits decoding (one token)
//! but leaves a prompt's many tokens far from what the CPU can do. A forward pass over at
//! least [`DENSE_FROM_TOKENS`] tokens therefore dequantizes each layer's weights to f32 as it
//! reaches the layer and multiplies through `gemm`'s blocked kernels ([`Products::Dense`]).
//! Dequantizing and packing the weights cost about 130 ms a pass on 2 cores, repaid from about
//! 64 tokens on. No dense copy of the weights is kept, so the model's memory stays what the
//! quantized weights take.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::Arc;

use candle_core::quantized::{gguf_file, GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Device, Module, Tensor};
use switchboard_actors::engine::EngineError;

/// Rows of the KV cache added at once when a sequence outgrows its cache.
const KV_CHUNK: usize = 256;

/// Queries whose attention is computed at once, which bounds the score matrix of long inputs.
const ATTENTION_CHUNK: usize = 256;

/// Forward passes over at least this many tokens multiply by dequantized weights
/// (`cargo bench --bench llm`, `llm_prefill`: on 2 cores the crossover is between 32 and 64
/// tokens; 512 tokens read 2.2 times faster dense).
pub const DENSE_FROM_TOKENS: usize = 64;

/// How a forward pass multiplies by the weight matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Products {
    /// The quantized integer kernels, one dot product at a time: fastest for a few tokens.
    Quantized,
    /// Each layer's weights dequantized to f32 for the pass and multiplied by blocked
    /// matrix products: fastest for many tokens.
    Dense,
}

impl Products {
    /// The faster way for a pass over `tokens` tokens.
    pub fn for_tokens(tokens: usize) -> Self {
        if tokens >= DENSE_FROM_TOKENS {
            Self::Dense
        } else {
            Self::Quantized
        }
    }
}

/// The model's dimensions, read from the GGUF metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct LlamaConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub rms_norm_eps: f32,
    pub rope_theta: f32,
    /// Positions the model can attend over (the smaller of the model's and the configured).
    pub context_length: usize,
}

/// A weight matrix `(out, in)`: its quantized product, and the stored tensor it dequantizes.
struct Linear {
    quantized: QMatMul,
    stored: Arc<QTensor>,
}

impl Linear {
    fn new(tensor: QTensor, name: &str) -> Result<Self, EngineError> {
        let stored = Arc::new(tensor);
        let quantized = QMatMul::from_arc(Arc::clone(&stored))
            .map_err(model_error(&format!("preparing {name}")))?;
        Ok(Self { quantized, stored })
    }

    /// The weights as an f32 tensor `(out, in)`.
    fn dequantize(&self) -> candle_core::Result<Tensor> {
        self.stored.dequantize(&Device::Cpu)
    }

    /// `x · Wᵀ`, through `dense` (this matrix dequantized) when given.
    fn forward(&self, x: &Tensor, dense: Option<&Tensor>) -> candle_core::Result<Tensor> {
        match dense {
            Some(weights) => x.broadcast_matmul(&weights.t()?),
            None => self.quantized.forward(x),
        }
    }
}

struct Layer {
    attn_norm: Tensor,
    wq: Linear,
    wk: Linear,
    wv: Linear,
    wo: Linear,
    ffn_norm: Tensor,
    gate: Linear,
    up: Linear,
    down: Linear,
}

/// One layer's weight matrices dequantized for a [`Products::Dense`] pass.
struct DenseLayer {
    wq: Tensor,
    wk: Tensor,
    wv: Tensor,
    wo: Tensor,
    gate: Tensor,
    up: Tensor,
    down: Tensor,
}

impl Layer {
    /// Dequantizes the seven matrices, spread over the rayon pool.
    fn dequantize(&self) -> candle_core::Result<DenseLayer> {
        use rayon::prelude::*;
        let linears = [
            &self.wq, &self.wk, &self.wv, &self.wo, &self.gate, &self.up, &self.down,
        ];
        let dense = linears
            .par_iter()
            .map(|linear| linear.dequantize())
            .collect::<candle_core::Result<Vec<_>>>()?;
        let [wq, wk, wv, wo, gate, up, down] = <[Tensor; 7]>::try_from(dense)
            .map_err(|_| candle_core::Error::Msg("a layer lost a matrix".into()))?;
        Ok(DenseLayer {
            wq,
            wk,
            wv,
            wo,
            gate,
            up,
            down,
        })
    }
}

/// A quantized llama decoder (SmolLM2 and kin), read from a GGUF file.
pub struct LlamaModel {
    config: LlamaConfig,
    embeddings: Arc<QTensor>,
    layers: Vec<Layer>,
    norm: Tensor,
    output: QMatMul,
    cos: Tensor,
    sin: Tensor,
    device: Device,
}

/// The attention keys and values of one token sequence, per layer, in buffers that grow by
/// [`KV_CHUNK`] rows. Cheap to rewind: [`KvCache::truncate`] only moves the length.
pub struct KvCache {
    /// Per layer: keys and values shaped `(1, kv_heads, capacity, head_dim)`.
    layers: Vec<Option<(Tensor, Tensor)>>,
    len: usize,
    capacity: usize,
}

fn model_error(context: &str) -> impl Fn(candle_core::Error) -> EngineError + '_ {
    move |err| EngineError::internal(format!("{context}: {err}"))
}

impl KvCache {
    /// An empty cache for `layers` layers.
    pub fn new(layers: usize) -> Self {
        Self {
            layers: (0..layers).map(|_| None).collect(),
            len: 0,
            capacity: 0,
        }
    }

    /// Tokens whose keys and values are held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forgets every position from `len` on (no-op when already shorter).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Pretends to hold `len` positions (tests of the prompt cache, which only uses lengths).
    #[cfg(test)]
    pub(crate) fn set_len_for_tests(&mut self, len: usize) {
        self.len = len;
    }

    /// A new cache holding a copy of the first `len` positions (fewer if it holds fewer), for
    /// a conversation that shares them with this one, which keeps its own.
    pub fn copy_prefix(&self, len: usize) -> candle_core::Result<KvCache> {
        let len = len.min(self.len);
        let mut copy = KvCache::new(self.layers.len());
        if len == 0 {
            return Ok(copy);
        }
        let capacity = len.div_ceil(KV_CHUNK) * KV_CHUNK;
        for (slot, held) in copy.layers.iter_mut().zip(&self.layers) {
            let Some((k, v)) = held else {
                candle_core::bail!("KV cache holds {} positions without buffers", self.len);
            };
            let (_, kv_heads, _, head_dim) = k.dims4()?;
            let shape = (1, kv_heads, capacity, head_dim);
            *slot = Some((
                buffer_with(Some(k), len, shape, k.device())?,
                buffer_with(Some(v), len, shape, v.device())?,
            ));
        }
        copy.len = len;
        copy.capacity = capacity;
        Ok(copy)
    }

    /// Bytes held by the buffers (allocated capacity, not only the used length).
    pub fn memory_bytes(&self) -> usize {
        self.layers
            .iter()
            .flatten()
            .map(|(k, v)| (k.elem_count() + v.elem_count()) * 4)
            .sum()
    }

    /// Makes room for `len + extra` positions, copying the held rows into bigger buffers.
    fn reserve(
        &mut self,
        extra: usize,
        kv_heads: usize,
        head_dim: usize,
        device: &Device,
    ) -> candle_core::Result<()> {
        let needed = self.len + extra;
        if needed <= self.capacity {
            return Ok(());
        }
        let capacity = needed.div_ceil(KV_CHUNK) * KV_CHUNK;
        for slot in self.layers.iter_mut() {
            let (k, v) = match slot.as_ref() {
                Some((k, v)) => (Some(k), Some(v)),
                None => (None, None),
            };
            let shape = (1, kv_heads, capacity, head_dim);
            *slot = Some((
                buffer_with(k, self.len, shape, device)?,
                buffer_with(v, self.len, shape, device)?,
            ));
        }
        self.capacity = capacity;
        Ok(())
    }

    /// Writes the new keys and values of `layer` at the current length and returns views of
    /// everything held for that layer, the new rows included.
    fn append(
        &self,
        layer: usize,
        k: &Tensor,
        v: &Tensor,
    ) -> candle_core::Result<(Tensor, Tensor)> {
        let seq = k.dim(2)?;
        let Some((k_all, v_all)) = self.layers.get(layer).and_then(Option::as_ref) else {
            candle_core::bail!("KV cache has no buffers for layer {layer}");
        };
        k_all.slice_set(k, 2, self.len)?;
        v_all.slice_set(v, 2, self.len)?;
        Ok((
            k_all.narrow(2, 0, self.len + seq)?,
            v_all.narrow(2, 0, self.len + seq)?,
        ))
    }
}

/// A zeroed key or value buffer of `shape` holding the first `rows` positions of `held`.
fn buffer_with(
    held: Option<&Tensor>,
    rows: usize,
    shape: (usize, usize, usize, usize),
    device: &Device,
) -> candle_core::Result<Tensor> {
    let buffer = Tensor::zeros(shape, DType::F32, device)?;
    if let Some(held) = held.filter(|_| rows > 0) {
        buffer.slice_set(&held.narrow(2, 0, rows)?.contiguous()?, 2, 0)?;
    }
    Ok(buffer)
}

/// How the weights are held once loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weights {
    /// Block formats without a fast CPU kernel requantized to Q8_0 (what serving uses).
    Requantized,
    /// Exactly as the file stores them: the reference the served model is checked against.
    AsStored,
}

/// Reads one tensor, requantizing it when `weights` says so.
fn load_weight(
    content: &gguf_file::Content,
    reader: &mut BufReader<File>,
    name: &str,
    weights: Weights,
) -> Result<QTensor, EngineError> {
    let tensor = content
        .tensor(reader, name, &Device::Cpu)
        .map_err(model_error(&format!("reading tensor {name}")))?;
    match weights {
        Weights::Requantized => requantize(tensor, name),
        Weights::AsStored => Ok(tensor),
    }
}

/// Requantizes `tensor` to Q8_0 unless it is already Q8_0, a float tensor, or has rows that do
/// not split into Q8_0 blocks of 32.
pub fn requantize(tensor: QTensor, name: &str) -> Result<QTensor, EngineError> {
    let keep = matches!(
        tensor.dtype(),
        GgmlDType::Q8_0 | GgmlDType::F32 | GgmlDType::F16 | GgmlDType::BF16
    );
    let row = tensor.shape().dims().last().copied().unwrap_or(0);
    if keep || !row.is_multiple_of(GgmlDType::Q8_0.block_size()) {
        return Ok(tensor);
    }
    let device = tensor.device();
    let dense = tensor
        .dequantize(&device)
        .map_err(model_error(&format!("dequantizing {name}")))?;
    QTensor::quantize(&dense, GgmlDType::Q8_0).map_err(model_error(&format!("requantizing {name}")))
}

fn metadata_u32(content: &gguf_file::Content, key: &str) -> Result<usize, EngineError> {
    content
        .metadata
        .get(key)
        .and_then(|v| v.to_u32().ok())
        .map(|v| v as usize)
        .ok_or_else(|| EngineError::internal(format!("the GGUF file has no integer `{key}`")))
}

fn metadata_f32(content: &gguf_file::Content, key: &str) -> Option<f32> {
    content.metadata.get(key).and_then(|v| v.to_f32().ok())
}

impl LlamaModel {
    /// Reads the GGUF header of `path` (metadata and tensor index, not the weights).
    pub fn read_header(path: &Path) -> Result<(gguf_file::Content, BufReader<File>), EngineError> {
        let file = File::open(path).map_err(|err| {
            EngineError::unavailable(format!(
                "cannot open the language model {}: {err}",
                path.display()
            ))
        })?;
        let mut reader = BufReader::new(file);
        let content = gguf_file::Content::read(&mut reader).map_err(|err| {
            EngineError::internal(format!(
                "{} is not a readable GGUF file: {err}",
                path.display()
            ))
        })?;
        Ok((content, reader))
    }

    /// Loads the weights of a llama-architecture GGUF for serving, attending over at most
    /// `max_context` positions.
    pub fn load(
        content: &gguf_file::Content,
        reader: &mut BufReader<File>,
        max_context: usize,
    ) -> Result<Self, EngineError> {
        Self::load_as(content, reader, max_context, Weights::Requantized)
    }

    /// [`LlamaModel::load`] with the weights held as `weights` says.
    pub fn load_as(
        content: &gguf_file::Content,
        reader: &mut BufReader<File>,
        max_context: usize,
        weights: Weights,
    ) -> Result<Self, EngineError> {
        let device = Device::Cpu;
        let arch = content
            .metadata
            .get("general.architecture")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_default();
        if arch != "llama" {
            return Err(EngineError::internal(format!(
                "the language model has architecture `{arch}`; only `llama` is supported"
            )));
        }
        let heads = metadata_u32(content, "llama.attention.head_count")?;
        let kv_heads = metadata_u32(content, "llama.attention.head_count_kv")?;
        let layers_count = metadata_u32(content, "llama.block_count")?;
        let hidden_size = metadata_u32(content, "llama.embedding_length")?;
        let model_context = metadata_u32(content, "llama.context_length").unwrap_or(2048);
        if heads == 0
            || kv_heads == 0
            || !heads.is_multiple_of(kv_heads)
            || !hidden_size.is_multiple_of(heads)
        {
            return Err(EngineError::internal(format!(
                "inconsistent attention shape: {heads} heads, {kv_heads} KV heads, width {hidden_size}"
            )));
        }
        let head_dim = hidden_size / heads;
        let rms_norm_eps =
            metadata_f32(content, "llama.attention.layer_norm_rms_epsilon").unwrap_or(1e-5);
        let rope_theta = metadata_f32(content, "llama.rope.freq_base").unwrap_or(10_000.0);
        let context_length = model_context.min(max_context.max(1));

        let embeddings = load_weight(content, reader, "token_embd.weight", weights)?;
        let vocab_size = embeddings.shape().dims().first().copied().unwrap_or(0);
        let embeddings = Arc::new(embeddings);
        let output = if content.tensor_infos.contains_key("output.weight") {
            QMatMul::from_qtensor(load_weight(content, reader, "output.weight", weights)?)
        } else {
            // Tied embeddings: the output projection is the embedding matrix.
            QMatMul::from_arc(Arc::clone(&embeddings))
        }
        .map_err(model_error("preparing the output projection"))?;

        let dense = |tensor: QTensor, name: &str| {
            tensor
                .dequantize(&device)
                .map_err(model_error(&format!("reading {name}")))
        };
        let mut layers = Vec::with_capacity(layers_count);
        for index in 0..layers_count {
            let mut weight = |suffix: &str| {
                let name = format!("blk.{index}.{suffix}.weight");
                load_weight(content, reader, &name, weights).map(|t| (t, name))
            };
            let (t, n) = weight("attn_norm")?;
            let attn_norm = dense(t, &n)?;
            let (t, n) = weight("attn_q")?;
            let wq = Linear::new(t, &n)?;
            let (t, n) = weight("attn_k")?;
            let wk = Linear::new(t, &n)?;
            let (t, n) = weight("attn_v")?;
            let wv = Linear::new(t, &n)?;
            let (t, n) = weight("attn_output")?;
            let wo = Linear::new(t, &n)?;
            let (t, n) = weight("ffn_norm")?;
            let ffn_norm = dense(t, &n)?;
            let (t, n) = weight("ffn_gate")?;
            let gate = Linear::new(t, &n)?;
            let (t, n) = weight("ffn_up")?;
            let up = Linear::new(t, &n)?;
            let (t, n) = weight("ffn_down")?;
            let down = Linear::new(t, &n)?;
            layers.push(Layer {
                attn_norm,
                wq,
                wk,
                wv,
                wo,
                ffn_norm,
                gate,
                up,
                down,
            });
        }
        let norm = dense(
            load_weight(content, reader, "output_norm.weight", weights)?,
            "output_norm.weight",
        )?;
        let (cos, sin) = rope_tables(head_dim, rope_theta, context_length, &device)
            .map_err(model_error("computing the rotary tables"))?;
        Ok(Self {
            config: LlamaConfig {
                vocab_size,
                hidden_size,
                layers: layers_count,
                heads,
                kv_heads,
                head_dim,
                rms_norm_eps,
                rope_theta,
                context_length,
            },
            embeddings,
            layers,
            norm,
            output,
            cos,
            sin,
            device,
        })
    }

    /// The model's dimensions.
    pub fn config(&self) -> &LlamaConfig {
        &self.config
    }

    /// An empty KV cache shaped for this model.
    pub fn new_cache(&self) -> KvCache {
        KvCache::new(self.config.layers)
    }

    /// Feeds `tokens` after the positions already in `cache` and returns the logits of the
    /// last one (`vocab_size` values), multiplying the faster way for their number
    /// ([`Products::for_tokens`]).
    pub fn forward(&self, tokens: &[u32], cache: &mut KvCache) -> Result<Vec<f32>, EngineError> {
        self.forward_with(tokens, cache, Products::for_tokens(tokens.len()))
    }

    /// [`LlamaModel::forward`] multiplying by `products` (benches, and the tests that hold
    /// the two ways to the same answers).
    ///
    /// The pass goes layer by layer over all the tokens at once, so a dense pass dequantizes
    /// each layer once however long the input; only the attention goes in query chunks of
    /// [`ATTENTION_CHUNK`], which bounds its score matrix.
    pub fn forward_with(
        &self,
        tokens: &[u32],
        cache: &mut KvCache,
        products: Products,
    ) -> Result<Vec<f32>, EngineError> {
        if tokens.is_empty() {
            return Err(EngineError::internal("forward pass over no tokens"));
        }
        if cache.len() + tokens.len() > self.config.context_length {
            return Err(EngineError::invalid(format!(
                "the conversation needs {} tokens; the model attends over at most {}",
                cache.len() + tokens.len(),
                self.config.context_length
            )));
        }
        self.pass(tokens, cache, products)
            .map_err(model_error("language model forward pass"))?
            .to_vec1::<f32>()
            .map_err(model_error("reading the logits"))
    }

    fn pass(
        &self,
        tokens: &[u32],
        cache: &mut KvCache,
        products: Products,
    ) -> candle_core::Result<Tensor> {
        let c = &self.config;
        let seq = tokens.len();
        let pos = cache.len();
        cache.reserve(seq, c.kv_heads, c.head_dim, &self.device)?;
        let ids = Tensor::new(tokens, &self.device)?.unsqueeze(0)?;
        let mut x = self.embeddings.embedding(&ids)?;
        let cos = self.cos.narrow(0, pos, seq)?;
        let sin = self.sin.narrow(0, pos, seq)?;
        for (index, layer) in self.layers.iter().enumerate() {
            let dense = match products {
                Products::Dense => Some(layer.dequantize()?),
                Products::Quantized => None,
            };
            let dense = dense.as_ref();
            let h = candle_nn::ops::rms_norm(&x, &layer.attn_norm, c.rms_norm_eps)?;
            let heads = |linear: &Linear, weights: Option<&Tensor>, count: usize| {
                linear
                    .forward(&h, weights)?
                    .reshape((1, seq, count, c.head_dim))?
                    .transpose(1, 2)?
                    .contiguous()
            };
            let q = heads(&layer.wq, dense.map(|d| &d.wq), c.heads)?;
            let k = heads(&layer.wk, dense.map(|d| &d.wk), c.kv_heads)?;
            let v = heads(&layer.wv, dense.map(|d| &d.wv), c.kv_heads)?;
            // GGUF llama weights are permuted for the interleaved (GPT-J style) rotation.
            let q = candle_nn::rotary_emb::rope_i(&q, &cos, &sin)?;
            let k = candle_nn::rotary_emb::rope_i(&k, &cos, &sin)?;
            let (k_all, v_all) = cache.append(index, &k, &v)?;
            let y = self.attention(&q, &k_all, &v_all, pos)?;
            x = (layer.wo.forward(&y, dense.map(|d| &d.wo))? + x)?;
            let h = candle_nn::ops::rms_norm(&x, &layer.ffn_norm, c.rms_norm_eps)?;
            let gate = layer.gate.forward(&h, dense.map(|d| &d.gate))?;
            let up = layer.up.forward(&h, dense.map(|d| &d.up))?;
            let gated = (candle_nn::ops::silu(&gate)? * up)?;
            x = (layer.down.forward(&gated, dense.map(|d| &d.down))? + x)?;
        }
        cache.len = pos + seq;
        let last = x.narrow(1, seq - 1, 1)?;
        let last = candle_nn::ops::rms_norm(&last, &self.norm, c.rms_norm_eps)?;
        self.output.forward(&last)?.flatten_all()
    }

    /// Causal grouped-query attention of the queries `q` `(1, heads, seq, head_dim)`, at
    /// positions `pos..pos + seq`, over the keys and values of every position up to theirs;
    /// returns `(1, seq, hidden)`. Goes in query chunks of [`ATTENTION_CHUNK`].
    fn attention(
        &self,
        q: &Tensor,
        k_all: &Tensor,
        v_all: &Tensor,
        pos: usize,
    ) -> candle_core::Result<Tensor> {
        let c = &self.config;
        let seq = q.dim(2)?;
        let rep = c.heads / c.kv_heads;
        let scale = 1.0 / (c.head_dim as f64).sqrt();
        let mut outputs = Vec::with_capacity(seq.div_ceil(ATTENTION_CHUNK));
        for start in (0..seq).step_by(ATTENTION_CHUNK) {
            let len = ATTENTION_CHUNK.min(seq - start);
            let seen = pos + start + len;
            // Without copying K and V: the `rep` query heads sharing one KV head are stacked
            // along the rows.
            let q = q.narrow(2, start, len)?.contiguous()?.reshape((
                1,
                c.kv_heads,
                rep * len,
                c.head_dim,
            ))?;
            let keys = k_all.narrow(2, 0, seen)?;
            let values = v_all.narrow(2, 0, seen)?;
            let scores = (q.matmul(&keys.t()?)? * scale)?;
            let scores = if len > 1 {
                scores.broadcast_add(&grouped_causal_mask(len, pos + start, rep, &self.device)?)?
            } else {
                scores
            };
            let probs = candle_nn::ops::softmax_last_dim(&scores)?;
            outputs.push(
                probs
                    .matmul(&values)?
                    .reshape((1, c.heads, len, c.head_dim))?,
            );
        }
        let y = if outputs.len() == 1 {
            outputs.remove(0)
        } else {
            Tensor::cat(&outputs, 2)?
        };
        y.transpose(1, 2)?.reshape((1, seq, c.hidden_size))
    }
}

/// Additive mask `(rep * seq, pos + seq)` for `seq` new queries after `pos` cached positions,
/// with the rows of the `rep` query heads of a KV group stacked: row `r` is position
/// `pos + r % seq`.
fn grouped_causal_mask(
    seq: usize,
    pos: usize,
    rep: usize,
    device: &Device,
) -> candle_core::Result<Tensor> {
    let width = pos + seq;
    let mut values = vec![0f32; rep * seq * width];
    for row in 0..rep * seq {
        let query = pos + row % seq;
        for value in &mut values[row * width + query + 1..(row + 1) * width] {
            *value = f32::NEG_INFINITY;
        }
    }
    Tensor::from_vec(values, (rep * seq, width), device)
}

/// Rotary cos/sin tables `(positions, head_dim / 2)`.
fn rope_tables(
    head_dim: usize,
    theta: f32,
    positions: usize,
    device: &Device,
) -> candle_core::Result<(Tensor, Tensor)> {
    let half = head_dim / 2;
    let mut cos = Vec::with_capacity(positions * half);
    let mut sin = Vec::with_capacity(positions * half);
    for p in 0..positions {
        for i in 0..half {
            let freq = 1.0 / (theta as f64).powf(2.0 * i as f64 / head_dim as f64);
            let angle = p as f64 * freq;
            cos.push(angle.cos() as f32);
            sin.push(angle.sin() as f32);
        }
    }
    Ok((
        Tensor::from_vec(cos, (positions, half), device)?,
        Tensor::from_vec(sin, (positions, half), device)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_mask_lets_each_row_see_its_own_prefix() {
        // Two new positions after three cached ones, two query heads per KV head.
        let mask = grouped_causal_mask(2, 3, 2, &Device::Cpu).unwrap();
        let rows = mask.to_vec2::<f32>().unwrap();
        assert_eq!(rows.len(), 4);
        for (r, row) in rows.iter().enumerate() {
            let visible = row.iter().filter(|v| v.is_finite()).count();
            // Row r is position 3 + r % 2: it sees positions 0..=3 + r % 2.
            assert_eq!(visible, 4 + r % 2, "row {r}: {row:?}");
        }
    }

    #[test]
    fn kv_cache_truncates_without_touching_capacity() {
        let mut cache = KvCache::new(2);
        cache.reserve(10, 1, 4, &Device::Cpu).unwrap();
        cache.len = 10;
        cache.truncate(4);
        assert_eq!(cache.len(), 4);
        cache.truncate(8);
        assert_eq!(cache.len(), 4);
        assert_eq!(cache.memory_bytes(), 2 * 2 * KV_CHUNK * 4 * 4);
    }
}
