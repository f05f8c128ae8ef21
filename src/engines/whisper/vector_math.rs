//! The encoder's two transcendental hot spots, the attention's softmax and the exact (erf)
//! GELU, with an exponential and an error function the compiler turns into vector
//! instructions.
//!
//! A 30 s window's encoder takes the softmax of 1500 × 1500 scores per head and layer (54
//! million exponentials for tiny.en, 108 million for base) and the GELU of 11 million
//! activations (tiny.en). candle calls the maths library's `expf` and `erff` once per value,
//! which cost about a tenth of a transcription. Here the exponential is a polynomial on the
//! reduced argument (Cephes' `expf`: within two units in the last place) and the error function
//! Abramowitz and Stegun's 7.1.26 (within 1.5e-7 of it), written without branches or calls, so
//! 4, 8 or 16 values go at a time depending on what the CPU has (chosen at run time).

use candle_core::{CpuStorage, CustomOp1, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

/// Below this the exponential is taken as 0 (`e^-87.3` is the smallest normal f32), which is
/// also what a masked score (`-inf`) gives.
const EXP_MIN: f32 = -87.3;
/// Above this the exponential would overflow; a softmax never gets there (scores are
/// shifted by their row's maximum, so they are at most 0).
const EXP_MAX: f32 = 88.3;
/// Lanes the reductions keep apart, so the compiler can hold them in one vector register.
const LANES: usize = 16;

/// `$kernel` (an `#[inline(always)]` `fn(&[f32], &mut [f32])`) compiled for the widest
/// vectors this CPU has: AVX-512, AVX2 with FMA, or the baseline's.
macro_rules! widest {
    ($kernel:ident) => {{
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f")]
        fn avx512(src: &[f32], dst: &mut [f32]) {
            $kernel(src, dst)
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        fn avx2(src: &[f32], dst: &mut [f32]) {
            $kernel(src, dst)
        }
        let chosen: fn(&[f32], &mut [f32]) = {
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU was just seen to have AVX-512F.
                    |src, dst| unsafe { avx512(src, dst) }
                } else if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    // SAFETY: the CPU was just seen to have AVX2 and FMA.
                    |src, dst| unsafe { avx2(src, dst) }
                } else {
                    $kernel
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            {
                $kernel
            }
        };
        chosen
    }};
}

/// `x · Φ(x)` (the GELU with the exact normal distribution, as Whisper was trained) of every
/// value of an f32 tensor.
pub fn gelu_erf(x: &Tensor) -> Result<Tensor> {
    x.contiguous()?.apply_op1_no_bwd(&GeluErf)
}

/// `softmax(x)` over the last dimension of an f32 tensor.
pub fn softmax_last_dim(x: &Tensor) -> Result<Tensor> {
    x.contiguous()?.apply_op1_no_bwd(&SoftmaxLastDim)
}

/// A kernel over blocks of an f32 tensor's values: `block` values at a time in parallel (0:
/// a row of the last dimension), each block written by `kernel`.
struct Blockwise {
    name: &'static str,
    block: usize,
    kernel: fn(&[f32], &mut [f32]),
}

struct SoftmaxLastDim;

impl CustomOp1 for SoftmaxLastDim {
    fn name(&self) -> &'static str {
        "whisper-softmax-last-dim"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let op = Blockwise {
            name: "softmax",
            block: 0,
            kernel: widest!(softmax_row),
        };
        op.run(storage, layout)
    }
}

struct GeluErf;

impl CustomOp1 for GeluErf {
    fn name(&self) -> &'static str {
        "whisper-gelu-erf"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let op = Blockwise {
            name: "GELU",
            block: GELU_BLOCK,
            kernel: widest!(gelu_block),
        };
        op.run(storage, layout)
    }
}

