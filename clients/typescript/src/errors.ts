// Typed errors, built from the service's RFC 9457 problem documents. Every refusal of the
// API is `application/problem+json` with a stable `type` (`/problems/<code>`); each type
// has one HTTP status, and the class follows it (as the Python client's exceptions do),
// so `instanceof NotFound` catches an unknown run and a stale callback token alike.

import type { Run } from "./types.js";

/** The base of every error this client throws. */
export class AgentrunError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Refused by the client before anything was sent: a malformed run id or agent name, an
 * unknown status, a value JSON cannot carry (NaN, an infinity, a lone surrogate). */
export class InvalidInput extends AgentrunError {}

/** The service could not be reached (after the retries the budget allowed). */
export class APIConnectionError extends AgentrunError {}

/** A request timed out (after the retries the budget allowed). */
export class APITimeoutError extends APIConnectionError {}

/** `wait` (or `run`) gave up before the run reached a status it waited for; `run` is the
 * run as last seen (undefined when it was never read). */
export class WaitTimeout extends AgentrunError {
  readonly run: Run | undefined;
  constructor(message: string, run: Run | undefined) {
    super(message);
    this.run = run;
  }
}

/** An RFC 9457 problem document as the service writes it; extra members vary by type. */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  instance?: string;
  [member: string]: unknown;
}

/** One item of a 422 problem's `errors`: where (`loc`, e.g. `["body", "prompt"]`) and what. */
export interface FieldError {
  loc: (string | number)[];
  msg: string;
  type?: string;
}

/** A problem document the API answered with: `status`, `code` (the last part of `type`),
 * `title`, `detail`, `instance`, the whole `problem`, and the `response`. */
export class ProblemError extends AgentrunError {
  readonly status: number;
  readonly problem: Problem;
  readonly type: string;
  readonly code: string;
  readonly title: string;
  readonly detail: string;
  readonly instance: string | undefined;
  readonly response: Response;

  constructor(response: Response, problem: Problem) {
    const type = typeof problem.type === "string" ? problem.type : "about:blank";
    const code = type.startsWith("/problems/") ? type.slice("/problems/".length) : "";
    const detail = typeof problem.detail === "string" ? problem.detail : "";
    const title = typeof problem.title === "string" ? problem.title : response.statusText;
    super(`${response.status} ${code || title}: ${detail}`);
    this.status = response.status;
    this.problem = problem;
    this.type = type;
    this.code = code;
    this.title = title;
    this.detail = detail;
    this.instance = typeof problem.instance === "string" ? problem.instance : undefined;
    this.response = response;
  }
}

/** 400 `malformed-json`. */
export class BadRequest extends ProblemError {}
/** 401 `unauthorized`, `browser-token-invalid`. */
export class Unauthorized extends ProblemError {}
/** 403 `forbidden`: the key's role (or a browser token) lacks the permission. */
export class Forbidden extends ProblemError {
  get permission(): string | undefined {
    return typeof this.problem.permission === "string" ? this.problem.permission : undefined;
  }
}
/** 404 `run-not-found`, `agent-not-found`, `callback-token-invalid`, `not-found`, ... */
export class NotFound extends ProblemError {}
/** 409 `run-state-conflict` (`currentStatus`), `tool-result-conflict`, `agent-exists`,
 * `approval-stale`, `approval-conflict`, `idempotency-in-flight`, `fork-split`
 * (`toolCallId`), ... */
export class Conflict extends ProblemError {
  /** The status the run is in (`run-state-conflict`). */
  get currentStatus(): string | undefined {
    const value = this.problem.current_status;
    return typeof value === "string" ? value : undefined;
  }

  /** The tool call a fork would part from its result (`fork-split`). */
  get toolCallId(): string | undefined {
    const value = this.problem.tool_call_id;
    return typeof value === "string" ? value : undefined;
  }
}
/** 413 `payload-too-large`. */
export class PayloadTooLarge extends ProblemError {}
/** 422 `validation-error`, `invalid-request`, `idempotency-key-reused`,
 * `tool-call-not-pending`; `errors` names the fields. */
export class ValidationError extends ProblemError {
  get errors(): FieldError[] {
    const items = this.problem.errors;
    return Array.isArray(items) ? (items as FieldError[]) : [];
  }
}
/** 429 `too-many-failed-authentications`; `retryAfter` in seconds. */
export class RateLimited extends ProblemError {
  get retryAfter(): number | undefined {
    return retryAfterOf(this.response);
  }
}
/** 503 `service-unavailable`: the database is away; `retryAfter` in seconds. */
export class Unavailable extends ProblemError {
  get retryAfter(): number | undefined {
    return retryAfterOf(this.response);
  }
}
/** Any other 5xx. */
export class ServerError extends ProblemError {}

const BY_STATUS: Record<number, typeof ProblemError> = {
  400: BadRequest,
  401: Unauthorized,
  403: Forbidden,
  404: NotFound,
  409: Conflict,
  413: PayloadTooLarge,
  422: ValidationError,
  429: RateLimited,
  503: Unavailable,
};

/** `Retry-After` in seconds (delta-seconds only; an HTTP date is ignored). */
export function retryAfterOf(response: Response): number | undefined {
  const value = response.headers.get("retry-after");
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

/** The error for a refused response, given its body as openapi-fetch read it (the parsed
 * problem document, or text). */
export function problemError(response: Response, body: unknown): ProblemError {
  let problem: Problem;
  if (body !== null && typeof body === "object" && !Array.isArray(body)) {
    problem = { ...(body as Problem) };
  } else {
    problem = { detail: typeof body === "string" ? body.slice(0, 500) : String(body ?? "") };
  }
  problem.status ??= response.status;
  problem.title ??= response.statusText;
  const cls = BY_STATUS[response.status] ?? (response.status >= 500 ? ServerError : ProblemError);
  return new cls(response, problem);
}
