"""Drives the Python client (clients/python) against a running server: reads /health,
creates an agent, reads it back, lists the agents and reads a 404; prints one JSON line of
what it got for tests/clients.rs to check against the server.

Usage: python smoke.py BASE_URL API_KEY AGENT_NAME   (with clients/python on PYTHONPATH)
"""

import json
import sys

from switchboard_client import AuthenticatedClient, Client
from switchboard_client.api.agents import create_agent, get_agent, list_agents
from switchboard_client.api.service import health
from switchboard_client.models import (
    AgentBody,
    AgentFields,
    AgentFieldsMetadataType0,
    ErrorBody,
    HealthBody,
    PageBodyAgentBody,
)


def expect(value, kind):
    """The answer parsed into the generated type the document names, or a failure."""
    if not isinstance(value, kind):
        raise SystemExit(f"expected a {kind.__name__}, got {value!r}")
    return value


base, key, name = sys.argv[1:4]

service = Client(base_url=base)
status = expect(health.sync(client=service), HealthBody)

client = AuthenticatedClient(base_url=base, token=key)
metadata = AgentFieldsMetadataType0.from_dict({"team": "clients"})
fields = AgentFields(
    name=name,
    system_prompt="Answer in one short sentence.",
    temperature=0.25,
    metadata=metadata,
)
created = expect(create_agent.sync(client=client, body=fields), AgentBody)
fetched = expect(get_agent.sync(created.id, client=client), AgentBody)
page = expect(list_agents.sync(client=client, limit=100), PageBodyAgentBody)
listed = [expect(agent, AgentBody).id for agent in page.data]

missing = get_agent.sync_detailed("no-such-agent", client=client)
error = expect(missing.parsed, ErrorBody)

print(
    json.dumps(
        {
            "health": {"status": status.status, "database": status.database},
            "created": created.to_dict(),
            "fetched": fetched.to_dict(),
            "listed": listed,
            "missing": {
                "status": int(missing.status_code),
                "code": error.error.code,
                "message": error.error.message,
            },
        }
    )
)
