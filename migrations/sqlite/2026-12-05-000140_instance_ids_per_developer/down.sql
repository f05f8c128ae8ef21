CREATE TABLE agent_instances_global (
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
INSERT INTO agent_instances_global
    (seq, id, developer_id, agent_id, name, phone_number, context, metadata, created_at, updated_at)
    SELECT seq, id, developer_id, agent_id, name, phone_number, context, metadata, created_at, updated_at
    FROM agent_instances;
DROP TABLE agent_instances;
ALTER TABLE agent_instances_global RENAME TO agent_instances;
CREATE INDEX agent_instances_agent ON agent_instances(developer_id, agent_id, seq);
CREATE UNIQUE INDEX agent_instances_phone ON agent_instances(developer_id, agent_id, phone_number);
