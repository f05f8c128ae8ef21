DROP TABLE provider_keys;
