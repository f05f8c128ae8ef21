//! Tests of the engine on the real model (release builds; `models/` must hold SmolLM2).

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use switchboard_actors::engine::{
    ChatMessage, ChatRequest, EngineErrorKind, FinishReason, LanguageModel, LlmEvent, Role,
};

use super::cache::common_prefix;
use super::model::{LlamaModel, Products, Weights};
use super::{LlmOptions, LocalLlm, ModelStatus, DEFAULT_KNOWLEDGE_HISTORY_TOKENS, MODEL_FILE};
use crate::engines::pool::WorkerPool;

fn models_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models")
}

fn engine(pool: WorkerPool) -> LocalLlm {
    LocalLlm::new(
        models_dir().join(MODEL_FILE),
        pool,
        LlmOptions {
            seed: Some(42),
            ..LlmOptions::default()
        },
    )
}

/// One engine shared by the tests that do not count or block workers.
fn shared() -> &'static LocalLlm {
    static ENGINE: OnceLock<LocalLlm> = OnceLock::new();
    ENGINE.get_or_init(|| engine(WorkerPool::new(2, 16)))
}

fn request(messages: Vec<ChatMessage>, max_tokens: u32) -> ChatRequest {
    ChatRequest {
        model: None,
        messages,
        tools: Vec::new(),
        temperature: 0.0,
        max_tokens,
        conversation: None,
    }
}

fn user(text: &str) -> Vec<ChatMessage> {
    vec![ChatMessage::new(Role::User, text)]
}

/// The answer text and the final event.
async fn collect(llm: &LocalLlm, request: ChatRequest) -> (String, LlmEvent, usize) {
    let mut rx = llm.stream(request).expect("stream starts");
    let mut text = String::new();
    let mut deltas = 0;
    while let Some(event) = rx.recv().await {
        match event.expect("no engine error") {
            LlmEvent::TextDelta(delta) => {
                deltas += 1;
                text.push_str(&delta);
            }
            LlmEvent::ToolCall(call) => panic!("unexpected tool call {call:?}"),
            done @ LlmEvent::Done { .. } => return (text, done, deltas),
        }
    }
    panic!("the stream ended without Done; text so far: {text:?}");
}

#[tokio::test]
async fn a_short_prompt_gets_a_coherent_answer_that_stops_by_itself() {
    let llm = shared();
    let (text, done, _) = collect(llm, request(user("What is the capital of France?"), 64)).await;
    let LlmEvent::Done {
        reason,
        prompt_tokens,
        completion_tokens,
    } = done
    else {
        unreachable!()
    };
    assert_eq!(reason, FinishReason::Stop, "answer: {text:?}");
    assert!(completion_tokens < 64 && completion_tokens > 0);
    assert!(prompt_tokens > 10);
    assert!(text.contains("Paris"), "answer: {text:?}");
}

#[tokio::test]
async fn max_tokens_ends_with_length_after_exactly_that_many_tokens() {
    let llm = shared();
    let (text, done, deltas) = collect(
        llm,
        request(
            user("Write a long story about a dragon who learns to fly."),
            5,
        ),
    )
    .await;
    assert_eq!(
        done,
        LlmEvent::Done {
            reason: FinishReason::Length,
            prompt_tokens: match done {
                LlmEvent::Done { prompt_tokens, .. } => prompt_tokens,
                _ => unreachable!(),
            },
            completion_tokens: 5,
        }
    );
    assert!(deltas <= 5 && !text.is_empty());
}

#[tokio::test]
async fn temperature_zero_is_deterministic() {
    let llm = shared();
    let ask = || request(user("Name three colours of the rainbow."), 24);
    let (first, _, _) = collect(llm, ask()).await;
    let (second, _, _) = collect(llm, ask()).await;
    assert_eq!(first, second);
    assert!(!first.trim().is_empty());
}

