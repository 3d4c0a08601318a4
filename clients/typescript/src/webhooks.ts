// The webhook executor (`@agentrun/client/webhooks`), the Python client's
// `agentrun_client.webhooks.executor_app` for Node servers: it serves tools to runs
// created with `webhook: {url}` (or the service's AGENTRUN_WEBHOOK_URL).
//
// Each delivery's Standard Webhooks signature is checked (`webhook-id`,
// `webhook-timestamp` within five minutes, `webhook-signature` keyed with the service's
// AGENTRUN_WEBHOOK_SECRET: 401 otherwise); a verified delivery is acknowledged at once
// (202) and a `run.requires_action` one executed in the background, its results posted to
// the run's `callback_url` (no API key needed). Deliveries are at least once: a
// `webhook-id` seen before is acknowledged (200 `{"duplicate": true}`) and not executed
// again, and neither is a call (run, call id) this executor already executed.

import { Webhook } from "standardwebhooks";
import { AgentrunClient } from "./client.js";
import { Conflict, NotFound } from "./errors.js";
import { type CallLike, type Tools, registryOf } from "./tools.js";

/** How many webhook ids and executed calls are remembered for deduplication. */
const REMEMBERED = 10_000;
const MAX_BODY_BYTES = 10_000_000;

/** A verified delivery: `{type, timestamp, data: {run_id, status, …}}`. */
export interface WebhookPayload {
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

export interface WebhookExecutorOptions {
  /** The tools the executor serves. */
  tools: Tools;
  /** The service's AGENTRUN_WEBHOOK_SECRET (`whsec_…`). */
  secret: string;
  /** The client that posts results to callback URLs (its retry policy applies; it sends
   * no API key there). Default: one of its own. */
  client?: AgentrunClient;
  /** Receives every verified delivery (`run.completed`, `run.approval_required`, …). */
  onEvent?: (payload: WebhookPayload) => unknown;
  /** Where failures of the background work are told (default `console.error`). */
  log?: (message: string, error?: unknown) => void;
}

/** What the executor answers a delivery. */
export interface WebhookAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The parts of node:http's IncomingMessage the handler reads (an Express request too;
 * a body a middleware already read as a Buffer or text is used as it is). */
export interface NodeRequest extends AsyncIterable<Uint8Array | string> {
  method?: string | undefined;
  headers: Record<string, string | string[] | undefined>;
  body?: unknown;
}

/** The parts of node:http's ServerResponse the handler writes. */
export interface NodeResponse {
  writeHead(status: number, headers: Record<string, string>): unknown;
  end(body: string): unknown;
}

/** A bounded set: the least recently added keys are forgotten first. */
class Seen {
  private readonly keys = new Set<string>();
  add(key: string): boolean {
    if (this.keys.has(key)) return false;
    this.keys.add(key);
    if (this.keys.size > REMEMBERED) this.keys.delete(this.keys.values().next().value as string);
    return true;
  }
}

function answer(status: number, body: Record<string, unknown>, headers: Record<string, string> = {}): WebhookAnswer {
  return { status, headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) };
}

export class WebhookExecutor {
  private readonly verifier: Webhook;
  private readonly registry;
  private readonly webhookIds = new Seen();
  private readonly calls = new Seen();
  private readonly tasks = new Set<Promise<void>>();
  private ownClient: AgentrunClient | undefined;

  constructor(private readonly options: WebhookExecutorOptions) {
    this.verifier = new Webhook(options.secret);
    this.registry = registryOf(options.tools);
  }

  private get client(): AgentrunClient {
    return (this.options.client ??= this.ownClient ??= new AgentrunClient({ apiKey: "" }));
  }

