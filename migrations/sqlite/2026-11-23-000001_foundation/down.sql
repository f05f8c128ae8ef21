DROP TABLE usage_counters;
DROP TABLE agent_instances;
DROP TABLE agents;
DROP TABLE chunks;
DROP TABLE documents;
DROP TABLE collections;
DROP TABLE api_keys;
DROP TABLE developers;