impl Blockwise {
    fn run(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let CpuStorage::F32(values) = storage else {
            candle_core::bail!("the {} reads f32 values", self.name);
        };
        let Some((start, end)) = layout.contiguous_offsets() else {
            candle_core::bail!("the {} reads contiguous values", self.name);
        };
        let src = &values[start..end];
        let block = match self.block {
            0 => layout.shape().dims().last().copied().unwrap_or(1),
            block => block,
        }
        .max(1);
        let mut dst = vec![0f32; src.len()];
        let kernel = self.kernel;
        src.par_chunks(block)
            .zip(dst.par_chunks_mut(block))
            .for_each(|(src, dst)| kernel(src, dst));
        Ok((CpuStorage::F32(dst), layout.shape().clone()))
    }
}

/// Values one task of the GELU takes.
const GELU_BLOCK: usize = 1 << 14;

/// `dst = softmax(src)` for one row.
#[inline(always)]
fn softmax_row(src: &[f32], dst: &mut [f32]) {
    let max = row_max(src);
    if max == f32::NEG_INFINITY {
        // Every score masked: no position to attend to. candle gives NaN here; a uniform row
        // would invent attention, so the row stays zero.
        dst.fill(0.0);
        return;
    }
    let mut sums = [0f32; LANES];
    let mut src_blocks = src.chunks_exact(LANES);
    let mut dst_blocks = dst.chunks_exact_mut(LANES);
    for (s, d) in (&mut src_blocks).zip(&mut dst_blocks) {
        for lane in 0..LANES {
            let e = exp(s[lane] - max);
            d[lane] = e;
            sums[lane] += e;
        }
    }
    let mut sum: f32 = sums.iter().sum();
    for (s, d) in src_blocks
        .remainder()
        .iter()
        .zip(dst_blocks.into_remainder())
    {
        *d = exp(*s - max);
        sum += *d;
    }
    let scale = 1.0 / sum;
    for d in dst.iter_mut() {
        *d *= scale;
    }
}

#[inline(always)]
fn row_max(src: &[f32]) -> f32 {
    let mut maxes = [f32::NEG_INFINITY; LANES];
    let mut blocks = src.chunks_exact(LANES);
    for block in &mut blocks {
        for lane in 0..LANES {
            maxes[lane] = maxes[lane].max(block[lane]);
        }
    }
    blocks
        .remainder()
        .iter()
        .chain(maxes.iter())
        .copied()
        .fold(f32::NEG_INFINITY, f32::max)
}

