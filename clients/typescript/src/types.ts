// The API's bodies under the client's names: aliases of the types generated from the
// service's OpenAPI document (src/generated/api.ts), plus the options the hand layer takes.

import type { components } from "./generated/api.js";

type Schemas = components["schemas"];

export type Run = Schemas["RunOut"];
export type RunStatus = Schemas["RunStatus"];
export type RunPage = Schemas["RunList"];
export type RunCreate = Schemas["RunCreate"];
export type ModelSpec = Schemas["ModelSpec"];
export type ToolDefinition = Schemas["ToolDef"];
export type ToolCall = Schemas["ToolCallOut"];
export type SubmitToolResults = Schemas["SubmitToolResults"];
export type ApproveToolCalls = Schemas["ApproveToolCalls"];
export type ResolveInvalidToolCall = Schemas["ResolveInvalidToolCall"];
export type RaiseLimits = Schemas["RaiseLimits"];
export type ApprovalCall = Schemas["ApprovalItem"];
export type Approval = Schemas["ApprovalOut"];
export type ApprovalPage = Schemas["ApprovalList"];
export type Decision = Schemas["DecisionIn"];
export type Agent = Schemas["AgentOut"];
export type AgentPage = Schemas["AgentList"];
export type Event = Schemas["EventOut"];
export type ConversationMessage = Schemas["ConversationMessageOut"];
export type MessagePage = Schemas["MessageList"];
export type BrowserToken = Schemas["BrowserTokenOut"];
export type SubmitOutcome = Schemas["ToolResultsOut"];
export type Usage = Schemas["UsageOut"];
export type RunLimits = Schemas["RunLimits"];
export type Checkpoint = Schemas["CheckpointOut"];
export type CheckpointList = Schemas["CheckpointList"];
export type ForkIn = Schemas["ForkIn"];
export type ForkPatch = Schemas["ForkPatch"];
/** The run and checkpoint a fork was made from (`Run.forked_from`). */
export type ForkedFrom = NonNullable<Run["forked_from"]>;

/** One answer to a tool call, as submitted (`isError` may also be written `is_error`). */
export interface ToolResult {
  tool_call_id: string;
  output: unknown;
  is_error?: boolean;
}

/** The optional fields of `POST /v1/runs` (docs/reference.md, "Creating a run"), as the
 * API names them; `webhook` may be a URL string. */
export type RunOptions = Omit<RunCreate, "prompt" | "model" | "tools" | "webhook"> & {
  webhook?: string | { url: string } | null;
};

/** The fields of a named agent's runs besides `name`, `description` and `model`. */
export type AgentFields = Omit<Schemas["AgentIn"], "name" | "description" | "model" | "tools"> & {
  webhook?: string | { url: string } | null;
};

/** The statuses a run never leaves. */
export const TERMINAL: readonly RunStatus[] = ["completed", "failed", "cancelled", "expired"];
/** What `wait` waits for unless told: suspended or ended. */
export const SUSPENDED_OR_FINISHED: readonly RunStatus[] = ["requires_action", ...TERMINAL];
/** Every status, in the order of a run's life. */
export const RUN_STATUSES: readonly RunStatus[] = ["queued", "running", ...SUSPENDED_OR_FINISHED];
/** The events that end a run's live stream. */
export const TERMINAL_EVENTS: readonly string[] = [
  "run.completed",
  "run.failed",
  "run.cancelled",
  "run.expired",
];

export function isTerminal(run: { status: RunStatus }): boolean {
  return TERMINAL.includes(run.status);
}

/** The tool calls of a suspended run that still wait for a result (gated calls are not
 * among them until approved). */
export function pendingToolCalls(run: Run): ToolCall[] {
  const action = run.required_action;
  if (action && (action.type === "submit_tool_results" || action.type === "approve_tool_calls")) {
    return action.tool_calls.filter((c) => !c.answered);
  }
  return [];
}

/** The gated tool calls of a run that wait for a decision. */
export function pendingApprovals(run: Run): ApprovalCall[] {
  const action = run.required_action;
  return action?.type === "approve_tool_calls" ? [...action.approvals] : [];
}
