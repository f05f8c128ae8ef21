// The Switchboard API client: openapi-fetch typed by the paths and schemas that
// openapi-typescript generates into ./schema.ts from the service's OpenAPI document
// (scripts/generate-clients). Every request and answer is checked against the document at
// compile time: `client.GET("/v1/agents/{id}", { params: { path: { id } } })` answers
// `{ data: AgentBody }` or `{ error: ErrorBody }`.
import createClient, { type Client, type ClientOptions } from "openapi-fetch";
import type { components, operations, paths } from "./schema.js";

export type { components, operations, paths };

/** The document's schemas by name, e.g. `Schemas["AgentBody"]`. */
export type Schemas = components["schemas"];

/** A client for the service at `baseUrl` (e.g. `http://127.0.0.1:8080`), sending `apiKey` as
 * its bearer token when given (`/health` and `/openapi.json` need none). */
export function createSwitchboardClient(
  baseUrl: string,
  apiKey?: string,
  options: Omit<ClientOptions, "baseUrl"> = {},
): Client<paths> {
  const client = createClient<paths>({ ...options, baseUrl });
  if (apiKey !== undefined) {
    client.use({
      onRequest({ request }) {
        request.headers.set("Authorization", `Bearer ${apiKey}`);
        return request;
      },
    });
  }
  return client;
}