/// `dst = gelu(src)`, value by value.
#[inline(always)]
fn gelu_block(src: &[f32], dst: &mut [f32]) {
    for (s, d) in src.iter().zip(dst.iter_mut()) {
        *d = 0.5 * s * (1.0 + erf(s * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// `erf(x)` by Abramowitz and Stegun's 7.1.26, `1 - t·P(t)·e^{-x²}` with `t = 1/(1 + p|x|)`,
/// and the sign of `x`: within 1.5e-7 of the exact value everywhere.
#[inline(always)]
fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let p = 1.061_405_4;
    let p = p * t - 1.453_152;
    let p = p * t + 1.421_413_7;
    let p = p * t - 0.284_496_74;
    let p = p * t + 0.254_829_6;
    let magnitude = 1.0 - p * t * exp(-a * a);
    magnitude.copysign(x)
}

/// `e^x`: `2^n · e^r` with `n` the nearest integer to `x / ln 2` and `e^r` Cephes' degree-7
/// polynomial on `|r| ≤ ln 2 / 2`; 0 below [`EXP_MIN`].
#[inline(always)]
fn exp(x: f32) -> f32 {
    // Adding and removing 1.5 · 2^23 rounds to the nearest integer with plain arithmetic.
    const ROUND: f32 = 12_582_912.0;
    // ln 2 split in two, so that `x - n ln 2` loses nothing to rounding.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let clamped = x.clamp(EXP_MIN, EXP_MAX);
    let shifted = clamped * std::f32::consts::LOG2_E + ROUND;
    let n = shifted - ROUND;
    let r = clamped - n * LN2_HI - n * LN2_LO;
    let p = 1.987_569_1e-4;
    let p = p * r + 1.398_199_9e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 0.5;
    let e_r = p * r * r + r + 1.0;
    // 2^n built in the exponent bits: `shifted`'s low mantissa bits hold n (within
    // [-126, 128)), so n + 127 shifted into the exponent field is 2^n, with integer
    // operations only.
    let two_n = f32::from_bits(shifted.to_bits().wrapping_add(127) << 23);
    if x < EXP_MIN {
        0.0
    } else {
        e_r * two_n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn the_exponential_is_within_a_few_units_in_the_last_place() {
        let mut worst = 0f64;
        let mut x = -87.0f32;
        while x <= 0.0 {
            let exact = (x as f64).exp();
            let error = ((exp(x) as f64 - exact) / exact).abs() / f32::EPSILON as f64;
            worst = worst.max(error);
            x += 0.001_3;
        }
        assert!(worst < 2.0, "worst error {worst} units in the last place");
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(-100.0), 0.0);
    }

    #[test]
    fn rows_match_the_reference_softmax_on_every_kernel() {
        // Rows of 1500 (the encoder's), 7 (shorter than the lanes) and 37 (a remainder),
        // with a masked score in each.
        for width in [1500usize, 7, 37] {
            let values: Vec<f32> = (0..width * 3)
                .map(|i| {
                    if i % width == 1 {
                        f32::NEG_INFINITY
                    } else {
                        ((i * 7919) % 1000) as f32 / 40.0 - 12.0
                    }
                })
                .collect();
            let x = Tensor::from_vec(values.clone(), (3, width), &Device::Cpu).unwrap();
            let ours: Vec<f32> = softmax_last_dim(&x)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1()
                .unwrap();
            let theirs: Vec<f32> = candle_nn::ops::softmax_last_dim(&x)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1()
                .unwrap();
            for (a, b) in ours.iter().zip(&theirs) {
                assert!(
                    (a - b).abs() <= 1e-5 * b.max(1e-30) + 1e-12,
                    "{a} against {b}"
                );
            }
            for row in ours.chunks(width) {
                assert_eq!(row[1], 0.0);
                assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5);
            }
            // The portable kernel gives what the dispatched one gives.
            let mut portable = vec![0f32; width];
            softmax_row(&values[..width], &mut portable);
            for (a, b) in portable.iter().zip(&ours[..width]) {
                assert!((a - b).abs() <= 1e-6 * b.max(1e-30), "{a} against {b}");
            }
        }
    }

    #[test]
    fn the_gelu_matches_the_reference_on_every_kernel() {
        // From far below to far above the bend, and past a block's end.
        let values: Vec<f32> = (0..GELU_BLOCK + 1001)
            .map(|i| (i as f32 - 8_000.0) / 700.0)
            .chain([0.0, -0.0, 1e-20, -1e-20, 30.0, -30.0, 1e6])
            .collect();
        let x = Tensor::from_vec(values.clone(), values.len(), &Device::Cpu).unwrap();
        let ours: Vec<f32> = gelu_erf(&x).unwrap().to_vec1().unwrap();
        let theirs: Vec<f32> = x.gelu_erf().unwrap().to_vec1().unwrap();
        for ((v, a), b) in values.iter().zip(&ours).zip(&theirs) {
            assert!(
                (a - b).abs() <= 5e-7 * v.abs().max(1.0),
                "gelu({v}): {a} against {b}"
            );
        }
        let mut portable = vec![0f32; values.len()];
        gelu_block(&values, &mut portable);
        for (a, b) in portable.iter().zip(&ours) {
            assert!((a - b).abs() <= 1e-7 * b.abs().max(1.0), "{a} against {b}");
        }
        assert_eq!(ours[values.len() - 1], 1e6);
    }

    #[test]
    fn a_fully_masked_row_attends_to_nothing() {
        let x = Tensor::from_vec(vec![f32::NEG_INFINITY; 20], (1, 20), &Device::Cpu).unwrap();
        let out: Vec<f32> = softmax_last_dim(&x)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        assert!(out.iter().all(|&v| v == 0.0));
    }
}
