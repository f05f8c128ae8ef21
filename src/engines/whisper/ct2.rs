//! Reader for CTranslate2 `model.bin` files holding a `WhisperSpec`, and the mapping of its
//! variables onto the tensor names of candle-transformers' Whisper model.
//!
//! The file layout (version 6): `u32` format version, a `u16`-length-prefixed spec name,
//! `u32` spec revision, `u32` variable count, then per variable a `u16`-length-prefixed
//! NUL-terminated name, `u8` rank, `rank` x `u32` dimensions, `u8` data type, `u32` byte count
//! and the raw little-endian bytes; then `u32` alias count and `(alias, target)` name pairs.
//!
//! CTranslate2 fuses some projections that candle keeps apart: the self-attention `linear_0`
//! is `[q; k; v]` (3d x d) and the cross-attention `linear_1` is `[k; v]` (2d x d). They are
//! split here; Whisper's key projections have no bias (CTranslate2 stores zeros there), so
//! those bias slices are dropped. Every malformed or truncated file is an error, never a panic.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;

use candle_core::{DType, Device, Tensor};

use candle_nn::VarBuilder;

/// The one format version this reader understands.
const FORMAT_VERSION: u32 = 6;
/// The spec this engine runs.
const WHISPER_SPEC: &str = "WhisperSpec";
/// Larger ranks do not occur in any CTranslate2 model; a larger value means a corrupt file.
const MAX_RANK: u8 = 8;

/// Why a model file could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ct2Error(pub String);

impl std::fmt::Display for Ct2Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Ct2Error {}

impl From<candle_core::Error> for Ct2Error {
    fn from(err: candle_core::Error) -> Self {
        Ct2Error(format!("building a tensor failed: {err}"))
    }
}

/// CTranslate2's element types, by their numeric code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ct2Type {
    F32,
    I8,
    I16,
    I32,
    F16,
    Bf16,
}

impl Ct2Type {
    fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => Self::F32,
            1 => Self::I8,
            2 => Self::I16,
            3 => Self::I32,
            4 => Self::F16,
            5 => Self::Bf16,
            _ => return None,
        })
    }

    fn size(self) -> usize {
        match self {
            Self::I8 => 1,
            Self::I16 | Self::F16 | Self::Bf16 => 2,
            Self::F32 | Self::I32 => 4,
        }
    }
}

/// One stored variable: its shape, type and where its bytes are in the file.
#[derive(Debug, Clone)]
struct Variable {
    dims: Vec<usize>,
    dtype: Ct2Type,
    bytes: Range<usize>,
}

/// A parsed `model.bin`: the raw file and an index of its variables (aliases resolved).
pub struct Ct2File {
    data: Vec<u8>,
    variables: HashMap<String, Variable>,
    /// Every weight already converted to f32 (filled by `convert_all`).
    converted: OnceLock<HashMap<String, Tensor>>,
}

/// A bounds-checked reader over the file bytes.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, len: usize, what: &str) -> Result<&'a [u8], Ct2Error> {
        let end = self
            .pos
            .checked_add(len)
            .filter(|&end| end <= self.data.len());
        match end {
            Some(end) => {
                let slice = &self.data[self.pos..end];
                self.pos = end;
                Ok(slice)
            }
            None => Err(Ct2Error(format!(
                "the file is truncated: {len} bytes of {what} expected at offset {}, only {} left",
                self.pos,
                self.data.len() - self.pos
            ))),
        }
    }

    fn u8(&mut self, what: &str) -> Result<u8, Ct2Error> {
        Ok(self.take(1, what)?[0])
    }

    fn u16(&mut self, what: &str) -> Result<u16, Ct2Error> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, what: &str) -> Result<u32, Ct2Error> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A `u16`-length-prefixed string, with its NUL terminator removed.
    fn string(&mut self, what: &str) -> Result<String, Ct2Error> {
        let len = self.u16(what)? as usize;
        let bytes = self.take(len, what)?;
        let bytes = bytes.strip_suffix(&[0]).unwrap_or(bytes);
        String::from_utf8(bytes.to_vec())
            .map_err(|_| Ct2Error(format!("{what} is not valid UTF-8")))
    }
}

