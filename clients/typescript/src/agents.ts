// `client.agents` (`/v1/agents`): named, versioned run configurations that runs start from
// (`runs.create({agent})`, `client.run(prompt, {agent})`) and that agent tools call.
// Versions are immutable: `update` makes the next one. Reads need `runs:read`, writes
// `agents:manage` (else `Forbidden`).

import { InvalidInput } from "./errors.js";
import type { Transport } from "./http.js";
import { type Tools, definitionsOf } from "./tools.js";
import type { Agent, AgentFields, AgentPage, ModelSpec } from "./types.js";

/** What `agents.create` and `update` take: the agent's run fields as the API names them,
 * `tools` as definitions, a registry or tool objects (an agent tool is
 * `{name, agent: "researcher"}`), a `webhook` URL as text. */
export type AgentBody = AgentFields & { description: string; model: ModelSpec; tools?: Tools };

const AGENT_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

export function agentName(name: string): string {
  if (typeof name !== "string" || !AGENT_NAME.test(name)) {
    throw new InvalidInput(
      `not an agent name: ${JSON.stringify(name)} (1-64 of letters, digits, _ and -, a letter or digit first)`,
    );
  }
  return name;
}

function agentBody(fields: AgentBody): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    if (key === "tools") body.tools = definitionsOf(value as Tools);
    else if (key === "webhook" && typeof value === "string") body.webhook = { url: value };
    else body[key] = value;
  }
  return body;
}

export class Agents {
  constructor(private readonly http: Transport) {}

  /** Its version 1 (`Conflict` `agent-exists` when the name is taken: `update`). */
  async create(agent: AgentBody & { name: string }): Promise<Agent> {
    agentName(agent.name);
    const body = agentBody(agent) as never;
    return this.http.data({
      what: "POST /v1/agents",
      safe: false,
      send: (signal) => this.http.api.POST("/v1/agents", { body, signal }),
    });
  }

  /** Its latest version, or `version` (`NotFound` `agent-not-found`). */
  async get(name: string, options: { version?: number } = {}): Promise<Agent> {
    const path = { name: agentName(name) };
    const version = options.version;
    if (version === undefined) {
      return this.http.data({
        what: `GET /v1/agents/${name}`,
        safe: true,
        send: (signal) => this.http.api.GET("/v1/agents/{name}", { params: { path }, signal }),
      });
    }
    return this.http.data({
      what: `GET /v1/agents/${name}/versions/${version}`,
      safe: true,
      send: (signal) =>
        this.http.api.GET("/v1/agents/{name}/versions/{version}", {
          params: { path: { ...path, version: Math.trunc(version) } },
          signal,
        }),
    });
  }

  /** Every version, oldest first. */
  async versions(name: string): Promise<Agent[]> {
    const path = { name: agentName(name) };
    const page = await this.http.data({
      what: `GET /v1/agents/${name}/versions`,
      safe: true,
      send: (signal) => this.http.api.GET("/v1/agents/{name}/versions", { params: { path }, signal }),
    });
    return page.data;
  }

  /** One page of the tenant's agents (each at its latest version), by name. */
  async listPage(options: { limit?: number; cursor?: string } = {}): Promise<AgentPage> {
    const query = { limit: options.limit ?? 20, ...(options.cursor ? { cursor: options.cursor } : {}) };
    return this.http.data({
      what: "GET /v1/agents",
      safe: true,
      send: (signal) => this.http.api.GET("/v1/agents", { params: { query }, signal }),
    });
  }

  /** Every agent at its latest version, by name, fetching pages as the iteration goes. */
  async *list(options: { pageSize?: number } = {}): AsyncGenerator<Agent, void, undefined> {
    let cursor: string | undefined;
    for (;;) {
      const page = await this.listPage({ limit: options.pageSize ?? 100, ...(cursor ? { cursor } : {}) });
      yield* page.data;
      if (!page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }

  /** Its next version, whole (a field left out is not taken from the one before). */
  async update(name: string, agent: AgentBody): Promise<Agent> {
    const path = { name: agentName(name) };
    const body = agentBody(agent) as never;
    return this.http.data({
      what: `PUT /v1/agents/${name}`,
      safe: false,
      send: (signal) => this.http.api.PUT("/v1/agents/{name}", { params: { path }, body, signal }),
    });
  }

  /** No new run starts from it; runs in flight keep their version. */
  async delete(name: string): Promise<void> {
    const path = { name: agentName(name) };
    await this.http.request({
      what: `DELETE /v1/agents/${name}`,
      safe: false,
      send: (signal) => this.http.api.DELETE("/v1/agents/{name}", { params: { path }, signal }),
    });
  }
}
