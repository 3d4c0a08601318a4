// `client.runs` (`/v1/runs`): create, read, list, cancel, answer, follow and wait for runs.

import { APIConnectionError, InvalidInput, WaitTimeout, problemError, retryAfterOf } from "./errors.js";
import { DeadlineReached, type Transport, describe, idempotencyKey } from "./http.js";
import { now, retryableStatus, sleep } from "./retry.js";
import { SSEDecoder, lines } from "./sse.js";
import { type Tools, definitionsOf } from "./tools.js";
import {
  type BrowserToken,
  type Checkpoint,
  type CheckpointList,
  type ConversationMessage,
  type ForkIn,
  type Event,
  type MessagePage,
  type ModelSpec,
  RUN_STATUSES,
  type Run,
  type RunLimits,
  type RunOptions,
  type RunPage,
  type RunStatus,
  SUSPENDED_OR_FINISHED,
  type SubmitOutcome,
  TERMINAL,
  TERMINAL_EVENTS,
  type ToolResult,
  isTerminal,
} from "./types.js";

/** The server sends a heartbeat every 15 s: a stream silent for this long is dead. */
export const STREAM_READ_TIMEOUT = 60;
/** The longest the server holds `GET /v1/runs/{id}/wait`. */
export const MAX_WAIT_SECONDS = 60;
/** How much longer than the wait it asked for the client reads before giving up. */
const WAIT_READ_MARGIN = 15;

export type Statuses = RunStatus | readonly RunStatus[] | undefined;

/** What `runs.create` takes: the run's fields as the API names them (`prompt`, `model`,
 * `agent`, `max_turns`, …: docs/reference.md "Creating a run"), `tools` as definitions, a
 * registry or tool objects, and the client's own `idempotencyKey`. */
export type CreateRun = RunOptions & {
  prompt: string;
  model?: ModelSpec;
  tools?: Tools;
  /** Sent as `Idempotency-Key`; a random one when left out, so retries are safe. */
  idempotencyKey?: string;
};

/** What `runs.fork` takes: the API's body (`at`, `patch`, `overrides`, `mode`,
 * `on_divergence`: docs/forks.md), `overrides.tools` also as a registry or tool objects
 * and `overrides.webhook` as a URL, and the client's own `idempotencyKey`. */
export type ForkRun = Omit<ForkIn, "overrides"> & {
  overrides?: (Omit<NonNullable<ForkIn["overrides"]>, "tools" | "webhook"> & {
    tools?: Tools;
    webhook?: string | { url: string } | null;
  }) | null;
  /** Sent as `Idempotency-Key`; a random one when left out, so retries are safe. */
  idempotencyKey?: string;
};

export function runId(id: string): string {
  if (typeof id !== "string" || !/^[A-Za-z0-9_-]+$/.test(id)) {
    throw new InvalidInput(`not a run id: ${JSON.stringify(id)}`);
  }
  return id;
}

export function statusesOf(statuses: Statuses): RunStatus[] {
  if (statuses === undefined) return [...SUSPENDED_OR_FINISHED];
  const list = typeof statuses === "string" ? [statuses] : [...statuses];
  for (const s of list) {
    if (!RUN_STATUSES.includes(s)) {
      throw new InvalidInput(`${JSON.stringify(s)} is not a status; the statuses are ${RUN_STATUSES.join(", ")}`);
    }
  }
  if (!list.length) throw new InvalidInput("wait for at least one status");
  return list;
}

/** A run's create body: the fields given (undefined left out), `tools` as definitions, a
 * `webhook` URL as `{url}`. */
export function createBody(fields: Omit<CreateRun, "idempotencyKey">): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    if (name === "tools") {
      const definitions = definitionsOf(value as Tools);
      if (definitions.length) body.tools = definitions;
    } else if (name === "webhook" && typeof value === "string") {
      body.webhook = { url: value };
    } else {
      body[name] = value;
    }
  }
  return body;
}