impl Ct2File {
    /// Reads and indexes a model file.
    pub fn open(path: &Path) -> Result<Self, Ct2Error> {
        let data = std::fs::read(path)
            .map_err(|err| Ct2Error(format!("cannot read {}: {err}", path.display())))?;
        Self::parse(data).map_err(|err| Ct2Error(format!("{}: {}", path.display(), err.0)))
    }

    /// Indexes the bytes of a model file.
    pub fn parse(data: Vec<u8>) -> Result<Self, Ct2Error> {
        let mut cur = Cursor {
            data: &data,
            pos: 0,
        };
        let version = cur.u32("the format version")?;
        if version != FORMAT_VERSION {
            return Err(Ct2Error(format!(
                "unsupported CTranslate2 format version {version} (expected {FORMAT_VERSION})"
            )));
        }
        let spec = cur.string("the spec name")?;
        if spec != WHISPER_SPEC {
            return Err(Ct2Error(format!(
                "the model is a {spec:?}, not a {WHISPER_SPEC}"
            )));
        }
        let _revision = cur.u32("the spec revision")?;
        let count = cur.u32("the variable count")? as usize;
        let mut variables = HashMap::with_capacity(count.min(4096));
        for index in 0..count {
            let name = cur.string(&format!("the name of variable {index}"))?;
            let rank = cur.u8(&format!("the rank of {name}"))?;
            if rank > MAX_RANK {
                return Err(Ct2Error(format!(
                    "variable {name} has an impossible rank {rank}"
                )));
            }
            let mut dims = Vec::with_capacity(rank as usize);
            for _ in 0..rank {
                dims.push(cur.u32(&format!("the shape of {name}"))? as usize);
            }
            let code = cur.u8(&format!("the type of {name}"))?;
            let dtype = Ct2Type::from_code(code)
                .ok_or_else(|| Ct2Error(format!("variable {name} has unknown type code {code}")))?;
            let len = cur.u32(&format!("the size of {name}"))? as usize;
            let expected = dims
                .iter()
                .try_fold(dtype.size(), |acc, &d| acc.checked_mul(d))
                .ok_or_else(|| Ct2Error(format!("variable {name} has an impossible shape")))?;
            if len != expected {
                return Err(Ct2Error(format!(
                    "variable {name} holds {len} bytes but its shape {dims:?} needs {expected}"
                )));
            }
            let start = cur.pos;
            cur.take(len, &format!("the data of {name}"))?;
            variables.insert(
                name,
                Variable {
                    dims,
                    dtype,
                    bytes: start..start + len,
                },
            );
        }
        // Aliases are optional in older files; when present they must be complete.
        if cur.pos < data.len() {
            let aliases = cur.u32("the alias count")? as usize;
            for _ in 0..aliases {
                let alias = cur.string("an alias name")?;
                let target = cur.string("an alias target")?;
                let var = variables.get(&target).cloned().ok_or_else(|| {
                    Ct2Error(format!("alias {alias} points at missing variable {target}"))
                })?;
                variables.insert(alias, var);
            }
        }
        Ok(Self {
            data,
            variables,
            converted: OnceLock::new(),
        })
    }

    fn get(&self, name: &str) -> Result<&Variable, Ct2Error> {
        self.variables
            .get(name)
            .ok_or_else(|| Ct2Error(format!("the model has no variable {name}")))
    }

    /// A small integer attribute such as `encoder/num_heads`.
    fn scalar(&self, name: &str) -> Option<i64> {
        let var = self.variables.get(name)?;
        let b = &self.data[var.bytes.clone()];
        match (var.dtype, b.len()) {
            (Ct2Type::I8, 1) => Some(b[0] as i8 as i64),
            (Ct2Type::I16, 2) => Some(i16::from_le_bytes([b[0], b[1]]) as i64),
            (Ct2Type::I32, 4) => Some(i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64),
            _ => None,
        }
    }

