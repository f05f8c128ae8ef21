-- Foundation tables: developers, API keys, agents and their instances, collections with
-- documents and chunks, usage counters. Timestamps are Unix epoch milliseconds (UTC).
-- `seq` gives every row a stable creation order for cursor pagination.

CREATE TABLE developers (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT NOT NULL UNIQUE,
    name       TEXT,
    tier       TEXT NOT NULL DEFAULT 'starter',
    created_at BIGINT NOT NULL
);

CREATE TABLE api_keys (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    developer_id TEXT NOT NULL REFERENCES developers(id),
    name         TEXT NOT NULL,
    key_hash     TEXT NOT NULL UNIQUE,
    prefix       TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT,
    last_used_at BIGINT,
    revoked_at   BIGINT
);
CREATE INDEX api_keys_developer ON api_keys(developer_id, seq);
CREATE INDEX api_keys_revoked ON api_keys(revoked_at) WHERE revoked_at IS NOT NULL;

CREATE TABLE collections (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    developer_id TEXT NOT NULL REFERENCES developers(id),
    name         TEXT NOT NULL,
    description  TEXT,
    metadata     TEXT NOT NULL DEFAULT '{}',
    created_at   BIGINT NOT NULL
);
CREATE INDEX collections_developer ON collections(developer_id, seq);

CREATE TABLE documents (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT NOT NULL UNIQUE,
    developer_id  TEXT NOT NULL REFERENCES developers(id),
    collection_id TEXT NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    content_type  TEXT NOT NULL,
    source_url    TEXT,
    metadata      TEXT NOT NULL DEFAULT '{}',
    chunk_count   INTEGER NOT NULL,
    tokens        BIGINT NOT NULL,
    created_at    BIGINT NOT NULL
);
CREATE INDEX documents_collection ON documents(collection_id, seq);

CREATE TABLE chunks (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    document_id   TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    collection_id TEXT NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    chunk_index   INTEGER NOT NULL,
    content       TEXT NOT NULL,
    metadata      TEXT NOT NULL DEFAULT '{}',
    embedding     BLOB,
    UNIQUE (document_id, chunk_index)
);
CREATE INDEX chunks_collection ON chunks(collection_id, seq);

CREATE TABLE agents (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    id             TEXT NOT NULL,
    developer_id   TEXT NOT NULL REFERENCES developers(id),
    name           TEXT NOT NULL,
    description    TEXT,
    system_prompt  TEXT,
    first_message  TEXT,
    voice_id       TEXT NOT NULL,
    tts_provider   TEXT NOT NULL,
    tts_model      TEXT,
    stt_provider   TEXT NOT NULL,
    llm_provider   TEXT NOT NULL,
    llm_model      TEXT,
    collection_id  TEXT,
    style_profile  TEXT,
    language       TEXT NOT NULL,
    temperature    DOUBLE PRECISION NOT NULL,
    max_tokens     INTEGER,
    metadata       TEXT NOT NULL DEFAULT '{}',
    status         TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL,
    UNIQUE (developer_id, id)
);
CREATE INDEX agents_developer ON agents(developer_id, status, seq);

CREATE TABLE agent_instances (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    developer_id TEXT NOT NULL REFERENCES developers(id),
    agent_id     TEXT NOT NULL,
    name         TEXT,
    phone_number TEXT,
    context      TEXT NOT NULL DEFAULT '{}',
    metadata     TEXT NOT NULL DEFAULT '{}',
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    FOREIGN KEY (developer_id, agent_id) REFERENCES agents(developer_id, id)
);
CREATE INDEX agent_instances_agent ON agent_instances(developer_id, agent_id, seq);
CREATE INDEX agent_instances_phone ON agent_instances(developer_id, agent_id, phone_number);

CREATE TABLE usage_counters (
    developer_id  TEXT NOT NULL REFERENCES developers(id),
    period        TEXT NOT NULL,
    request_count BIGINT NOT NULL DEFAULT 0,
    credits_tts   DOUBLE PRECISION NOT NULL DEFAULT 0,
    credits_stt   DOUBLE PRECISION NOT NULL DEFAULT 0,
    credits_llm   DOUBLE PRECISION NOT NULL DEFAULT 0,
    credits_rag   DOUBLE PRECISION NOT NULL DEFAULT 0,
    PRIMARY KEY (developer_id, period)
);