/** A fork's body: the fields given (undefined left out), `overrides.tools` as definitions
 * (`[]` kept: no tools), `overrides.webhook` as `{url}`. */
export function forkBody(fields: Omit<ForkRun, "idempotencyKey">): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    if (name === "at" && value !== null && !(Number.isInteger(value) && (value as number) >= 1)) {
      throw new InvalidInput(`at: a checkpoint's seq (an integer from 1), not ${JSON.stringify(value)}`);
    }
    body[name] = value;
  }
  const overrides = fields.overrides;
  if (overrides) {
    const given: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(overrides)) {
      if (value === undefined) continue;
      if (name === "tools" && value !== null) given.tools = definitionsOf(value as Tools);
      else if (name === "webhook" && typeof value === "string") given.webhook = { url: value };
      else given[name] = value;
    }
    body.overrides = given;
  }
  return body;
}

async function* pages<T>(fetchPage: (cursor: string | undefined) => Promise<{ data: T[]; next_cursor?: string | null }>): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined;
  for (;;) {
    const page = await fetchPage(cursor);
    yield* page.data;
    if (!page.next_cursor) return;
    cursor = page.next_cursor;
  }
}

export class Runs {
  constructor(private readonly http: Transport) {}

  /** Create a run; retried safely (with `idempotencyKey`, or one made here).
   * `previous_run_id` continues a completed run (then `model` may be left out); `agent`
   * (`"name"` or `"name@2"`) starts it from a named agent (leave out `model` and `tools`). */
  async create(request: CreateRun): Promise<Run> {
    const { idempotencyKey: key, ...fields } = request;
    const body = createBody(fields) as never;
    const headers = { "Idempotency-Key": key ?? idempotencyKey() };
    return this.http.data({
      what: "POST /v1/runs",
      safe: true,
      send: (signal) => this.http.api.POST("/v1/runs", { body, headers, signal }),
    });
  }

  async get(id: string): Promise<Run> {
    const run_id = runId(id);
    return this.http.data({
      what: `GET /v1/runs/${run_id}`,
      safe: true,
      send: (signal) => this.http.api.GET("/v1/runs/{run_id}", { params: { path: { run_id } }, signal }),
    });
  }

  /** One page of runs, newest first; `next_cursor` fetches the next. `rootRunId`: only
   * that tree's runs (its root and every descendant). */
  async listPage(
    options: { status?: RunStatus; limit?: number; cursor?: string; rootRunId?: string } = {},
  ): Promise<RunPage> {
    const query: Record<string, string | number> = { limit: options.limit ?? 20 };
    if (options.status !== undefined) query.status = statusesOf(options.status)[0] as string;
    if (options.cursor !== undefined) query.cursor = options.cursor;
    if (options.rootRunId !== undefined) query.root_run_id = runId(options.rootRunId);
    return this.http.data({
      what: "GET /v1/runs",
      safe: true,
      send: (signal) => this.http.api.GET("/v1/runs", { params: { query: query as never }, signal }),
    });
  }

  /** Every run (of `status`; of the tree `rootRunId`), newest first, fetching pages as the
   * iteration goes. */
  list(options: { status?: RunStatus; pageSize?: number; rootRunId?: string } = {}): AsyncGenerator<Run, void, undefined> {
    const { pageSize = 100, ...rest } = options;
    return pages((cursor) => this.listPage({ ...rest, limit: pageSize, ...(cursor ? { cursor } : {}) }));
  }

  /** One page of a run's child runs (its agent tools' calls started them), oldest first. */
  async childrenPage(id: string, options: { limit?: number; cursor?: string } = {}): Promise<RunPage> {
    const run_id = runId(id);
    const query = { limit: options.limit ?? 20, ...(options.cursor ? { cursor: options.cursor } : {}) };
    return this.http.data({
      what: `GET /v1/runs/${run_id}/children`,
      safe: true,
      send: (signal) =>
        this.http.api.GET("/v1/runs/{run_id}/children", { params: { path: { run_id }, query }, signal }),
    });
  }