    /// Converts every weight to f32 on all cores (loading is dominated by this conversion).
    fn convert_all(&self) -> Result<(), Ct2Error> {
        if self.converted.get().is_some() {
            return Ok(());
        }
        let mut names: Vec<&String> = self
            .variables
            .iter()
            .filter(|(_, v)| {
                !v.dims.is_empty() && matches!(v.dtype, Ct2Type::F32 | Ct2Type::F16 | Ct2Type::Bf16)
            })
            .map(|(name, _)| name)
            .collect();
        names.sort();
        names.dedup();
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 8);
        // Deal the variables out round-robin by size so the threads finish together.
        names.sort_by_key(|n| std::cmp::Reverse(self.variables[*n].bytes.len()));
        let shares: Vec<Vec<&String>> = (0..threads)
            .map(|t| names.iter().skip(t).step_by(threads).copied().collect())
            .collect();
        let converted = std::thread::scope(|scope| {
            let workers: Vec<_> = shares
                .into_iter()
                .map(|share| {
                    scope.spawn(move || {
                        share
                            .into_iter()
                            .map(|name| Ok((name.clone(), self.convert(name)?)))
                            .collect::<Result<Vec<_>, Ct2Error>>()
                    })
                })
                .collect();
            let mut all = HashMap::new();
            for worker in workers {
                let part = worker
                    .join()
                    .map_err(|_| Ct2Error("a weight conversion thread failed".into()))??;
                all.extend(part);
            }
            Ok::<_, Ct2Error>(all)
        })?;
        let _ = self.converted.set(converted);
        Ok(())
    }

    /// A weight as an f32 CPU tensor.
    fn tensor(&self, name: &str) -> Result<Tensor, Ct2Error> {
        match self.converted.get().and_then(|all| all.get(name)) {
            Some(t) => Ok(t.clone()),
            None => self.convert(name),
        }
    }

    fn convert(&self, name: &str) -> Result<Tensor, Ct2Error> {
        let var = self.get(name)?;
        if var.dims.is_empty() {
            return Err(Ct2Error(format!(
                "variable {name} is a scalar, not a weight"
            )));
        }
        let raw = &self.data[var.bytes.clone()];
        let values: Vec<f32> = match var.dtype {
            Ct2Type::F32 => raw
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            Ct2Type::F16 => raw
                .chunks_exact(2)
                .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
                .collect(),
            Ct2Type::Bf16 => raw
                .chunks_exact(2)
                .map(|b| f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16))
                .collect(),
            other => {
                return Err(Ct2Error(format!(
                    "variable {name} is quantized ({other:?}); convert the model with \
                     --quantization float16 or float32"
                )))
            }
        };
        Ok(Tensor::from_vec(values, var.dims.as_slice(), &Device::Cpu)?)
    }

    fn dims(&self, name: &str) -> Result<&[usize], Ct2Error> {
        Ok(&self.get(name)?.dims)
    }

    fn count_layers(&self, prefix: &str) -> usize {
        (0..)
            .take_while(|i| {
                self.variables
                    .contains_key(&format!("{prefix}/layer_{i}/ffn/linear_0/weight"))
            })
            .count()
    }

    /// Reads the model dimensions from the tensor shapes.
    pub fn dims_of_model(&self) -> Result<ModelDims, Ct2Error> {
        let conv1 = self.dims("encoder/conv1/weight")?;
        if conv1.len() != 3 {
            return Err(Ct2Error("encoder/conv1/weight is not rank 3".into()));
        }
        let d_model = conv1[0];
        let n_mels = conv1[1];
        let audio_ctx = self.dims("encoder/position_encodings/encodings")?;
        let text_ctx = self.dims("decoder/position_encodings/encodings")?;
        let vocab = self.dims("decoder/embeddings/weight")?;
        let heads = |name: &str| self.scalar(name).filter(|&h| h > 0).map(|h| h as usize);
        let dims = ModelDims {
            n_mels,
            d_model,
            n_audio_ctx: audio_ctx.first().copied().unwrap_or(0),
            n_text_ctx: text_ctx.first().copied().unwrap_or(0),
            n_vocab: vocab.first().copied().unwrap_or(0),
            n_encoder_layers: self.count_layers("encoder"),
            n_decoder_layers: self.count_layers("decoder"),
            n_encoder_heads: heads("encoder/num_heads").unwrap_or(d_model / 64),
            n_decoder_heads: heads("decoder/num_heads").unwrap_or(d_model / 64),
        };
        dims.validate()?;
        Ok(dims)
    }

    /// All weights under candle-transformers' Whisper names (`model.encoder.layers.0.
    /// self_attn.q_proj.weight`, ...), as f32 CPU tensors.
    pub fn candle_tensors(&self, dims: &ModelDims) -> Result<HashMap<String, Tensor>, Ct2Error> {
        self.convert_all()?;
        let d = dims.d_model;
        let mut out = HashMap::new();
        let mut put = |name: String, t: Tensor| {
            out.insert(name, t);
        };
        for (side, layers) in [
            ("encoder", dims.n_encoder_layers),
            ("decoder", dims.n_decoder_layers),
        ] {
            let to = format!("model.{side}");
            put(
                format!("{to}.embed_positions.weight"),
                self.tensor(&format!("{side}/position_encodings/encodings"))?,
            );
            self.layer_norm(
                &format!("{side}/layer_norm"),
                &format!("{to}.layer_norm"),
                &mut put,
            )?;
            for i in 0..layers {
                let from = format!("{side}/layer_{i}");
                let to = format!("{to}.layers.{i}");
                // Self-attention: fused [q; k; v].
                let w = self.tensor(&format!("{from}/self_attention/linear_0/weight"))?;
                let b = self.tensor(&format!("{from}/self_attention/linear_0/bias"))?;
                check_rows(&w, 3 * d, &from)?;
                put(format!("{to}.self_attn.q_proj.weight"), w.narrow(0, 0, d)?);
                put(format!("{to}.self_attn.q_proj.bias"), b.narrow(0, 0, d)?);
                put(format!("{to}.self_attn.k_proj.weight"), w.narrow(0, d, d)?);
                put(
                    format!("{to}.self_attn.v_proj.weight"),
                    w.narrow(0, 2 * d, d)?,
                );
                put(
                    format!("{to}.self_attn.v_proj.bias"),
                    b.narrow(0, 2 * d, d)?,
                );
                self.linear(
                    &format!("{from}/self_attention/linear_1"),
                    &format!("{to}.self_attn.out_proj"),
                    &mut put,
                )?;
                self.layer_norm(
                    &format!("{from}/self_attention/layer_norm"),
                    &format!("{to}.self_attn_layer_norm"),
                    &mut put,
                )?;
                if side == "decoder" {
                    // Cross-attention: q alone, fused [k; v].
                    self.linear(
                        &format!("{from}/attention/linear_0"),
                        &format!("{to}.encoder_attn.q_proj"),
                        &mut put,
                    )?;
                    let w = self.tensor(&format!("{from}/attention/linear_1/weight"))?;
                    let b = self.tensor(&format!("{from}/attention/linear_1/bias"))?;
                    check_rows(&w, 2 * d, &from)?;
                    put(
                        format!("{to}.encoder_attn.k_proj.weight"),
                        w.narrow(0, 0, d)?,
                    );
                    put(
                        format!("{to}.encoder_attn.v_proj.weight"),
                        w.narrow(0, d, d)?,
                    );
                    put(format!("{to}.encoder_attn.v_proj.bias"), b.narrow(0, d, d)?);
                    self.linear(
                        &format!("{from}/attention/linear_2"),
                        &format!("{to}.encoder_attn.out_proj"),
                        &mut put,
                    )?;
                    self.layer_norm(
                        &format!("{from}/attention/layer_norm"),
                        &format!("{to}.encoder_attn_layer_norm"),
                        &mut put,
                    )?;
                }
                self.linear(
                    &format!("{from}/ffn/linear_0"),
                    &format!("{to}.fc1"),
                    &mut put,
                )?;
                self.linear(
                    &format!("{from}/ffn/linear_1"),
                    &format!("{to}.fc2"),
                    &mut put,
                )?;
                self.layer_norm(
                    &format!("{from}/ffn/layer_norm"),
                    &format!("{to}.final_layer_norm"),
                    &mut put,
                )?;
            }
        }
        for conv in ["conv1", "conv2"] {
            self.linear(
                &format!("encoder/{conv}"),
                &format!("model.encoder.{conv}"),
                &mut put,
            )?;
        }
        put(
            "model.decoder.embed_tokens.weight".into(),
            self.tensor("decoder/embeddings/weight")?,
        );
        Ok(out)
    }

    fn linear(
        &self,
        from: &str,
        to: &str,
        put: &mut impl FnMut(String, Tensor),
    ) -> Result<(), Ct2Error> {
        put(
            format!("{to}.weight"),
            self.tensor(&format!("{from}/weight"))?,
        );
        put(format!("{to}.bias"), self.tensor(&format!("{from}/bias"))?);
        Ok(())
    }

    fn layer_norm(
        &self,
        from: &str,
        to: &str,
        put: &mut impl FnMut(String, Tensor),
    ) -> Result<(), Ct2Error> {
        put(
            format!("{to}.weight"),
            self.tensor(&format!("{from}/gamma"))?,
        );
        put(format!("{to}.bias"), self.tensor(&format!("{from}/beta"))?);
        Ok(())
    }
}

