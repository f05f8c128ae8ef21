-- A caller's phone number picks one instance of an agent, so it is unique per agent
-- (instances without a number are not constrained).
DROP INDEX agent_instances_phone;
CREATE UNIQUE INDEX agent_instances_phone ON agent_instances(developer_id, agent_id, phone_number);
