ALTER TABLE agent_instances DROP CONSTRAINT agent_instances_developer_id_id_key;
ALTER TABLE agent_instances ADD CONSTRAINT agent_instances_id_key UNIQUE (id);