/// IEEE half to single precision without branches on the common path, so the loop over a
/// whole weight vectorises (a per-element library call is several times slower to load).
fn f16_to_f32(h: u16) -> f32 {
    let h = h as u32;
    let sign = (h & 0x8000) << 16;
    let magnitude = (h & 0x7fff) << 13;
    // Rebias the exponent by multiplying by 2^112; this also normalises subnormals.
    let mut bits = (f32::from_bits(magnitude) * f32::from_bits(0x7780_0000)).to_bits();
    if h & 0x7c00 == 0x7c00 {
        // Infinity or NaN keeps an all-ones exponent.
        bits |= 0x7f80_0000;
    }
    f32::from_bits(bits | sign)
}

fn check_rows(t: &Tensor, rows: usize, layer: &str) -> Result<(), Ct2Error> {
    match t.dims() {
        [r, _] if *r == rows => Ok(()),
        other => Err(Ct2Error(format!(
            "{layer}: a fused attention projection has shape {other:?}, expected {rows} rows"
        ))),
    }
}

/// The sizes of a Whisper model, as read from its weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelDims {
    pub n_mels: usize,
    pub d_model: usize,
    pub n_audio_ctx: usize,
    pub n_text_ctx: usize,
    pub n_vocab: usize,
    pub n_encoder_layers: usize,
    pub n_decoder_layers: usize,
    pub n_encoder_heads: usize,
    pub n_decoder_heads: usize,
}