  /** Every child run of the run, oldest first. */
  children(id: string, options: { pageSize?: number } = {}): AsyncGenerator<Run, void, undefined> {
    return pages((cursor) => this.childrenPage(id, { limit: options.pageSize ?? 100, ...(cursor ? { cursor } : {}) }));
  }

  /** One page of the run's conversation, oldest first. */
  async messagesPage(id: string, options: { limit?: number; cursor?: string } = {}): Promise<MessagePage> {
    const run_id = runId(id);
    const query = { limit: options.limit ?? 50, ...(options.cursor ? { cursor: options.cursor } : {}) };
    return this.http.data({
      what: `GET /v1/runs/${run_id}/messages`,
      safe: true,
      send: (signal) =>
        this.http.api.GET("/v1/runs/{run_id}/messages", { params: { path: { run_id }, query }, signal }),
    });
  }

  /** The run's whole conversation, oldest first (each `message` can be sent back as
   * `history`). */
  messages(id: string, options: { pageSize?: number } = {}): AsyncGenerator<ConversationMessage, void, undefined> {
    return pages((cursor) => this.messagesPage(id, { limit: options.pageSize ?? 100, ...(cursor ? { cursor } : {}) }));
  }

  /** Where the run can be forked, oldest first (read off its log: nothing is written);
   * `fork(id, { at: c.seq })` starts from its first `c.seq` messages. */
  async checkpoints(id: string): Promise<Checkpoint[]> {
    const run_id = runId(id);
    const list: CheckpointList = await this.http.data({
      what: `GET /v1/runs/${run_id}/checkpoints`,
      safe: true,
      send: (signal) =>
        this.http.api.GET("/v1/runs/{run_id}/checkpoints", { params: { path: { run_id } }, signal }),
    });
    return list.data;
  }

  /** A new run from checkpoint `at` of the run (default: its start), its `forked_from`
   * naming both; nothing of the original is written. `patch.tool_results` replace
   * recorded results (or answer the calls a `tool_calls` checkpoint waits for),
   * `patch.append` adds messages, `overrides` replace fields of its configuration;
   * `mode: "replay"` answers its model calls from the recording until the first
   * difference (`on_divergence`: then `live` or `fail`). Retried safely, as `create` is.
   * `Conflict` `fork-split` (`toolCallId`) where a call would be parted from its result. */
  async fork(id: string, request: ForkRun = {}): Promise<Run> {
    const run_id = runId(id);
    const { idempotencyKey: key, ...fields } = request;
    const body = forkBody(fields) as never;
    const headers = { "Idempotency-Key": key ?? idempotencyKey() };
    return this.http.data({
      what: `POST /v1/runs/${run_id}/fork`,
      safe: true,
      send: (signal) =>
        this.http.api.POST("/v1/runs/{run_id}/fork", { params: { path: { run_id } }, body, headers, signal }),
    });
  }

  /** One page of the runs forked or replayed from the run (`forked_from` names it), oldest
   * first; a fork's own forks are listed on it. */
  async forksPage(id: string, options: { limit?: number; cursor?: string } = {}): Promise<RunPage> {
    const run_id = runId(id);
    const query = { limit: options.limit ?? 20, ...(options.cursor ? { cursor: options.cursor } : {}) };
    return this.http.data({
      what: `GET /v1/runs/${run_id}/forks`,
      safe: true,
      send: (signal) =>
        this.http.api.GET("/v1/runs/{run_id}/forks", { params: { path: { run_id }, query }, signal }),
    });
  }

  /** Every fork and replay of the run, oldest first. */
  forks(id: string, options: { pageSize?: number } = {}): AsyncGenerator<Run, void, undefined> {
    return pages((cursor) => this.forksPage(id, { limit: options.pageSize ?? 100, ...(cursor ? { cursor } : {}) }));
  }

