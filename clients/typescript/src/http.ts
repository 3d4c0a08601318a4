// The request layer: openapi-fetch's client typed by the generated `paths`, and the retry
// loop every call goes through (safe calls retried within the policy, refusals thrown as
// their `ProblemError`, timeouts and connection failures as `APIConnectionError`).

import createClient, { type Client } from "openapi-fetch";
import {
  APIConnectionError,
  APITimeoutError,
  AgentrunError,
  InvalidInput,
  problemError,
  retryAfterOf,
} from "./errors.js";
import type { paths } from "./generated/api.js";
import { RetryPolicy, type RetryOptions, neverConnected, now, retryableStatus, sleep } from "./retry.js";

export const DEFAULT_BASE_URL = "http://127.0.0.1:8000";

/** A `fetch`: the platform's, or a wrapper of it (tests, proxies, instrumentation). */
export type FetchLike = (input: Request) => Promise<Response>;

export interface ClientOptions {
  /** Default: `AGENTRUN_BASE_URL` in Node, else the page's origin in a browser, else
   * http://127.0.0.1:8000. */
  baseUrl?: string;
  /** Sent as `Authorization: Bearer …`. Default: `AGENTRUN_API_KEY` in Node. */
  apiKey?: string;
  /** A browser token for one run (`runs.browserToken`): reads its events, wait and
   * messages, nothing else. Instead of `apiKey`. */
  browserToken?: string;
  /** The `fetch` requests go through (default: `globalThis.fetch`). */
  fetch?: FetchLike;
  /** Retries of safe calls (a `RetryPolicy`, or its options). */
  retry?: RetryPolicy | RetryOptions;
  /** Seconds each request may take (default 30; event streams and long polls: their own). */
  timeout?: number;
  /** Extra headers for every request. */
  headers?: Record<string, string>;
}

/** One API request as the retry loop sends it: `send` makes the request anew for each
 * attempt (openapi-fetch's `{data, error, response}`). */
export interface Attempt<D> {
  what: string;
  safe: boolean;
  send: (signal: AbortSignal) => Promise<{ data?: D; error?: unknown; response: Response }>;
  /** Seconds this request may take instead of the client's `timeout`. */
  timeout?: number;
}

/** Internal: a retry would wait past the caller's deadline. */
export class DeadlineReached extends AgentrunError {}

interface EnvLike {
  process?: { env?: Record<string, string | undefined> };
  location?: { origin?: string };
}

function env(name: string): string | undefined {
  return (globalThis as EnvLike).process?.env?.[name] || undefined;
}

/** The base URL and the credential a client uses, from its options or the environment. */
export function settings(options: ClientOptions): { baseUrl: string; bearer: string | undefined } {
  if (options.apiKey && options.browserToken) {
    throw new InvalidInput("give apiKey or browserToken, not both");
  }
  let origin: string | undefined;
  try {
    origin = (globalThis as EnvLike).location?.origin;
  } catch {
    origin = undefined; // (Deno without --location throws)
  }
  const baseUrl =
    options.baseUrl ??
    env("AGENTRUN_BASE_URL") ??
    (origin && origin !== "null" ? origin : undefined) ??
    DEFAULT_BASE_URL;
  const bearer = options.browserToken ?? options.apiKey ?? env("AGENTRUN_API_KEY");
  return { baseUrl: baseUrl.replace(/\/+$/, ""), bearer };
}

export class Transport {
  readonly baseUrl: string;
  readonly retry: RetryPolicy;
  readonly timeout: number;
  /** @internal The generated request layer (openapi-fetch over `paths`). */
  readonly api: Client<paths>;

  constructor(options: ClientOptions) {
    const { baseUrl, bearer } = settings(options);
    this.baseUrl = baseUrl;
    this.retry = options.retry instanceof RetryPolicy ? options.retry : new RetryPolicy(options.retry);
    this.timeout = options.timeout ?? 30;
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (bearer) headers.Authorization = `Bearer ${bearer}`;
    const fetcher = options.fetch ?? ((request: Request) => globalThis.fetch(request));
    this.api = createClient<paths>({ baseUrl, headers, fetch: fetcher });
  }

  /** Send `attempt`, retrying within the policy; the response's data, or the refusal's
   * `ProblemError`. No retry waits past the `now()` `deadline`: at it, `DeadlineReached`. */
  async request<D>(attempt: Attempt<D>, deadline?: number): Promise<{ data: D; response: Response }> {
    let failed = 0; // when the first attempt failed: the retry budget counts from there
    for (let tries = 0; ; tries++) {
      const timeout = attempt.timeout ?? this.timeout;
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(new APITimeoutError("timed out")), timeout * 1000);
      let delay: number | undefined;
      let cause: string;
      try {
        const result = await attempt.send(controller.signal);
        const response = result.response;
        if (response.ok) return { data: result.data as D, response };
        failed ||= now();
        if (retryableStatus(response.status, attempt.safe)) {
          delay = this.retry.delay(tries, now() - failed, retryAfterOf(response));
        }
        if (delay === undefined) throw problemError(response, result.error);
        cause = `${attempt.what}: ${response.status}`;
      } catch (error) {
        if (error instanceof AgentrunError && !(error instanceof APITimeoutError)) throw error;
        failed ||= now();
        const timedOut = controller.signal.aborted;
        if (attempt.safe || (!timedOut && neverConnected(error))) {
          delay = this.retry.delay(tries, now() - failed);
        }
        cause = `${attempt.what}: ${timedOut ? `no answer within ${timeout} s` : describe(error)}`;
        if (delay === undefined) {
          const Kind = timedOut ? APITimeoutError : APIConnectionError;
          throw new Kind(cause, { cause: error });
        }
      } finally {
        clearTimeout(timer);
      }
      if (deadline !== undefined && now() + delay >= deadline) {
        await sleep(Math.max(0, deadline - now()));
        throw new DeadlineReached(cause);
      }
      await sleep(delay);
    }
  }

  /** `request`, for the data alone. */
  async data<D>(attempt: Attempt<D>): Promise<D> {
    return (await this.request(attempt)).data;
  }
}

export function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    const inner = cause instanceof Error ? ` (${cause.message})` : "";
    return `${error.name}: ${error.message}${inner}`;
  }
  return String(error);
}

/** A random `Idempotency-Key` for a create (crypto.randomUUID where the platform has it). */
export function idempotencyKey(): string {
  const c = (globalThis as { crypto?: Crypto }).crypto;
  if (c && typeof c.randomUUID === "function") return `agentrun-client-${c.randomUUID()}`;
  const bytes = new Uint8Array(16);
  if (c) c.getRandomValues(bytes);
  else for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(Math.random() * 256);
  return `agentrun-client-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}
