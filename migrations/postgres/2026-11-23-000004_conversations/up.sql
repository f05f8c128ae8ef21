-- Conversations held over POST /v1/agents/{id}/chat: one row per conversation, one per
-- message (user, assistant, tool) in order. Tool calls an assistant message made are kept as
-- JSON with it.

CREATE TABLE conversations (
    seq          BIGSERIAL PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    developer_id TEXT NOT NULL REFERENCES developers(id),
    agent_id     TEXT NOT NULL,
    instance_id  TEXT,
    turns        INTEGER NOT NULL DEFAULT 0,
    ended        BOOLEAN NOT NULL DEFAULT FALSE,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX conversations_agent ON conversations(developer_id, agent_id, seq);

CREATE TABLE conversation_messages (
    seq             BIGSERIAL PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    turn_index      INTEGER NOT NULL,
    role            TEXT NOT NULL,
    content         TEXT NOT NULL,
    tool_calls      TEXT NOT NULL DEFAULT '[]',
    created_at      BIGINT NOT NULL
);
CREATE INDEX conversation_messages_order ON conversation_messages(conversation_id, seq);
