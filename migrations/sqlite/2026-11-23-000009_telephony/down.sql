DROP TABLE agent_syncs;
DROP TABLE recordings;
DROP TABLE call_tasks;
DROP TABLE phone_numbers;
