// @agentrun/client: the TypeScript client of agentrun-service (docs/client-typescript.md).

export { AgentrunClient, type RunRequest } from "./client.js";
export { type ClientOptions, type FetchLike, DEFAULT_BASE_URL } from "./http.js";
export { RetryPolicy, type RetryOptions } from "./retry.js";
export { type CreateRun, type ForkRun, RunWaiter, Runs, type Statuses } from "./runs.js";
export { type AgentBody, Agents } from "./agents.js";
export { type ApprovalAnswer, Approvals, type OnApproval, approve, reject } from "./approvals.js";
export type { ExecuteOptions } from "./executor.js";
export {
  type CallLike,
  type JSONSchema,
  type RegistryOptions,
  type StandardSchemaLike,
  Tool,
  type ToolContext,
  ToolRegistry,
  type ToolSpec,
  type Tools,
  tool,
} from "./tools.js";
export {
  APIConnectionError,
  APITimeoutError,
  AgentrunError,
  BadRequest,
  Conflict,
  type FieldError,
  Forbidden,
  InvalidInput,
  NotFound,
  PayloadTooLarge,
  type Problem,
  ProblemError,
  RateLimited,
  ServerError,
  Unauthorized,
  Unavailable,
  ValidationError,
  WaitTimeout,
} from "./errors.js";
export * from "./types.js";
export type { components, operations, paths } from "./generated/api.js";
