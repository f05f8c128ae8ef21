//! Products of a few rows with a large weight read transposed, `x · Wᵀ`: what the decoder
//! computes for each new token (one row per beam through every dense layer, then the
//! vocabulary's logits through the token embedding).
//!
//! The general matrix product packs the weight into a scratch copy on every call when it is
//! read transposed and the rows are few, so a decoder step copied all of its weights (some
//! 190 MB for the base model, the token embedding alone 106 MB) before multiplying. Here each
//! weight row is read once, in place, and multiplied with every input row while it is in
//! cache: the step is bound by one pass over the weights.
//!
//! A weight may also be kept in half precision (`F16`): the step then reads half
//! the bytes, and each row is widened to f32 in cache before its products. The weights of
//! the model files are half precision to begin with, so this gives exactly the products of
//! their f32 copy.

use candle_core::{DType, Device, Result, Storage, Tensor};
use half::f16;
use half::slice::HalfFloatSliceExt as _;

/// Inputs with at most this many rows take the skinny product; more (the encoder, a prompt)
/// go to the general one, which is faster once the packing is shared by enough rows.
pub const MAX_ROWS: usize = 8;

/// Weights at least this large (in multiply-adds per input row) are split between the
/// inference threads a job may use; smaller ones are not worth a second thread.
const SPLIT_WORK: usize = 1 << 20;

/// `x · wᵀ` for `x` of shape `(R, k)` with `R` at most [`MAX_ROWS`] and a contiguous `w` of
/// shape `(N, k)`, f32 or half precision (`F16`): `(R, N)`.
pub fn matmul_t(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    match w.dtype() {
        DType::F16 => skinny_product::<f16>(x, w),
        _ => skinny_product::<f32>(x, w),
    }
}

/// A weight element the skinny product reads: f32 as it is, f16 widened a row at a time.
trait WeightElement: candle_core::WithDType + Sync {
    /// `row` as f32: itself, or widened into `scratch` (of the row's length).
    fn widened<'a>(row: &'a [Self], scratch: &'a mut [f32]) -> &'a [f32];
}

impl WeightElement for f32 {
    fn widened<'a>(row: &'a [f32], _: &'a mut [f32]) -> &'a [f32] {
        row
    }
}

impl WeightElement for f16 {
    fn widened<'a>(row: &'a [f16], scratch: &'a mut [f32]) -> &'a [f32] {
        row.convert_to_f32_slice(scratch);
        scratch
    }
}

fn skinny_product<T: WeightElement>(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    let (rows, k) = x.dims2()?;
    let (n, wk) = w.dims2()?;
    if wk != k || rows > MAX_ROWS {
        candle_core::bail!("skinny product of ({rows}, {k}) and ({n}, {wk})ᵀ");
    }
    if w.dtype() != T::DTYPE {
        candle_core::bail!(
            "a skinny product of {:?} weights read as {:?}",
            w.dtype(),
            T::DTYPE
        );
    }
    let x: Vec<f32> = x.to_dtype(DType::F32)?.flatten_all()?.to_vec1()?;
    let (storage, layout) = w.storage_and_layout();
    let Storage::Cpu(cpu) = &*storage else {
        candle_core::bail!("the skinny product runs on the CPU only");
    };
    if !layout.is_contiguous() {
        candle_core::bail!("the skinny product reads a contiguous weight");
    }
    let offset = layout.start_offset();
    let weights = &cpu.as_slice::<T>()?[offset..offset + n * k];
    // The products come out weight row by weight row (`columns[o * rows + r]`); one input
    // row needs no reordering, more are put back in order below.
    let mut columns = vec![0f32; n * rows];
    let threads = candle_core::utils::get_num_threads().max(1);
    if threads > 1 && n * k >= SPLIT_WORK {
        // Each thread takes a band of weight rows and writes its own part of the columns.
        let band = n.div_ceil(threads);
        rayon::scope(|scope| {
            for (w_band, out_band) in weights
                .chunks(band * k)
                .zip(columns.chunks_mut(band * rows))
            {
                let x = &x;
                scope.spawn(move |_| products_by_weight_row(x, rows, k, w_band, out_band));
            }
        });
    } else {
        products_by_weight_row(&x, rows, k, weights, &mut columns);
    }
    let out = if rows == 1 {
        columns
    } else {
        let mut out = vec![0f32; rows * n];
        for (o, per_row) in columns.chunks_exact(rows).enumerate() {
            for (r, value) in per_row.iter().enumerate() {
                out[r * n + o] = *value;
            }
        }
        out
    };
    Tensor::from_vec(out, (rows, n), &Device::Cpu)
}

