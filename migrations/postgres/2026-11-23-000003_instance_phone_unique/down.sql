DROP INDEX agent_instances_phone;
CREATE INDEX agent_instances_phone ON agent_instances(developer_id, agent_id, phone_number);
