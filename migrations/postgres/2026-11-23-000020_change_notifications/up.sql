-- Several nodes share one database: every change that a node may hold in a cache is announced
-- on the channel `switchboard_changes`, from a trigger, so the announcement is part of the
-- writing transaction (sent at commit, never for a rolled-back change) and covers every writer:
-- any node, the CLI, an operator's SQL. The payload is a small JSON object {"kind", ...}.

CREATE FUNCTION switchboard_announce(payload json) RETURNS void AS $$
BEGIN
    PERFORM pg_notify('switchboard_changes', payload::text);
END;
$$ LANGUAGE plpgsql;

-- A key revoked, rotated away, re-dated or deleted (not the batched last-used writes).
CREATE FUNCTION switchboard_key_changed() RETURNS trigger AS $$
BEGIN
    PERFORM switchboard_announce(json_build_object('kind', 'key', 'hash', OLD.key_hash));
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER api_keys_announce_update AFTER UPDATE ON api_keys FOR EACH ROW
    WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at
          OR OLD.expires_at IS DISTINCT FROM NEW.expires_at
          OR OLD.developer_id IS DISTINCT FROM NEW.developer_id
          OR OLD.key_hash IS DISTINCT FROM NEW.key_hash)
    EXECUTE FUNCTION switchboard_key_changed();
CREATE TRIGGER api_keys_announce_delete AFTER DELETE ON api_keys FOR EACH ROW
    EXECUTE FUNCTION switchboard_key_changed();

-- An agent changed or archived (a collection delete detaches agents: an update each).
CREATE FUNCTION switchboard_agent_changed() RETURNS trigger AS $$
BEGIN
    PERFORM switchboard_announce(json_build_object(
        'kind', 'agent', 'developer', OLD.developer_id, 'id', OLD.id));
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER agents_announce AFTER UPDATE OR DELETE ON agents FOR EACH ROW
    EXECUTE FUNCTION switchboard_agent_changed();

-- A collection changed or deleted.
CREATE FUNCTION switchboard_collection_changed() RETURNS trigger AS $$
BEGIN
    PERFORM switchboard_announce(json_build_object(
        'kind', 'collection', 'developer', OLD.developer_id, 'id', OLD.id));
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER collections_announce AFTER UPDATE OR DELETE ON collections FOR EACH ROW
    EXECUTE FUNCTION switchboard_collection_changed();

-- A document ingested or deleted: nodes holding the collection's search index add or drop
-- its vectors.
CREATE FUNCTION switchboard_document_changed() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM switchboard_announce(json_build_object('kind', 'documents',
            'collection', OLD.collection_id, 'document', OLD.id, 'removed', true));
    ELSE
        PERFORM switchboard_announce(json_build_object('kind', 'documents',
            'collection', NEW.collection_id, 'document', NEW.id, 'removed', false));
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER documents_announce AFTER INSERT OR DELETE ON documents FOR EACH ROW
    EXECUTE FUNCTION switchboard_document_changed();

-- A developer's subscription changed (tier, expiry): the usage standing is read afresh.
CREATE FUNCTION switchboard_developer_changed() RETURNS trigger AS $$
BEGIN
    PERFORM switchboard_announce(json_build_object('kind', 'developer', 'id', OLD.id));
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER developers_announce AFTER UPDATE ON developers FOR EACH ROW
    WHEN (OLD.tier IS DISTINCT FROM NEW.tier
          OR OLD.tier_expires_at IS DISTINCT FROM NEW.tier_expires_at)
    EXECUTE FUNCTION switchboard_developer_changed();
