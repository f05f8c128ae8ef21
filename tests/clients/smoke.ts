// Drives the TypeScript client (clients/typescript) against a running server: reads
// /health, creates an agent, reads it back, lists the agents and reads a 404; prints one
// JSON line of what it got for tests/clients.rs to check against the server.
// Usage: node smoke.js BASE_URL API_KEY AGENT_NAME
import { createSwitchboardClient, type Schemas } from "./index.js";

// Node's own global (its type package is not among the client's).
declare const process: { argv: string[] };

const [base, key, name] = process.argv.slice(2);
if (base === undefined || key === undefined || name === undefined) {
  throw new Error("usage: smoke.js BASE_URL API_KEY AGENT_NAME");
}
const client = createSwitchboardClient(base, key);

const health = await client.GET("/health");
if (health.data === undefined) {
  throw new Error(`GET /health answered ${health.response.status}`);
}

const fields: Schemas["AgentFields"] = {
  name,
  systemPrompt: "Answer in one short sentence.",
  temperature: 0.25,
  metadata: { team: "clients" },
};
const created = await client.POST("/v1/agents", { body: fields });
if (created.data === undefined) {
  throw new Error(`POST /v1/agents answered ${created.response.status}: ${JSON.stringify(created.error)}`);
}
const agent: Schemas["AgentBody"] = created.data;
// The answer is typed: a field the document does not list is a compile error.
// @ts-expect-error AgentBody has no such field
void agent.noSuchField;

const fetched = await client.GET("/v1/agents/{id}", { params: { path: { id: agent.id } } });
if (fetched.data === undefined) {
  throw new Error(`GET /v1/agents/${agent.id} answered ${fetched.response.status}`);
}

const listed = await client.GET("/v1/agents", { params: { query: { limit: 100 } } });
if (listed.data === undefined) {
  throw new Error(`GET /v1/agents answered ${listed.response.status}`);
}

const missing = await client.GET("/v1/agents/{id}", { params: { path: { id: "no-such-agent" } } });
if (missing.error === undefined) {
  throw new Error(`GET /v1/agents/no-such-agent answered ${missing.response.status}`);
}
const error: Schemas["ErrorBody"] = missing.error;

console.log(
  JSON.stringify({
    health: { status: health.data.status, database: health.data.database },
    created: agent,
    fetched: fetched.data,
    listed: listed.data.data.map((a) => a.id),
    missing: { status: missing.response.status, code: error.error.code, message: error.error.message },
  }),
);