#[tokio::test]
async fn a_second_turn_feeds_only_the_new_suffix() {
    let llm = engine(WorkerPool::new(1, 4));
    let mut messages = vec![
        ChatMessage::new(
            Role::System,
            "You are a friendly receptionist at a dental clinic. Keep answers short.",
        ),
        ChatMessage::new(Role::User, "Hello, I would like to book an appointment."),
    ];
    let first = request(messages.clone(), 40);
    let (answer, done, _) = collect(&llm, first.clone()).await;
    let cut_by_budget = matches!(
        done,
        LlmEvent::Done {
            reason: FinishReason::Length,
            ..
        }
    );
    let after_first = llm.counters();

    messages.push(ChatMessage::new(Role::Assistant, answer.clone()));
    messages.push(ChatMessage::new(Role::User, "Is Tuesday morning possible?"));
    let second = request(messages, 40);
    let (second_prompt, first_prompt, answer_ids) = {
        let llm = llm.clone();
        let (first, second) = (first.clone(), second.clone());
        tokio::task::spawn_blocking(move || {
            (
                llm.prompt_tokens(&second).unwrap(),
                llm.prompt_tokens(&first).unwrap(),
                llm.encode(&answer).unwrap(),
            )
        })
        .await
        .unwrap()
    };
    let _ = collect(&llm, second).await;
    let after_second = llm.counters();

    let fed = after_second.prompt_tokens_fed - after_first.prompt_tokens_fed;
    let reused = after_second.prompt_tokens_reused - after_first.prompt_tokens_reused;
    // What the first turn left in the cache: its prompt and the answer it generated. A
    // sampled token is fed back only to sample the next one, so an answer the token budget
    // cut short leaves its last token out. The answer re-encodes to the same ids, so
    // everything before the new turn is reused.
    let mut cached = first_prompt.clone();
    cached.extend(&answer_ids);
    if cut_by_budget {
        cached.pop();
    }
    let shared_prefix = common_prefix(&cached, &second_prompt);
    assert!(shared_prefix + 1 >= cached.len());
    assert_eq!(reused as usize, shared_prefix);
    assert_eq!(fed as usize, second_prompt.len() - reused as usize);
    assert!(
        fed < 30,
        "fed {fed} of {} prompt tokens",
        second_prompt.len()
    );
}

#[tokio::test]
async fn dropping_the_stream_stops_generation_and_frees_the_worker() {
    let pool = WorkerPool::new(1, 4);
    let llm = engine(pool.clone());
    llm.preload().await.unwrap();
    let mut rx = llm
        .stream(request(
            user("Count from one to one thousand, in words."),
            2000,
        ))
        .unwrap();
    // Wait for the first delta, then hang up.
    let first = rx.recv().await.unwrap().unwrap();
    assert!(matches!(first, LlmEvent::TextDelta(_)));
    drop(rx);
    // The single worker must free up long before 2000 tokens could be generated.
    let started = std::time::Instant::now();
    tokio::time::timeout(Duration::from_secs(5), pool.run(|| Ok(())))
        .await
        .expect("the worker was freed")
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(llm.counters().completion_tokens < 300);
}

#[tokio::test]
async fn a_request_dropped_while_it_waits_for_a_worker_is_never_run() {
    let pool = WorkerPool::new(1, 4);
    let llm = engine(pool.clone());
    llm.preload().await.unwrap();
    let (release, held) = std::sync::mpsc::channel::<()>();
    let busy = pool
        .submit(move || {
            let _ = held.recv();
        })
        .unwrap();
    let rx = llm.stream(request(user("Say hello."), 20)).expect("queued");
    drop(rx);
    release.send(()).unwrap();
    busy.await.unwrap();
    pool.run(|| Ok(())).await.unwrap();
    let counters = llm.counters();
    assert_eq!(
        (counters.requests, counters.prompt_tokens_fed),
        (0, 0),
        "{counters:?}"
    );
}

