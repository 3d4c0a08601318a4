// `client.approvals`: the gated tool calls waiting for a person's decision, and the
// decisions (`POST /v1/runs/{id}/approvals`). A decision names the arguments hash it saw
// (`Conflict` `approval-stale` otherwise); the same decision again is a no-op, so decisions
// are retried safely; another one on a decided call is `Conflict` `approval-conflict`.

import { InvalidInput } from "./errors.js";
import type { Transport } from "./http.js";
import { runId } from "./runs.js";
import type { Approval, ApprovalCall, ApprovalPage, Decision, Run } from "./types.js";

/** What an `onApproval` callback answers for one gated call. */
export type ApprovalAnswer =
  | { approve: true; arguments?: Record<string, unknown> }
  | { reject: string }
  | undefined
  | null;

/** Approve the call (with `args`, the executor runs these instead of the model's). */
export function approve(args?: Record<string, unknown>): ApprovalAnswer {
  return args === undefined ? { approve: true } : { approve: true, arguments: args };
}

/** Reject the call: the model gets `message` as its error result. */
export function reject(message: string): ApprovalAnswer {
  return { reject: message };
}

export function decision(
  call: { id: string; arguments_hash: string; position?: number | null },
  answer: NonNullable<ApprovalAnswer>,
): Decision {
  if (!call.id) throw new InvalidInput("a decision needs the tool call's id");
  if (!call.arguments_hash) throw new InvalidInput(`a decision on ${call.id} needs the arguments hash it saw`);
  const item: Decision = { tool_call_id: call.id, arguments_hash: call.arguments_hash, action: "approve" };
  if (call.position !== undefined && call.position !== null) item.position = call.position;
  if ("reject" in answer) {
    if (typeof answer.reject !== "string") throw new InvalidInput("a rejection's message is text");
    return { ...item, action: "reject", message: answer.reject };
  }
  if (answer.arguments !== undefined) item.arguments = answer.arguments as never;
  return item;
}

export type OnApproval = (call: ApprovalCall & { runId: string }) => ApprovalAnswer | Promise<ApprovalAnswer>;

export class Approvals {
  constructor(private readonly http: Transport) {}

  /** One page of the pending approvals across the tenant's runs, newest first. */
  async listPage(options: { limit?: number; cursor?: string } = {}): Promise<ApprovalPage> {
    const query = { limit: options.limit ?? 20, ...(options.cursor ? { cursor: options.cursor } : {}) };
    return this.http.data({
      what: "GET /v1/approvals",
      safe: true,
      send: (signal) => this.http.api.GET("/v1/approvals", { params: { query }, signal }),
    });
  }

  /** Every pending approval, newest first, fetching pages as the iteration goes. */
  async *list(options: { pageSize?: number } = {}): AsyncGenerator<Approval, void, undefined> {
    let cursor: string | undefined;
    for (;;) {
      const page = await this.listPage({ limit: options.pageSize ?? 100, ...(cursor ? { cursor } : {}) });
      yield* page.data;
      if (!page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }

  /** The run's gated calls, pending and decided, in order. */
  async get(id: string): Promise<Approval[]> {
    const run_id = runId(id);
    const page = await this.http.data({
      what: `GET /v1/runs/${run_id}/approvals`,
      safe: true,
      send: (signal) => this.http.api.GET("/v1/runs/{run_id}/approvals", { params: { path: { run_id } }, signal }),
    });
    return page.data;
  }

  /** Several decisions (the API's items) in one request. */
  async decide(id: string, decisions: readonly Decision[]): Promise<Run> {
    const run_id = runId(id);
    if (!decisions.length) throw new InvalidInput("no decision to send");
    const body = { decisions: [...decisions] } as never;
    return this.http.data({
      what: `POST /v1/runs/${run_id}/approvals`,
      safe: true,
      send: (signal) => this.http.api.POST("/v1/runs/{run_id}/approvals", { params: { path: { run_id } }, body, signal }),
    });
  }

  /** Approve a gated call: executors get it (with `arguments`, those instead of the
   * model's). `position` is needed only when two calls of the round share `callId`. */
  approve(
    id: string,
    callId: string,
    argumentsHash: string,
    options: { arguments?: Record<string, unknown>; position?: number } = {},
  ): Promise<Run> {
    const call = { id: callId, arguments_hash: argumentsHash, position: options.position ?? null };
    return this.decide(id, [decision(call, approve(options.arguments) as NonNullable<ApprovalAnswer>)]);
  }

  /** Reject a gated call: the model receives `message` as its error result. */
  reject(id: string, callId: string, argumentsHash: string, message: string, options: { position?: number } = {}): Promise<Run> {
    const call = { id: callId, arguments_hash: argumentsHash, position: options.position ?? null };
    return this.decide(id, [decision(call, { reject: message })]);
  }
}