impl ModelDims {
    fn validate(&self) -> Result<(), Ct2Error> {
        let ok = self.n_mels > 0
            && self.d_model > 0
            && self.n_audio_ctx > 0
            && self.n_text_ctx > 0
            && self.n_vocab > 0
            && self.n_encoder_layers > 0
            && self.n_decoder_layers > 0
            && self.n_encoder_heads > 0
            && self.n_decoder_heads > 0
            && self.d_model.is_multiple_of(self.n_encoder_heads)
            && self.d_model.is_multiple_of(self.n_decoder_heads);
        if ok {
            Ok(())
        } else {
            Err(Ct2Error(format!("inconsistent model dimensions: {self:?}")))
        }
    }
}

/// Reads a model file into a VarBuilder under candle-transformers' names, with its dimensions.
pub fn load_var_builder(path: &Path) -> Result<(VarBuilder<'static>, ModelDims), Ct2Error> {
    let file = Ct2File::open(path)?;
    let dims = file.dims_of_model()?;
    let tensors = file.candle_tensors(&dims)?;
    Ok((
        VarBuilder::from_tensors(tensors, DType::F32, &Device::Cpu),
        dims,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny_path() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/whisper-tiny.en/model.bin")
    }

    #[test]
    fn reads_the_tiny_model_dimensions_and_names() {
        let file = Ct2File::open(&tiny_path()).expect("tiny.en model");
        let dims = file.dims_of_model().unwrap();
        assert_eq!(dims.d_model, 384);
        assert_eq!(dims.n_mels, 80);
        assert_eq!(dims.n_audio_ctx, 1500);
        assert_eq!(dims.n_text_ctx, 448);
        assert_eq!(dims.n_vocab, 51864);
        assert_eq!((dims.n_encoder_layers, dims.n_decoder_layers), (4, 4));
        assert_eq!((dims.n_encoder_heads, dims.n_decoder_heads), (6, 6));
        let tensors = file.candle_tensors(&dims).unwrap();
        let q = &tensors["model.decoder.layers.3.self_attn.q_proj.weight"];
        assert_eq!(q.dims(), &[384, 384]);
        assert!(tensors.contains_key("model.decoder.layers.0.encoder_attn.v_proj.bias"));
        assert!(!tensors.contains_key("model.encoder.layers.0.self_attn.k_proj.bias"));
        // The alias resolves: the output projection is the token embedding.
        assert!(file.get("decoder/projection/weight").is_ok());
    }

    #[test]
    fn candle_transformers_whisper_loads_from_the_mapped_names() {
        use candle_transformers::models::whisper::{model::Whisper, Config};
        let (vb, dims) = load_var_builder(&tiny_path()).unwrap();
        let config = Config {
            num_mel_bins: dims.n_mels,
            max_source_positions: dims.n_audio_ctx,
            d_model: dims.d_model,
            encoder_attention_heads: dims.n_encoder_heads,
            encoder_layers: dims.n_encoder_layers,
            vocab_size: dims.n_vocab,
            max_target_positions: dims.n_text_ctx,
            decoder_attention_heads: dims.n_decoder_heads,
            decoder_layers: dims.n_decoder_layers,
            suppress_tokens: Vec::new(),
        };
        assert!(Whisper::load(&vb, config).is_ok());
    }

    #[test]
    fn half_precision_converts_exactly() {
        for (bits, want) in [
            (0x0000u16, 0.0f32),
            (0x3c00, 1.0),
            (0xc000, -2.0),
            (0x3555, 0.333_251_95),
            (0x7bff, 65_504.0),
            (0x0001, 5.960_464_5e-8),
            (0x8400, -6.103_515_6e-5),
        ] {
            assert_eq!(f16_to_f32(bits), want, "{bits:#06x}");
        }
        assert_eq!(f16_to_f32(0x7c00), f32::INFINITY);
        assert!(f16_to_f32(0x7e00).is_nan());
    }

    #[test]
    fn a_truncated_file_is_a_clear_error() {
        let data = std::fs::read(tiny_path()).expect("tiny.en model");
        for cut in [0, 3, 10, 200, data.len() / 2, data.len() - 5] {
            let err = Ct2File::parse(data[..cut].to_vec())
                .err()
                .unwrap_or_else(|| panic!("a file cut at {cut} bytes was accepted"));
            assert!(err.0.contains("truncated"), "cut at {cut}: {}", err.0);
        }
    }

    #[test]
    fn garbage_is_rejected_without_panicking() {
        let mut data = vec![6, 0, 0, 0, 12, 0];
        data.extend_from_slice(b"WhisperSpec\0");
        data.extend_from_slice(&[3, 0, 0, 0, 1, 0, 0, 0, 2, 0, b'x', 0, 200]);
        let err = Ct2File::parse(data).err().expect("rejected");
        assert!(err.0.contains("rank"), "{}", err.0);
        let err = Ct2File::parse(vec![7, 0, 0, 0]).err().expect("rejected");
        assert!(err.0.contains("version"), "{}", err.0);
    }
}