/// For each weight row in `w` (rows of `k`), its product with every input row, written
/// weight row by weight row: `out[o * rows + r]`.
///
/// Weight rows go four at a time through [`dot4`]: four independent sums in flight, each
/// input block loaded once for four rows, keep the loads streaming where one sum at a time
/// waits on its own additions. Each product is summed in the same order as [`dot`], so the
/// result does not depend on which of the two computed it.
fn products_by_weight_row<T: WeightElement>(
    x: &[f32],
    rows: usize,
    k: usize,
    w: &[T],
    out: &mut [f32],
) {
    let mut scratch = vec![0f32; 4 * k];
    let (quads, rest) = w.split_at(w.len() / (4 * k) * (4 * k));
    let (quad_out, rest_out) = out.split_at_mut(quads.len() / k * rows);
    for (w4, products) in quads
        .chunks_exact(4 * k)
        .zip(quad_out.chunks_exact_mut(4 * rows))
    {
        let (s0, tail) = scratch.split_at_mut(k);
        let (s1, tail) = tail.split_at_mut(k);
        let (s2, s3) = tail.split_at_mut(k);
        let (w0, tail) = w4.split_at(k);
        let (w1, tail) = tail.split_at(k);
        let (w2, w3) = tail.split_at(k);
        let four = [
            T::widened(w0, s0),
            T::widened(w1, s1),
            T::widened(w2, s2),
            T::widened(w3, s3),
        ];
        for (r, x_row) in x.chunks_exact(k).enumerate() {
            for (j, value) in dot4(x_row, four).into_iter().enumerate() {
                products[j * rows + r] = value;
            }
        }
    }
    for (w_row, products) in rest.chunks_exact(k).zip(rest_out.chunks_exact_mut(rows)) {
        let w_row = T::widened(w_row, &mut scratch[..k]);
        for (x_row, product) in x.chunks_exact(k).zip(products.iter_mut()) {
            *product = dot(x_row, w_row);
        }
    }
}

/// The dot products of `a` with four rows at once, each summed exactly as [`dot`] sums it.
fn dot4(a: &[f32], w: [&[f32]; 4]) -> [f32; 4] {
    let mut lanes = [[0f32; 16]; 4];
    let (a_blocks, a_rest) = a.as_chunks::<16>();
    let [(b0, r0), (b1, r1), (b2, r2), (b3, r3)] = w.map(|row| row.as_chunks::<16>());
    for ((((x, y0), y1), y2), y3) in a_blocks.iter().zip(b0).zip(b1).zip(b2).zip(b3) {
        for i in 0..16 {
            lanes[0][i] = x[i].mul_add(y0[i], lanes[0][i]);
            lanes[1][i] = x[i].mul_add(y1[i], lanes[1][i]);
            lanes[2][i] = x[i].mul_add(y2[i], lanes[2][i]);
            lanes[3][i] = x[i].mul_add(y3[i], lanes[3][i]);
        }
    }
    let mut sums = [0f32; 4];
    for (j, (lanes, rest)) in lanes.iter().zip([r0, r1, r2, r3]).enumerate() {
        let mut sum: f32 = lanes.iter().sum();
        for (x, y) in a_rest.iter().zip(rest) {
            sum = x.mul_add(*y, sum);
        }
        sums[j] = sum;
    }
    sums
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

    /// A half-precision weight gives exactly the products of its f32 copy.
    #[test]
    fn a_half_precision_weight_gives_the_products_of_its_f32_copy() {
        let device = Device::Cpu;
        for (n, k) in [(7, 5), (2_101, 384)] {
            let w16 = Tensor::randn(0f32, 1.0, (n, k), &device)
                .unwrap()
                .to_dtype(DType::F16)
                .unwrap();
            let w32 = w16.to_dtype(DType::F32).unwrap();
            for rows in [1, 3] {
                let x = Tensor::randn(0f32, 1.0, (rows, k), &device).unwrap();
                let half: Vec<Vec<f32>> = matmul_t(&x, &w16).unwrap().to_vec2().unwrap();
                let full: Vec<Vec<f32>> = matmul_t(&x, &w32).unwrap().to_vec2().unwrap();
                assert_eq!(half, full, "{rows}x{k} by {n}");
            }
        }
    }

    /// Four rows at a time give each product bit for bit what one row at a time gives, so
    /// a transcript does not depend on how many rows a layer has.
    #[test]
    fn four_rows_at_once_sum_exactly_as_one_row_at_a_time() {
        let device = Device::Cpu;
        for k in [5, 16, 384, 515] {
            let a: Vec<f32> = Tensor::randn(0f32, 1.0, k, &device)
                .unwrap()
                .to_vec1()
                .unwrap();
            let w: Vec<f32> = Tensor::randn(0f32, 1.0, 4 * k, &device)
                .unwrap()
                .to_vec1()
                .unwrap();
            let rows: Vec<&[f32]> = w.chunks_exact(k).collect();
            let four = dot4(&a, [rows[0], rows[1], rows[2], rows[3]]);
            for (j, row) in rows.iter().enumerate() {
                assert_eq!(four[j].to_bits(), dot(&a, row).to_bits(), "k {k}, row {j}");
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
