-- Instance ids are unique per developer, not across the service: a developer may use any id,
-- and another developer's ids stay invisible (no 409 that would tell one exists). SQLite
-- cannot drop a column's UNIQUE constraint, so the table is rebuilt with the same rows.
CREATE TABLE agent_instances_scoped (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL,
    developer_id TEXT NOT NULL REFERENCES developers(id),
    agent_id     TEXT NOT NULL,
    name         TEXT,
    phone_number TEXT,
    context      TEXT NOT NULL DEFAULT '{}',
    metadata     TEXT NOT NULL DEFAULT '{}',
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    UNIQUE (developer_id, id),
    FOREIGN KEY (developer_id, agent_id) REFERENCES agents(developer_id, id)
);
INSERT INTO agent_instances_scoped
    (seq, id, developer_id, agent_id, name, phone_number, context, metadata, created_at, updated_at)
    SELECT seq, id, developer_id, agent_id, name, phone_number, context, metadata, created_at, updated_at
    FROM agent_instances;
DROP TABLE agent_instances;
ALTER TABLE agent_instances_scoped RENAME TO agent_instances;
CREATE INDEX agent_instances_agent ON agent_instances(developer_id, agent_id, seq);
CREATE UNIQUE INDEX agent_instances_phone ON agent_instances(developer_id, agent_id, phone_number);
