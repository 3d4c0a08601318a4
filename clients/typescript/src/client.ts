// `AgentrunClient`: the API's resources (`runs`, `agents`, `approvals`), usage, and the
// inline executor (`run`, `execute`) that serves a run's tool calls from plain functions.

import { Agents } from "./agents.js";
import { Approvals, type OnApproval } from "./approvals.js";
import { type ExecuteOptions, execute } from "./executor.js";
import { type ClientOptions, Transport } from "./http.js";
import { type CreateRun, Runs } from "./runs.js";
import { type Tools, type ToolRegistry, registryOf } from "./tools.js";
import type { Run, Usage } from "./types.js";

/** What `client.run` takes besides the prompt: the run's fields as the API names them
 * (`model`, `agent`, `max_turns`, `previous_run_id`, …), the `tools` it executes, and the
 * client's own options. */
export type RunRequest = Omit<CreateRun, "prompt" | "tools"> & {
  /** The tools the run offers and this client executes (a registry, `tool(...)`s, or
   * specs by name). With `agent`, the agent's tools are the run's: these execute them. */
  tools?: Tools;
  /** Seconds the whole run may take (`WaitTimeout`). */
  timeout?: number;
  /** Asked once for each gated call (see `approve`, `reject`). */
  onApproval?: OnApproval;
};

export class AgentrunClient {
  readonly runs: Runs;
  readonly agents: Agents;
  readonly approvals: Approvals;
  /** @internal */
  readonly http: Transport;

  constructor(options: ClientOptions = {}) {
    this.http = new Transport(options);
    this.runs = new Runs(this.http);
    this.agents = new Agents(this.http);
    this.approvals = new Approvals(this.http);
  }

  /** The base URL requests go to. */
  get baseUrl(): string {
    return this.http.baseUrl;
  }

  /** Tokens and cost of every model call in `[from, to)` (RFC 3339 text or Dates;
   * default: the last day). */
  async usage(options: { from?: string | Date; to?: string | Date } = {}): Promise<Usage> {
    const query: Record<string, string> = {};
    for (const key of ["from", "to"] as const) {
      const value = options[key];
      if (value !== undefined) query[key] = value instanceof Date ? value.toISOString() : value;
    }
    return this.http.data({
      what: "GET /v1/usage",
      safe: true,
      send: (signal) => this.http.api.GET("/v1/usage", { params: { query }, signal }),
    });
  }

  /** Create a run with `tools`, execute its tool calls here whenever it (or a run below
   * it) suspends for them, and return it once it has ended, or once it waits for what
   * only a person can answer (a resolution, a budget, gated calls `onApproval` left). */
  async run(prompt: string, request: RunRequest = {}): Promise<Run> {
    const { tools, timeout, onApproval, ...fields } = request;
    const registry = registryOf(tools ?? []);
    const sent = fields.agent ? undefined : tools; // (an agent's tools are its own)
    const started = performance.now();
    const run = await this.runs.create({ ...fields, prompt, ...(sent ? { tools: sent } : {}) });
    const left = timeout === undefined ? undefined : timeout - (performance.now() - started) / 1000;
    return this.execute(run.id, registry, { timeout: left, onApproval });
  }

  /** Serve an existing run's tool calls (and its descendants') from `tools` until it
   * ends: what `run` does after creating it. */
  execute(runId: string, tools: Tools | ToolRegistry, options: ExecuteOptions = {}): Promise<Run> {
    return execute(this, runId, registryOf(tools), options);
  }
}
