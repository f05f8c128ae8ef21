//! Products of a few rows with a large weight read transposed, `x · Wᵀ`: what the decoder
//! computes for each new token (one row per beam through every dense layer, then the
//! vocabulary's logits through the token embedding).
//!
//! The general matrix product packs the weight into a scratch copy on every call when it is
//! read transposed and the rows are few, so a decoder step copied all of its weights (some
//! 190 MB for the base model, the token embedding alone 106 MB) before multiplying. Here each
//! weight row is read once, in place, and multiplied with every input row while it is in
//! cache: the step is bound by one pass over the weights.

use candle_core::{Device, Result, Storage, Tensor};

/// Inputs with at most this many rows take the skinny product; more (the encoder, a prompt)
/// go to the general one, which is faster once the packing is shared by enough rows.
pub const MAX_ROWS: usize = 8;

/// Weights at least this large (in multiply-adds per input row) are split between the
/// inference threads a job may use; smaller ones are not worth a second thread.
const SPLIT_WORK: usize = 1 << 20;

/// `x · wᵀ` for `x` of shape `(R, k)` with `R` at most [`MAX_ROWS`] and a contiguous `w` of
/// shape `(N, k)`: `(R, N)`.
pub fn matmul_t(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    let (rows, k) = x.dims2()?;
    let (n, wk) = w.dims2()?;
    if wk != k || rows > MAX_ROWS {
        candle_core::bail!("skinny product of ({rows}, {k}) and ({n}, {wk})ᵀ");
    }
    let x: Vec<f32> = x.flatten_all()?.to_vec1()?;
    let (storage, layout) = w.storage_and_layout();
    let Storage::Cpu(cpu) = &*storage else {
        candle_core::bail!("the skinny product runs on the CPU only");
    };
    if !layout.is_contiguous() {
        candle_core::bail!("the skinny product reads a contiguous weight");
    }
    let offset = layout.start_offset();
    let weights = &cpu.as_slice::<f32>()?[offset..offset + n * k];
    let mut out = vec![0f32; rows * n];
    let threads = candle_core::utils::get_num_threads().max(1);
    if threads > 1 && n * k >= SPLIT_WORK {
        // Each thread takes a band of weight rows and writes its own columns of a
        // transposed result, put back in order below.
        let band = n.div_ceil(threads);
        let mut columns = vec![0f32; n * rows];
        rayon::scope(|scope| {
            for (w_band, out_band) in weights
                .chunks(band * k)
                .zip(columns.chunks_mut(band * rows))
            {
                let x = &x;
                scope.spawn(move |_| products_by_weight_row(x, rows, k, w_band, out_band));
            }
        });
        for (o, per_row) in columns.chunks_exact(rows).enumerate() {
            for (r, value) in per_row.iter().enumerate() {
                out[r * n + o] = *value;
            }
        }
    } else {
        for (o, w_row) in weights.chunks_exact(k).enumerate() {
            for (r, x_row) in x.chunks_exact(k).enumerate() {
                out[r * n + o] = dot(x_row, w_row);
            }
        }
    }
    Tensor::from_vec(out, (rows, n), &Device::Cpu)
}

/// For each weight row in `w` (rows of `k`), its product with every input row, written
/// weight row by weight row: `out[o * rows + r]`.
fn products_by_weight_row(x: &[f32], rows: usize, k: usize, w: &[f32], out: &mut [f32]) {
    for (w_row, products) in w.chunks_exact(k).zip(out.chunks_exact_mut(rows)) {
        for (x_row, product) in x.chunks_exact(k).zip(products.iter_mut()) {
            *product = dot(x_row, w_row);
        }
    }
}

/// The dot product, in 16 lanes of fused multiply-adds (two AVX2 registers).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 16];
    let (a_blocks, a_rest) = a.as_chunks::<16>();
    let (b_blocks, b_rest) = b.as_chunks::<16>();
    for (x, y) in a_blocks.iter().zip(b_blocks) {
        for i in 0..16 {
            lanes[i] = x[i].mul_add(y[i], lanes[i]);
        }
    }
    let mut sum: f32 = lanes.iter().sum();
    for (x, y) in a_rest.iter().zip(b_rest) {
        sum = x.mul_add(*y, sum);
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The skinny product equals the general one, for every row count it takes, on shapes
    /// whose inner size is and is not a whole number of lanes, split between threads or not.
    #[test]
    fn the_skinny_product_is_the_general_product() {
        let device = Device::Cpu;
        for (n, k) in [(7, 5), (300, 64), (2_100, 515)] {
            let w = Tensor::randn(0f32, 1.0, (n, k), &device).unwrap();
            for rows in 1..=MAX_ROWS {
                let x = Tensor::randn(0f32, 1.0, (rows, k), &device).unwrap();
                let expected: Vec<Vec<f32>> = x.matmul(&w.t().unwrap()).unwrap().to_vec2().unwrap();
                let got: Vec<Vec<f32>> = matmul_t(&x, &w).unwrap().to_vec2().unwrap();
                for (e_row, g_row) in expected.iter().zip(&got) {
                    for (e, g) in e_row.iter().zip(g_row) {
                        assert!(
                            (e - g).abs() <= 1e-4 * (1.0 + e.abs()),
                            "{rows}x{k} by {n}: {e} vs {g}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn shapes_that_do_not_fit_are_refused() {
        let device = Device::Cpu;
        let w = Tensor::zeros((4, 3), candle_core::DType::F32, &device).unwrap();
        let wrong_inner = Tensor::zeros((1, 2), candle_core::DType::F32, &device).unwrap();
        assert!(matmul_t(&wrong_inner, &w).is_err());
        let too_many = Tensor::zeros((MAX_ROWS + 1, 3), candle_core::DType::F32, &device).unwrap();
        assert!(matmul_t(&too_many, &w).is_err());
        let transposed = w.t().unwrap();
        let x = Tensor::zeros((1, 4), candle_core::DType::F32, &device).unwrap();
        assert!(matmul_t(&x, &transposed).is_err());
    }
}
