// The retry policy, the same as the Python client's (client/agentrun_client/_base.py
// `RetryPolicy`, docs/client.md "Retries"): safe calls are retried on connection errors,
// timeouts, 429, 502, 503 and 504; other calls only when the request cannot have been
// processed (the connection was never made, or 429). All durations are seconds.

export interface RetryOptions {
  /** Retries at most (default 20; 0 turns retries off). */
  maxRetries?: number;
  /** No retry starts later than this many seconds after the first failure (default 15). */
  maxElapsed?: number;
  /** The first delay's ceiling, doubled each retry (default 0.25 s). */
  baseDelay?: number;
  /** The largest delay's ceiling (default 2 s). */
  maxDelay?: number;
  /** A source of numbers in [0, 1) for the jitter (default `Math.random`). */
  random?: () => number;
}

export class RetryPolicy {
  readonly maxRetries: number;
  readonly maxElapsed: number;
  readonly baseDelay: number;
  readonly maxDelay: number;
  private readonly random: () => number;

  constructor(options: RetryOptions = {}) {
    this.maxRetries = options.maxRetries ?? 20;
    this.maxElapsed = options.maxElapsed ?? 15;
    this.baseDelay = options.baseDelay ?? 0.25;
    this.maxDelay = options.maxDelay ?? 2;
    this.random = options.random ?? Math.random;
  }

  /** The jittered delay before retry number `attempt + 1`: between half its ceiling and
   * the ceiling, which doubles from `baseDelay` up to `maxDelay`. */
  backoff(attempt: number): number {
    const ceiling = Math.min(this.maxDelay, this.baseDelay * 2 ** attempt);
    return ceiling / 2 + this.random() * (ceiling / 2);
  }

  /** Seconds to wait before retry number `attempt + 1`, `elapsed` seconds after the first
   * failure (the server's `Retry-After` when it gave one); undefined once the budget is
   * spent. */
  delay(attempt: number, elapsed: number, retryAfter?: number): number | undefined {
    if (attempt >= this.maxRetries) return undefined;
    const wait = retryAfter ?? this.backoff(attempt);
    if (elapsed + wait > this.maxElapsed) return undefined;
    return wait;
  }
}

/** Statuses a safe call is retried on; an unsafe one only on 429. */
const RETRY_STATUSES_SAFE = new Set([429, 502, 503, 504]);

export function retryableStatus(status: number, safe: boolean): boolean {
  return safe ? RETRY_STATUSES_SAFE.has(status) : status === 429;
}

/** Error codes of a connection never made (Node's fetch puts them on `cause`): always
 * safe to retry, whatever the call. */
const NEVER_CONNECTED = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

export function neverConnected(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== null && typeof current === "object"; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && NEVER_CONNECTED.has(code)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** Seconds on a monotonic clock. */
export function now(): number {
  return performance.now() / 1000;
}

/** Resolves after `seconds`, or rejects with the signal's reason once it aborts. */
export function sleep(seconds: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(0, seconds * 1000));
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