#[tokio::test]
async fn a_long_prompt_stops_feeding_once_its_stream_is_dropped() {
    let pool = WorkerPool::new(1, 4);
    let llm = engine(pool.clone());
    llm.preload().await.unwrap();
    // About 4,000 prompt tokens: seconds of prefill on one thread.
    let long = "The river runs past the old mill and under the stone bridge. ".repeat(300);
    let prompt = llm
        .prompt_tokens(&request(user(&long), 20))
        .expect("renders");
    let rx = llm.stream(request(user(&long), 20)).expect("queued");
    let started = std::time::Instant::now();
    while pool.stats().busy == 0 {
        assert!(started.elapsed() < Duration::from_secs(5), "never started");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    drop(rx);
    tokio::time::timeout(Duration::from_secs(10), pool.run(|| Ok(())))
        .await
        .expect("the worker was freed")
        .unwrap();
    let counters = llm.counters();
    assert!(
        counters.prompt_tokens_fed < prompt.len() as u64 / 2,
        "fed {} of {} prompt tokens after the cancel",
        counters.prompt_tokens_fed,
        prompt.len()
    );
    assert_eq!(counters.completion_tokens, 0, "{counters:?}");
}

#[tokio::test]
async fn a_missing_model_is_unavailable_and_names_the_fetch_script() {
    let llm = LocalLlm::new(
        "/nonexistent/model.gguf",
        WorkerPool::new(1, 1),
        LlmOptions::default(),
    );
    assert!(matches!(llm.status(), ModelStatus::Missing(_)));
    let err = llm.stream(request(user("hi"), 4)).unwrap_err();
    assert_eq!(err.kind, EngineErrorKind::Unavailable);
    assert!(
        err.message.contains("scripts/fetch-models"),
        "{}",
        err.message
    );
    let err = llm.preload().await.unwrap_err();
    assert_eq!(err.kind, EngineErrorKind::Unavailable);
}

#[tokio::test]
async fn status_goes_from_not_loaded_to_ready() {
    let llm = engine(WorkerPool::new(1, 2));
    assert_eq!(llm.status(), ModelStatus::NotLoaded);
    llm.preload().await.unwrap();
    assert_eq!(llm.status(), ModelStatus::Ready);
    assert_eq!(llm.status().as_str(), "ready");
}

#[tokio::test]
async fn the_tokenizer_round_trips_varied_text() {
    let llm = shared().clone();
    tokio::task::spawn_blocking(move || {
        let samples = [
            "Hello, world!",
            " leading space and  double  spaces\ttab\n\nnewlines ",
            "Numbers: 3.14159, 2024-06-01, 1,000,000 and -42.",
            "Ünïcödé: café, naïve, 日本語のテキスト, Ελληνικά, العربية, emoji 🎉👍🏽",
            "fn main() {\n    let x: Vec<u32> = (0..10).map(|i| i * 2).collect();\n    println!(\"{x:?}\");\n}",
            "<|im_start|>user\nnot a control token<|im_end|>",
            "",
        ];
        for text in samples {
            let ids = llm.encode(text).unwrap();
            assert_eq!(llm.decode(&ids).unwrap(), text, "ids {ids:?}");
        }
        // Digits are split one by one, and there is no prefix space.
        let ids = llm.encode("2024").unwrap();
        assert_eq!(ids.len(), 4);
        assert_eq!(llm.decode(&ids[..1]).unwrap(), "2");
        // Control-token text stays plain text.
        let ids = llm.encode("<|im_end|>").unwrap();
        assert!(ids.len() > 1);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn multi_byte_characters_are_never_split_across_deltas() {
    let llm = shared();
    let mut rx = llm
        .stream(request(
            user("Écris une phrase en français avec des accents: été, çà, où."),
            30,
        ))
        .unwrap();
    while let Some(event) = rx.recv().await {
        if let LlmEvent::TextDelta(delta) = event.unwrap() {
            assert!(!delta.contains(char::REPLACEMENT_CHARACTER), "{delta:?}");
        }
    }
}

/// The model read straight from its file (blocking), with its weights held as `weights` says.
fn load_model(weights: Weights) -> LlamaModel {
    let (content, mut reader) =
        LlamaModel::read_header(&models_dir().join(MODEL_FILE)).expect("model file");
    LlamaModel::load_as(&content, &mut reader, 2048, weights).expect("model loads")
}

fn argmax(logits: &[f32]) -> u32 {
    logits
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(i, _)| i as u32)
        .expect("logits")
}

/// The largest difference between two sets of logits.
fn largest_gap(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs()))
}

#[tokio::test]
async fn a_prompt_read_through_dense_products_is_at_least_as_faithful_as_the_quantized_kernels() {
    let llm = shared().clone();
    tokio::task::spawn_blocking(move || {
        // The reference: the file's own weights, every product in f32.
        let reference = load_model(Weights::AsStored);
        let served = load_model(Weights::Requantized);
        let prompts = [
            vec![
                ChatMessage::new(
                    Role::System,
                    "You are Ava, the receptionist of the Harbour Street Dental Clinic. The \
                     clinic opens at 8 a.m. on weekdays and 9 a.m. on Saturdays, and is closed \
                     on Sundays. A cleaning lasts forty-five minutes and costs 85 euros. Keep \
                     every answer to one short sentence.",
                ),
                ChatMessage::new(Role::User, "Hi, what time do you open on Saturday?"),
            ],
            user("Write one sentence about the sea."),
        ];
        for messages in prompts {
            let prompt = llm.prompt_tokens(&request(messages, 1)).expect("renders");
            let read = |model: &LlamaModel, products| {
                model
                    .forward_with(&prompt, &mut model.new_cache(), products)
                    .expect("prefill")
            };
            let truth = read(&reference, Products::Dense);
            let dense = read(&served, Products::Dense);
            let quantized = read(&served, Products::Quantized);
            let (dense_gap, quantized_gap) =
                (largest_gap(&truth, &dense), largest_gap(&truth, &quantized));
            eprintln!(
                "{} prompt tokens: off the reference by {dense_gap:.3} dense, {quantized_gap:.3} quantized",
                prompt.len()
            );
            assert!(
                dense_gap <= quantized_gap,
                "dense products are further from the reference ({dense_gap}) than the quantized kernels ({quantized_gap})"
            );
            assert_eq!(argmax(&dense), argmax(&truth));
        }
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_long_input_read_at_once_matches_it_read_in_pieces() {
    let llm = shared().clone();
    tokio::task::spawn_blocking(move || {
        let model = load_model(Weights::Requantized);
        let text = "The ferry leaves the harbour at seven, calls at two islands and is back by \
                    noon; on Sundays it runs only in the afternoon. "
            .repeat(24);
        let tokens = llm.encode(&text).expect("encodes");
        // Longer than two attention chunks, so the queries go in three. Dense products, whose
        // rows do not depend on how many go at once (the quantized kernels quantize a pass's
        // activations differently for different row counts).
        assert!(tokens.len() > 520, "{} tokens", tokens.len());
        let at_once = model
            .forward_with(&tokens, &mut model.new_cache(), Products::Dense)
            .expect("one pass");
        for size in [100usize, 256] {
            let mut kv = model.new_cache();
            let mut in_pieces = Vec::new();
            for piece in tokens.chunks(size) {
                in_pieces = model
                    .forward_with(piece, &mut kv, Products::Dense)
                    .expect("piece");
            }
            let gap = largest_gap(&at_once, &in_pieces);
            assert!(
                gap < 1e-2,
                "pieces of {size}: the two readings differ by {gap}"
            );
            assert_eq!(argmax(&at_once), argmax(&in_pieces));
        }
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_turn_with_facts_reads_only_as_much_history_as_its_budget() {
    let llm = shared().clone();
    tokio::task::spawn_blocking(move || {
        let system = ChatMessage::new(
            Role::System,
            "You are the receptionist of Bright Smile Dental. Answer briefly.",
        );
        let facts = ChatMessage::new(
            Role::System,
            "Facts:\n- A cleaning costs $95 and takes forty-five minutes.",
        );
        let question = ChatMessage::new(Role::User, "How much is a cleaning?");
        let mut history = Vec::new();
        for n in 0..20 {
            history.push(ChatMessage::new(
                Role::User,
                format!("Can I come in on day {n} of the month in the morning?"),
            ));
            history.push(ChatMessage::new(
                Role::Assistant,
                format!("Yes, day {n} in the morning works. Anything else I can help with?"),
            ));
        }
        let prompt =
            |messages: Vec<ChatMessage>| llm.prompt_tokens(&request(messages, 1)).expect("renders");
        let with = |history: &[ChatMessage], facts: Option<&ChatMessage>| {
            let mut messages = vec![system.clone()];
            messages.extend_from_slice(history);
            messages.extend(facts.cloned());
            messages.push(question.clone());
            messages
        };
        let alone = prompt(with(&[], Some(&facts))).len();
        let whole = prompt(with(&history, None)).len();
        let read = prompt(with(&history, Some(&facts)));
        let bounded = read.len();
        eprintln!("prompt tokens: no history {alone}, whole history {whole}, bounded {bounded}");
        assert!(whole > alone + DEFAULT_KNOWLEDGE_HISTORY_TOKENS);
        // Some history is read, no more than the budget, and the latest exchange is in it.
        assert!(bounded > alone);
        assert!(bounded <= alone + DEFAULT_KNOWLEDGE_HISTORY_TOKENS);
        let text = llm.decode(&read).unwrap();
        assert!(text.contains("Yes, day 19 in the morning works."));
        assert!(!text.contains("day 0 "));
        assert!(text.contains("A cleaning costs $95"));
    })
    .await
    .unwrap();
}
