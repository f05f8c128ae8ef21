//! The per-request path of an authenticated read with a warm cache: hashing the presented key,
//! the key registry's check, the metering registry's count, and the agent registry's lookup —
//! the actor round trips every `GET /v1/agents/:id` makes before serializing its answer.

use actix::Actor;
use criterion::{criterion_group, criterion_main, Criterion};
use switchboard::config::Config;
use switchboard::registry::agents::{CreateAgent, GetAgent};
use switchboard::registry::keys::{create_key, hash_key, CheckKey, KeyCheck};
use switchboard::registry::metering::RecordRequest;
use switchboard::registry::{AgentRegistry, KeyRegistry, Metering};
use switchboard::store::agents::AgentRow;
use switchboard::store::Db;

fn request_path(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = dir.path().join("bench.db").to_string_lossy().into_owned();
    let config = Config::load(None).expect("default config");
    let system = actix::System::new();
    let (keys, agents, metering, raw) = system.block_on(async {
        let db = Db::open(&url, 4, 5000).await.expect("open db");
        let issued = create_key(&db, "sb_live_", "dev_bench", "bench", None)
            .await
            .expect("key");
        let keys = KeyRegistry::new(db.clone(), config.auth.clone()).start();
        let agents = AgentRegistry::new(db.clone(), &config.registry).start();
        let metering = Metering::new(db.clone(), config.tiers.clone(), &config.metering).start();
        agents
            .send(CreateAgent {
                agent: AgentRow {
                    seq: 0,
                    id: "bench-agent".into(),
                    developer_id: "dev_bench".into(),
                    name: "Bench".into(),
                    description: None,
                    system_prompt: Some("You are terse.".into()),
                    first_message: None,
                    voice_id: "default".into(),
                    tts_provider: "default".into(),
                    tts_model: None,
                    stt_provider: "default".into(),
                    llm_provider: "default".into(),
                    llm_model: None,
                    collection_id: None,
                    style_profile: None,
                    language: "en".into(),
                    temperature: 0.7,
                    max_tokens: None,
                    metadata: "{}".into(),
                    status: "active".into(),
                    created_at: 0,
                    updated_at: 0,
                },
            })
            .await
            .expect("mailbox")
            .expect("agent created");
        (keys, agents, metering, issued.raw)
    });

    c.bench_function("hash_key", |b| b.iter(|| hash_key(&raw)));
    c.bench_function("auth + metering + agent lookup (warm)", |b| {
        b.iter(|| {
            system.block_on(async {
                let check = keys
                    .send(CheckKey {
                        hash: hash_key(&raw),
                    })
                    .await
                    .unwrap()
                    .unwrap();
                let KeyCheck::Valid(principal) = check else {
                    panic!("the bench key is valid")
                };
                let usage = metering.send(RecordRequest {
                    developer_id: principal.developer_id.clone(),
                });
                let agent = agents.send(GetAgent {
                    developer_id: principal.developer_id,
                    agent_id: "bench-agent".into(),
                });
                let (usage, agent) = futures_util::join!(usage, agent);
                usage.unwrap().unwrap();
                agent.unwrap().unwrap()
            })
        })
    });
}

criterion_group!(benches, request_path);
criterion_main!(benches);
