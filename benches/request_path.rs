//! The per-request path of an authenticated read with a warm cache: hashing the presented key,
//! the key registry's check, the metering registry's admission (rate limit + request count),
//! the agent registry's lookup and the usage read-back for the headers — the actor round trips
//! every `GET /v1/agents/:id` makes before serializing its answer. A second bench adds a
//! metered request's credit check and charge.

use actix::Actor;
use criterion::{criterion_group, criterion_main, Criterion};
use std::sync::Arc;
use switchboard::config::Config;
use switchboard::registry::agents::{CreateAgent, GetAgent};
use switchboard::registry::keys::{create_key, hash_key, CheckKey, KeyCheck};

use switchboard::billing::period::SystemClock;
use switchboard::billing::Usage;
use switchboard::registry::meter;
use switchboard::registry::metering::{Admit, CurrentUsage};
use switchboard::registry::tool_secrets::ToolSecrets;
use switchboard::registry::{AgentRegistry, KeyRegistry, Metering, Supervised};
use switchboard::store::agents::{AgentRow, AgentStatus};
use switchboard::store::Db;
use switchboard::vendors::sealing::KeySealer;

fn request_path(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = dir.path().join("bench.db").to_string_lossy().into_owned();
    let config = Config::load(None).expect("default config");
    let system = actix::System::new();
    let (keys, agents, metering, raw) = system.block_on(async {
        let db = Db::open(&url, 4, 5000).await.expect("open db");
        let issued = create_key(&db, "sb_live_", &"dev_bench".into(), "bench", None)
            .await
            .expect("key");
        let keys = KeyRegistry::new(db.clone(), config.auth.clone()).start();
        let secrets = ToolSecrets::new(KeySealer::new(&[1u8; 32]));
        let agents = AgentRegistry::new(db.clone(), &config.registry, secrets).start();
        let mut rate = config.rate_limit.clone();
        // The bench measures the admission path, not refusals.
        rate.requests = u32::MAX;
        // As the server reaches it: through its supervisor.
        let metering = Supervised::start("metering", {
            let (db, config) = (db.clone(), config.clone());
            move || {
                Metering::new(
                    db.clone(),
                    config.tiers.clone(),
                    config.pricing.clone(),
                    rate.clone(),
                    Arc::new(SystemClock::default()),
                    &config.metering,
                )
            }
        });
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
                    transfer: "[]".into(),
                    analysis: None,
                    status: AgentStatus::Active,
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
    let authenticated_read = || async {
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
        let admission = metering
            .send(Admit {
                developer_id: principal.developer_id.clone(),
                key_id: principal.key_id.to_string(),
            })
            .await
            .unwrap()
            .unwrap();
        assert!(admission.rate.allowed);
        let agent = agents
            .send(GetAgent {
                developer_id: principal.developer_id.clone(),
                agent_id: "bench-agent".into(),
            })
            .await
            .unwrap()
            .unwrap();
        (principal, agent)
    };
    c.bench_function("auth + rate limit + metering + agent lookup (warm)", |b| {
        b.iter(|| {
            system.block_on(async {
                let (principal, agent) = authenticated_read().await;
                let usage = metering
                    .send(CurrentUsage {
                        developer_id: principal.developer_id,
                    })
                    .await
                    .unwrap();
                (agent, usage)
            })
        })
    });
    c.bench_function("auth + rate limit + credit check + charge (warm)", |b| {
        b.iter(|| {
            system.block_on(async {
                let (principal, _) = authenticated_read().await;
                meter::ensure_credits(&metering, &principal.developer_id, true)
                    .await
                    .unwrap();
                meter::charge(
                    &metering,
                    &principal.developer_id,
                    Usage::Tts { characters: 0 },
                    true,
                );
                metering
                    .send(CurrentUsage {
                        developer_id: principal.developer_id,
                    })
                    .await
                    .unwrap()
            })
        })
    });
}

criterion_group!(benches, request_path);
criterion_main!(benches);