  /** Cancel a run that has not ended (`Conflict` with `currentStatus` otherwise); retried
   * only when the request cannot have been processed. */
  async cancel(id: string): Promise<Run> {
    const run_id = runId(id);
    return this.http.data({
      what: `POST /v1/runs/${run_id}/cancel`,
      safe: false,
      send: (signal) => this.http.api.POST("/v1/runs/{run_id}/cancel", { params: { path: { run_id } }, signal }),
    });
  }

  /** Answer some or all pending tool calls (an identical re-send is a no-op, so this is
   * retried safely). */
  async submitToolOutputs(id: string, results: readonly ToolResult[]): Promise<SubmitOutcome> {
    const run_id = runId(id);
    const body = resultsBody(results) as never;
    return this.http.data({
      what: `POST /v1/runs/${run_id}/tool-results`,
      safe: true,
      send: (signal) =>
        this.http.api.POST("/v1/runs/{run_id}/tool-results", { params: { path: { run_id } }, body, signal }),
    });
  }

  /** `submitToolOutputs`, by its short name. */
  submit(id: string, results: readonly ToolResult[]): Promise<SubmitOutcome> {
    return this.submitToolOutputs(id, results);
  }

  /** Answer through a run's `callback_url` (it needs no API key; none is sent), retried like
   * `submitToolOutputs`. */
  async submitViaCallback(callbackUrl: string, results: readonly ToolResult[]): Promise<SubmitOutcome> {
    const match = /^(https?:\/\/.+?)\/v1\/callbacks\/([^/?#]+)\/tool-results$/.exec(callbackUrl);
    if (!match) throw new InvalidInput(`not a callback URL: ${JSON.stringify(callbackUrl)}`);
    const [, baseUrl, token] = match as unknown as [string, string, string];
    const body = resultsBody(results) as never;
    return this.http.data({
      what: "POST {callback_url}",
      safe: true,
      send: (signal) =>
        this.http.api.POST("/v1/callbacks/{token}/tool-results", {
          baseUrl,
          params: { path: { token: decodeURIComponent(token) } },
          headers: { Authorization: null as unknown as string },
          body,
          signal,
        }),
    });
  }

  /** Answer a parked invalid tool call: `action` is `retry` (`feedback`), `repair`
   * (`tool_name`), `skip` (`reason`), `fail` or `stop` (`reason`). */
  async resolve(
    id: string,
    action: "retry" | "repair" | "skip" | "fail" | "stop",
    fields: { feedback?: string; tool_name?: string; reason?: string } = {},
  ): Promise<Run> {
    const run_id = runId(id);
    const body = { action, ...fields } as never;
    return this.http.data({
      what: `POST /v1/runs/${run_id}/resolution`,
      safe: false,
      send: (signal) =>
        this.http.api.POST("/v1/runs/{run_id}/resolution", { params: { path: { run_id } }, body, signal }),
    });
  }

  /** Change a run's limits (those named are set, null removes one, the others are kept): a
   * run suspended on its budget is queued again. Needs `runs:operate`. */
  async raiseLimits(id: string, limits: RunLimits): Promise<Run> {
    const run_id = runId(id);
    return this.http.data({
      what: `POST /v1/runs/${run_id}/limits`,
      safe: true,
      send: (signal) =>
        this.http.api.POST("/v1/runs/{run_id}/limits", { params: { path: { run_id } }, body: limits as never, signal }),
    });
  }

  /** A signed token with which a browser reads this run's events, wait and messages, and
   * nothing else (`ttl`: seconds, 1 to 86400, default 900). Mint it in a backend. */
  async browserToken(id: string, options: { ttl?: number } = {}): Promise<BrowserToken> {
    const run_id = runId(id);
    const ttl = options.ttl ?? 900;
    if (!(ttl >= 1 && ttl <= 86400)) throw new InvalidInput(`ttl must be 1 s to 24 h, not ${ttl} s`);
    const body = { ttl_seconds: Math.round(ttl) };
    return this.http.data({
      what: `POST /v1/runs/${run_id}/browser-tokens`,
      safe: true,
      send: (signal) =>
        this.http.api.POST("/v1/runs/{run_id}/browser-tokens", { params: { path: { run_id } }, body, signal }),
    });
  }

  /** The event log as it is now (no waiting), after `after`. */
  async listEvents(id: string, options: { after?: number } = {}): Promise<Event[]> {
    const run_id = runId(id);
    const query = { after: options.after ?? 0 };
    const list = await this.http.data({
      what: `GET /v1/runs/${run_id}/events`,
      safe: true,
      send: (signal) =>
        this.http.api.GET("/v1/runs/{run_id}/events", {
          params: { path: { run_id }, query },
          headers: { Accept: "application/json" },
          signal,
        }),
    });
    return (list as { data: Event[] }).data;
  }

  /** The run's events after `after`, live until the run ends. A dropped connection, a read
   * that hears nothing for 60 s, a 503 while the database is away: each reconnects with
   * `Last-Event-ID` (the last `seq` seen), so the iteration has no gap and no duplicate. */
  events(id: string, options: { after?: number; signal?: AbortSignal } = {}): AsyncGenerator<Event, void, undefined> {
    return this.follow(runId(id), options.after ?? 0, undefined, options.signal);
  }

  /** The run once its status is one of `statuses` (default: suspended or ended) or it has
   * ended; `WaitTimeout` after `timeout` seconds. */
  async wait(id: string, options: { statuses?: Statuses; timeout?: number } = {}): Promise<Run> {
    return this.waiter(id, { timeout: options.timeout }).until(options.statuses);
  }

  /** Successive waits on one run within `timeout` seconds (or until the `now()`-clock
   * `deadline`). */
  waiter(id: string, options: { timeout?: number | undefined; deadline?: number | undefined } = {}): RunWaiter {
    const deadline = options.deadline ?? (options.timeout === undefined ? undefined : now() + options.timeout);
    return new RunWaiter(this.http, runId(id), deadline);
  }

  /** @internal The live event stream, from `after`, until the run's terminal event (or
   * `deadline`: `DeadlineReached`). */
  async *follow(
    run_id: string,
    after: number,
    deadline: number | undefined,
    signal?: AbortSignal,
  ): AsyncGenerator<Event, void, undefined> {
    const retry = this.http.retry;
    let attempt = 0;
    let started = now();
    for (;;) {
      signal?.throwIfAborted();
      const headers: Record<string, string> = { Accept: "text/event-stream" };
      if (after) headers["Last-Event-ID"] = String(after);
      const controller = new AbortController();
      const abort = (): void => controller.abort(signal?.reason);
      signal?.addEventListener("abort", abort, { once: true });
      let timer: ReturnType<typeof setTimeout> | undefined;
      const arm = (): void => {
        clearTimeout(timer);
        let read = STREAM_READ_TIMEOUT;
        if (deadline !== undefined) read = Math.max(0.001, Math.min(read, deadline - now()));
        timer = setTimeout(() => controller.abort(new DeadlineReached("no event")), read * 1000);
      };
      let delay: number | undefined;
      let got = false;
      try {
        arm();
        const { data: body, error, response } = await this.http.api.GET("/v1/runs/{run_id}/events", {
          params: { path: { run_id } },
          headers,
          parseAs: "stream",
          signal: controller.signal,
        });
        if (!response.ok) {
          if (retryableStatus(response.status, true)) {
            delay = retry.delay(attempt, now() - started, retryAfterOf(response));
          }
          if (delay === undefined) throw problemError(response, error);
        } else if (body) {
          const decoder = new SSEDecoder();
          for await (const line of lines(body as ReadableStream<Uint8Array>, arm)) {
            const event = decoder.feed(line);
            if (deadline !== undefined && now() >= deadline) throw new DeadlineReached("deadline");
            if (event === undefined || event.seq <= after) continue;
            got = true;
            after = event.seq;
            attempt = 0;
            started = now();
            yield event;
            if (TERMINAL_EVENTS.includes(event.type)) return;
            signal?.throwIfAborted();
          }
        }
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (deadline !== undefined && now() >= deadline) throw new DeadlineReached("deadline");
        if (error instanceof Error && isOwn(error)) throw error;
        delay = retry.delay(attempt, now() - started);
        if (delay === undefined) {
          throw new APIConnectionError(`GET /v1/runs/${run_id}/events (stream): ${describe(error)}`, { cause: error });
        }
      } finally {
        clearTimeout(timer);
        signal?.removeEventListener("abort", abort);
        controller.abort();
      }
      if (delay === undefined && !got) {
        // The server ended the stream having sent nothing: is the run over?
        if (isTerminal(await this.get(run_id))) return;
        delay = retry.delay(attempt, now() - started) ?? retry.maxDelay; // a live run is followed
      }
      if (delay) {
        if (deadline !== undefined) delay = Math.min(delay, Math.max(0, deadline - now()));
        await sleep(delay, signal);
      }
      if (!got) attempt += 1;
    }
  }
}

/** Errors of this client that end a stream (a refusal), as opposed to a lost connection. */
function isOwn(error: Error): boolean {
  return "problem" in error || error instanceof InvalidInput || error instanceof SyntaxError;
}

export function resultsBody(results: readonly ToolResult[]): { results: ToolResult[] } {
  return {
    results: results.map((r) => {
      const item: ToolResult = { tool_call_id: r.tool_call_id, output: r.output ?? null };
      if (r.is_error) item.is_error = true;
      return item;
    }),
  };
}

/** Waits for one run's statuses, one wait after another: each wait is the API's long
 * poll, `GET /v1/runs/{id}/wait`, asked again whenever the server's hold (at most 60 s)
 * ends first; nothing polls. */
export class RunWaiter {
  /** The run as last read. */
  run: Run | undefined;

  constructor(
    private readonly http: Transport,
    readonly runId: string,
    readonly deadline: number | undefined,
  ) {}

  /** The run once its status is one of `statuses` (default: suspended or ended) or it has
   * ended (`WaitTimeout` at the deadline). */
  async until(statuses?: Statuses): Promise<Run> {
    const wanted = statusesOf(statuses);
    const status = [...new Set([...wanted, ...TERMINAL])].sort() as RunStatus[];
    const run_id = this.runId;
    for (;;) {
      const left = this.deadline === undefined ? MAX_WAIT_SECONDS : this.deadline - now();
      const seconds = Math.max(0, Math.min(MAX_WAIT_SECONDS, left));
      let run: Run;
      try {
        run = (
          await this.http.request(
            {
              what: `GET /v1/runs/${run_id}/wait`,
              safe: true,
              timeout: seconds + WAIT_READ_MARGIN,
              send: (signal) => {
                // Made for each attempt: a retry asks the server to hold it for the time left.
                const rest = this.deadline === undefined ? MAX_WAIT_SECONDS : this.deadline - now();
                const hold = Math.max(0, Math.min(MAX_WAIT_SECONDS, rest)).toFixed(3);
                return this.http.api.GET("/v1/runs/{run_id}/wait", {
                  params: { path: { run_id }, query: { status, timeout: Number(hold) } },
                  signal,
                });
              },
            },
            this.deadline,
          )
        ).data;
      } catch (error) {
        if (error instanceof DeadlineReached) {
          const seen = this.run ? `still ${this.run.status}` : "not read";
          throw new WaitTimeout(`run ${run_id} is ${seen}; ${error.message}`, this.run);
        }
        throw error;
      }
      this.run = run;
      if (wanted.includes(run.status) || isTerminal(run)) return run;
      if (this.deadline !== undefined && now() >= this.deadline) {
        throw new WaitTimeout(`run ${run_id} is still ${run.status}`, run);
      }
    }
  }
}

export { TERMINAL };
