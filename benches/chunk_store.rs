//! Storing an ingested 1 MB document: 1,608 chunks of about 1,000 characters with their
//! 384-dimension embeddings (what the chunker and MiniLM make of a 1 MB text), written in one
//! transaction by `store::documents::insert` (multi-row inserts of 500 chunks), against the
//! same rows inserted one statement per row as they were before. On SQLite (a temp file) and,
//! when `SWITCHBOARD_BENCH_POSTGRES_URL` is set, on PostgreSQL. Prints the median of 7 runs.

use std::time::{Duration, Instant};

use diesel_async::RunQueryDsl;
use switchboard::store::collections::{self, CollectionRow};
use switchboard::store::documents::{self, bytes_of, ChunkRow, DocumentRow};
use switchboard::store::{developers, schema, Db, StoreResult};

const CHUNKS: usize = 1_608;
const RUNS: usize = 7;

fn chunk_rows(document: &str, collection: &str) -> Vec<ChunkRow> {
    let sentence = "The quarterly maintenance window moves to Sunday night between two and four. ";
    (0..CHUNKS)
        .map(|i| ChunkRow {
            document_id: document.into(),
            collection_id: collection.into(),
            chunk_index: i as i32,
            content: sentence.repeat(13),
            metadata: r#"{"source":"bench"}"#.into(),
            embedding: Some(bytes_of(
                &(0..384)
                    .map(|d| ((i * 7 + d) % 97) as f32 / 97.0)
                    .collect::<Vec<_>>(),
            )),
        })
        .collect()
}

fn document(id: &str, collection: &str) -> DocumentRow {
    DocumentRow {
        id: id.into(),
        developer_id: "dev_bench".into(),
        collection_id: collection.into(),
        content_type: "text".into(),
        source_url: None,
        metadata: "{}".into(),
        chunk_count: CHUNKS as i32,
        tokens: 256_028,
        created_at: 0,
    }
}

/// The previous way: one INSERT per chunk, in one transaction.
async fn insert_row_by_row(db: &Db, doc: &DocumentRow, rows: &[ChunkRow]) -> StoreResult<()> {
    switchboard::db_tx!(db, |conn| {
        diesel::insert_into(schema::documents::table)
            .values(doc)
            .execute(conn)
            .await?;
        for row in rows {
            diesel::insert_into(schema::chunks::table)
                .values(row)
                .execute(conn)
                .await?;
        }
        Ok(())
    })
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

async fn measure(label: &str, url: &str) {
    let db = Db::open(url, 4, 5000).await.expect("open the database");
    developers::ensure(&db, &"dev_bench".into())
        .await
        .expect("developer");
    let collection = format!("col_bench_{}", std::process::id());
    collections::insert(
        &db,
        &CollectionRow {
            seq: 0,
            id: collection.as_str().into(),
            developer_id: "dev_bench".into(),
            name: "bench".into(),
            description: None,
            metadata: "{}".into(),
            created_at: 0,
        },
    )
    .await
    .expect("collection");
    let (mut batched, mut by_row) = (Vec::new(), Vec::new());
    for run in 0..RUNS {
        let id = format!("doc_row_{run}");
        let rows = chunk_rows(&id, &collection);
        let started = Instant::now();
        insert_row_by_row(&db, &document(&id, &collection), &rows)
            .await
            .expect("row-by-row insert");
        by_row.push(started.elapsed());

        let id = format!("doc_batch_{run}");
        let rows = chunk_rows(&id, &collection);
        let started = Instant::now();
        assert!(documents::insert(&db, &document(&id, &collection), &rows)
            .await
            .expect("batched insert"));
        batched.push(started.elapsed());
    }
    let stored = documents::vectors(&db, &collection.as_str().into())
        .await
        .expect("vectors");
    assert_eq!(stored.len(), 2 * RUNS * CHUNKS);
    let (by_row, batched) = (median(by_row), median(batched));
    println!(
        "{label}: {CHUNKS} chunks in one transaction: one INSERT per row {:.1} ms, \
         multi-row INSERTs {:.1} ms ({:.1}x)",
        by_row.as_secs_f64() * 1e3,
        batched.as_secs_f64() * 1e3,
        by_row.as_secs_f64() / batched.as_secs_f64()
    );
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = dir.path().join("bench.db").to_string_lossy().into_owned();
        measure("SQLite", &url).await;
        if let Ok(url) = std::env::var("SWITCHBOARD_BENCH_POSTGRES_URL") {
            measure("PostgreSQL", &url).await;
        }
    });
}