  /** A node:http request listener (`http.createServer(executor.handler)`, or a route of
   * an Express app). */
  readonly handler = (req: NodeRequest, res: NodeResponse): void => {
    void this.fromNode(req).then(
      (out) => {
        res.writeHead(out.status, out.headers);
        res.end(out.body);
      },
      (error: unknown) => {
        this.log("webhook executor: reading a delivery failed", error);
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ detail: "the delivery could not be read" }));
      },
    );
  };

  /** The same for servers of the Fetch API (Deno, Bun, workers). */
  async fetch(request: Request): Promise<Response> {
    const body = request.method === "POST" ? new Uint8Array(await request.arrayBuffer()) : new Uint8Array();
    const headers: Record<string, string> = {};
    request.headers.forEach((value, key) => {
      headers[key] = value;
    });
    const out = this.handle(request.method, headers, body.byteLength > MAX_BODY_BYTES ? undefined : body);
    return new Response(out.body, { status: out.status, headers: out.headers });
  }

  /** One delivery: its method, headers (lower-case names) and body (undefined: too
   * large). Starts the execution in the background; answers at once. */
  handle(method: string, headers: Record<string, string>, body: Uint8Array | undefined): WebhookAnswer {
    if (method !== "POST") return answer(405, { detail: "POST webhook deliveries here" }, { allow: "POST" });
    if (body === undefined) return answer(413, { detail: "the delivery is too large" });
    let payload: unknown;
    try {
      payload = this.verifier.verify(body, headers);
    } catch (error) {
      this.log(`webhook refused: ${(error as Error).message}`);
      return answer(401, { detail: "the webhook signature does not verify" });
    }
    if (payload === null || typeof payload !== "object" || Array.isArray(payload)) {
      return answer(400, { detail: "the delivery is not a JSON object" });
    }
    if (!this.webhookIds.add(headers["webhook-id"] as string)) return answer(200, { duplicate: true });
    this.start(this.execute(payload as WebhookPayload));
    return answer(202, { accepted: true });
  }

  /** Until every background execution has finished (call it before a server stops). */
  async drain(): Promise<void> {
    while (this.tasks.size) await Promise.all([...this.tasks]);
  }

  /** `drain`, for symmetry with the Python executor's `aclose`. */
  close(): Promise<void> {
    return this.drain();
  }

  private async fromNode(req: NodeRequest): Promise<WebhookAnswer> {
    const method = req.method ?? "GET";
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
    }
    let body: Uint8Array | undefined;
    if (req.body instanceof Uint8Array) body = req.body;
    else if (typeof req.body === "string") body = new TextEncoder().encode(req.body);
    else {
      const chunks: Uint8Array[] = [];
      let size = 0;
      for await (const chunk of req) {
        const bytes = typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk;
        size += bytes.byteLength;
        if (size <= MAX_BODY_BYTES) chunks.push(bytes);
      }
      if (size <= MAX_BODY_BYTES) {
        body = new Uint8Array(size);
        let at = 0;
        for (const c of chunks) {
          body.set(c, at);
          at += c.byteLength;
        }
      }
    }
    if (body !== undefined && body.byteLength > MAX_BODY_BYTES) body = undefined;
    return this.handle(method, headers, body);
  }

  private start(job: Promise<void>): void {
    const task: Promise<void> = job
      .catch((error: unknown) => this.log("webhook executor: handling a delivery failed", error))
      .finally(() => this.tasks.delete(task));
    this.tasks.add(task);
  }

  private async execute(payload: WebhookPayload): Promise<void> {
    const data = payload.data ?? {};
    if (this.options.onEvent) {
      try {
        await this.options.onEvent(payload);
      } catch (error) {
        this.log("webhook executor: onEvent failed", error); // the tools run all the same
      }
    }
    if (payload.type !== "run.requires_action") return;
    const callbackUrl = data.callback_url;
    const runId = String(data.run_id ?? "");
    if (typeof callbackUrl !== "string" || !Array.isArray(data.tool_calls)) return; // a resolution
    const calls = (data.tool_calls as (CallLike & { queue?: string | null })[]).filter((c) => !c.queue);
    const fresh = calls.filter((c) => this.calls.add(`${runId}/${c.id}`));
    if (!fresh.length) return;
    const results = await this.registry.executeAll(fresh, { runId });
    try {
      await this.client.runs.submitViaCallback(callbackUrl, results);
    } catch (error) {
      if (error instanceof Conflict || error instanceof NotFound) {
        // answered by another executor, or the run moved on (cancelled, expired)
        this.log(`webhook executor: results for ${runId} not taken: ${error.message}`);
        return;
      }
      throw error;
    }
  }

  private log(message: string, error?: unknown): void {
    if (this.options.log) this.options.log(message, error);
    else if (error === undefined) console.warn(message);
    else console.error(message, error);
  }
}

/** A webhook executor serving `tools` to signed `run.requires_action` deliveries. */
export function webhookExecutor(options: WebhookExecutorOptions): WebhookExecutor {
  return new WebhookExecutor(options);
}
