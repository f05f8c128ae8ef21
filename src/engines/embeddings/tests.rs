//! Tests of the embedder on the real model (release builds; `models/` must hold MiniLM).

use std::path::PathBuf;
use std::sync::OnceLock;

use switchboard_actors::engine::EngineErrorKind;

use super::{Embedder, MiniLmEmbedder, MAX_TOKENS, MINILM_DIMENSIONS};
use crate::engines::llm::ModelStatus;
use crate::engines::pool::WorkerPool;

fn embedder() -> &'static MiniLmEmbedder {
    static EMBEDDER: OnceLock<MiniLmEmbedder> = OnceLock::new();
    EMBEDDER.get_or_init(|| {
        let models = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models");
        MiniLmEmbedder::from_models_dir(models, WorkerPool::new(2, 16))
    })
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum()
}

fn strings(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|t| t.to_string()).collect()
}

#[tokio::test]
async fn a_paraphrase_is_closer_than_an_unrelated_sentence() {
    let v = embedder()
        .embed(strings(&[
            "How do I reset my password?",
            "I forgot my password and need to change it.",
            "The weather in Lisbon is sunny today.",
        ]))
        .await
        .unwrap();
    let paraphrase = dot(&v[0], &v[1]);
    let unrelated = dot(&v[0], &v[2]);
    assert!(paraphrase > 0.5, "paraphrase {paraphrase}");
    assert!(
        paraphrase > unrelated + 0.3,
        "paraphrase {paraphrase}, unrelated {unrelated}"
    );
}

#[tokio::test]
async fn vectors_are_unit_length_and_384_wide() {
    let v = embedder()
        .embed(strings(&[
            "short",
            "a somewhat longer sentence about nothing in particular",
            "",
        ]))
        .await
        .unwrap();
    assert_eq!(embedder().dimensions(), MINILM_DIMENSIONS);
    for vector in &v {
        assert_eq!(vector.len(), MINILM_DIMENSIONS);
        let norm = dot(vector, vector).sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
    }
}

#[tokio::test]
async fn batched_results_equal_single_results() {
    let texts = strings(&[
        "Padding must not change a vector.",
        "A much longer text, so that the shorter ones in the same batch are padded by many positions before the encoder sees them.",
        "Hi",
        "Numbers 1 2 3 and symbols #$%",
    ]);
    let batched = embedder().embed(texts.clone()).await.unwrap();
    for (text, from_batch) in texts.into_iter().zip(&batched) {
        let single = embedder().embed(vec![text]).await.unwrap();
        let max_diff = single[0]
            .iter()
            .zip(from_batch)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(max_diff < 1e-5, "max difference {max_diff}");
    }
}

#[tokio::test]
async fn vectors_agree_with_the_float64_reference() {
    let fixture: serde_json::Value = serde_json::from_str(include_str!(
        "../../../benches/reference/minilm_reference.json"
    ))
    .unwrap();
    let cases = fixture["cases"].as_array().unwrap();
    assert!(cases.len() >= 4);
    let texts: Vec<String> = cases
        .iter()
        .map(|c| c["text"].as_str().unwrap().to_string())
        .collect();
    let vectors = embedder().embed(texts.clone()).await.unwrap();
    for ((case, vector), text) in cases.iter().zip(&vectors).zip(&texts) {
        let reference: Vec<f32> = case["vector"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        let cosine = dot(&reference, vector) / dot(&reference, &reference).sqrt();
        assert!(cosine >= 0.999, "{text:?}: cosine {cosine}");
        assert_eq!(
            embedder().count_tokens(text),
            case["tokens"].as_u64().unwrap() as usize
        );
    }
}

#[tokio::test]
async fn token_counts_include_specials_and_stop_at_the_truncation() {
    let e = embedder();
    // [CLS] hello world [SEP]
    assert_eq!(e.count_tokens("hello world"), 4);
    assert_eq!(e.count_tokens(&"word ".repeat(1000)), MAX_TOKENS);
    assert_eq!(e.model(), "all-minilm-l6-v2");
}

#[tokio::test]
async fn a_missing_model_is_unavailable_and_names_the_fetch_script() {
    let e = MiniLmEmbedder::new("/nonexistent/minilm", WorkerPool::new(1, 1));
    assert!(matches!(e.status(), ModelStatus::Missing(_)));
    let err = e.embed(strings(&["x"])).await.unwrap_err();
    assert_eq!(err.kind, EngineErrorKind::Unavailable);
    assert!(
        err.message.contains("scripts/fetch-models"),
        "{}",
        err.message
    );
    assert!(e.count_tokens("hello world") > 0);
}

#[tokio::test]
async fn empty_input_gives_no_vectors() {
    assert!(embedder().embed(Vec::new()).await.unwrap().is_empty());
}
