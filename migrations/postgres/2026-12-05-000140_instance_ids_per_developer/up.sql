-- Instance ids are unique per developer, not across the service: a developer may use any id,
-- and another developer's ids stay invisible (no 409 that would tell one exists).
ALTER TABLE agent_instances DROP CONSTRAINT agent_instances_id_key;
ALTER TABLE agent_instances ADD CONSTRAINT agent_instances_developer_id_id_key UNIQUE (developer_id, id);
