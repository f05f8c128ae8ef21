//! What the exact index and the HNSW graph share: where a vector came from, and the dot
//! product both score by.

/// Where a vector came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkRef {
    pub document_id: String,
    pub chunk_index: i32,
}

/// Dot product in eight independent lanes, which the compiler turns into SIMD.
pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let (a_chunks, b_chunks) = (a.chunks_exact(8), b.chunks_exact(8));
    let (a_rest, b_rest) = (a_chunks.remainder(), b_chunks.remainder());
    for (x, y) in a_chunks.zip(b_chunks) {
        for lane in 0..8 {
            lanes[lane] += x[lane] * y[lane];
        }
    }
    let tail: f32 = a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum();
    lanes.iter().sum::<f32>() + tail
}
