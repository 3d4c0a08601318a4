// Plain async functions served as tools, whatever executes them (the inline executor of
// `client.run`, the webhook executor): each executor hands the registry the pending calls
// and submits the results it gets back. A tool's JSON Schema is given, or derived from a
// zod schema (any Standard Schema that converts to JSON Schema), which then also checks
// the arguments before the function is called. Invalid arguments, an unknown tool, a
// throw, a timeout or an output the service would refuse each become an error result
// (`is_error: true`) telling the model what went wrong: a bad call costs a turn, not the run.

import type { ToolDefinition, ToolResult } from "./types.js";

export type JSONSchema = Record<string, unknown>;

/** A Standard Schema (zod 4, valibot, arktype, …): what a tool's `parameters` may be
 * instead of JSON Schema. Its JSON Schema comes from `~standard.jsonSchema` (Standard JSON
 * Schema; zod 4.2 and later) or a `toJSONSchema()` method. */
export interface StandardSchemaLike<Output = unknown> {
  readonly "~standard": {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => StandardResult<Output> | Promise<StandardResult<Output>>;
    readonly types?: { readonly input: unknown; readonly output: Output } | undefined;
    readonly jsonSchema?: { readonly input: (options: { target: string }) => Record<string, unknown> };
  };
}

type StandardResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<{ readonly message: string; readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined }> };

/** What a tool function receives besides its arguments. `callId` is the same across
 * redeliveries and retries of one call: use it as the idempotency key of side effects.
 * `signal` aborts when the call times out. */
export interface ToolContext {
  runId: string;
  callId: string;
  toolName: string;
  attempt: number;
  signal: AbortSignal;
}

/** A tool: its name, description and parameters (JSON Schema, or a zod schema whose
 * parsed output the function gets), and the function. */
export interface ToolSpec<Args = any> {
  name?: string;
  description?: string;
  parameters?: JSONSchema | StandardSchemaLike<Args>;
  execute: (args: Args, context: ToolContext) => unknown;
  /** Seconds a call may take (default: the registry's; none). */
  timeout?: number;
  /** Calls of this tool running at once, at most. */
  maxConcurrency?: number;
  /** The tool's approval policy (`"never"`, `"always"`, `{when: <JSON Schema>}`). */
  approval?: ToolDefinition["approval"];
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export function isStandardSchema(value: unknown): value is StandardSchemaLike {
  const std = (value as { "~standard"?: { validate?: unknown } } | null)?.["~standard"];
  return typeof std === "object" && std !== null && typeof std.validate === "function";
}

function jsonSchemaOf(schema: StandardSchemaLike, name: string): JSONSchema {
  const std = schema["~standard"];
  let out: JSONSchema | undefined;
  if (std.jsonSchema) out = std.jsonSchema.input({ target: "draft-2020-12" });
  else if (typeof (schema as { toJSONSchema?: unknown }).toJSONSchema === "function") {
    out = (schema as unknown as { toJSONSchema: () => JSONSchema }).toJSONSchema();
  }
  if (!out) {
    throw new TypeError(
      `tool ${JSON.stringify(name)}: its ${std.vendor} schema has no JSON Schema; give parameters as JSON Schema`,
    );
  }
  const { $schema: _ignored, ...rest } = out;
  return rest;
}

/** At most `n` holders at a time (none: no limit). */
class Limit {
  private active = 0;
  private readonly queue: (() => void)[] = [];
  constructor(private readonly n?: number) {
    if (n !== undefined && !(n >= 1)) throw new RangeError("a concurrency limit must be at least 1");
  }
  async hold<T>(fn: () => Promise<T>): Promise<T> {
    if (this.n === undefined) return fn();
    if (this.active >= this.n) await new Promise<void>((resolve) => this.queue.push(resolve));
    this.active++;
    try {
      return await fn();
    } finally {
      this.active--;
      this.queue.shift()?.();
    }
  }
}

export class Tool<Args = any> {
  readonly name: string;
  readonly description: string;
  /** The JSON Schema sent to the service. */
  readonly parameters: JSONSchema;
  readonly timeout: number | undefined;
  readonly approval: ToolDefinition["approval"];
  private readonly schema: StandardSchemaLike<Args> | undefined;
  private readonly fn: (args: Args, context: ToolContext) => unknown;
  private readonly limit: Limit;

  constructor(spec: ToolSpec<Args> & { name: string }) {
    if (!TOOL_NAME.test(spec.name)) {
      throw new TypeError(`tool names are 1-64 of [a-zA-Z0-9_-]: ${JSON.stringify(spec.name)}`);
    }
    if (typeof spec.execute !== "function") throw new TypeError(`tool ${spec.name}: execute is not a function`);
    this.name = spec.name;
    this.description = spec.description ?? "";
    this.timeout = spec.timeout;
    this.approval = spec.approval;
    this.fn = spec.execute;
    this.limit = new Limit(spec.maxConcurrency);
    if (isStandardSchema(spec.parameters)) {
      this.schema = spec.parameters;
      this.parameters = jsonSchemaOf(spec.parameters, spec.name);
    } else {
      this.parameters = (spec.parameters as JSONSchema | undefined) ?? { type: "object" };
    }
  }

  /** The tool as `POST /v1/runs` takes it. */
  definition(): ToolDefinition {
    const out: ToolDefinition = { name: this.name, description: this.description, parameters: this.parameters as never };
    if (this.approval !== undefined) out.approval = this.approval;
    return out;
  }

  /** Check the arguments, call the function (within `timeout` seconds), and make the
   * outcome a result; errors are results, never thrown. */
  async call(raw: unknown, context: Omit<ToolContext, "signal">, timeout = this.timeout): Promise<ToolResult> {
    const error = (text: string): ToolResult => ({ tool_call_id: context.callId, output: text, is_error: true });
    let args: unknown;
    try {
      args = typeof raw === "string" ? (raw.trim() ? JSON.parse(raw) : {}) : (raw ?? {});
    } catch (e) {
      return error(`Invalid arguments for tool '${this.name}': the arguments are not JSON (${(e as Error).message})`);
    }
    if (args === null || typeof args !== "object" || Array.isArray(args)) {
      return error(`Invalid arguments for tool '${this.name}': the arguments are not a JSON object`);
    }
    if (this.schema) {
      const checked = await this.schema["~standard"].validate(args);
      if (checked.issues) return error(`Invalid arguments for tool '${this.name}': ${explain(checked.issues)}`);
      args = checked.value;
    }
    return this.limit.hold(async () => {
      const controller = new AbortController();
      let timer: ReturnType<typeof setTimeout> | undefined;
      try {
        const running = Promise.resolve().then(() => this.fn(args as Args, { ...context, signal: controller.signal }));
        let value: unknown;
        if (timeout === undefined) value = await running;
        else {
          const expired = new Promise<typeof TIMED_OUT>((resolve) => {
            timer = setTimeout(() => resolve(TIMED_OUT), timeout * 1000);
          });
          value = await Promise.race([running, expired]);
          if (value === TIMED_OUT) {
            controller.abort(new Error(`timed out after ${timeout} s`));
            running.catch(() => undefined); // (its outcome is dropped)
            return error(`Tool '${this.name}' timed out after ${timeout} s`);
          }
        }
        const output = toJson(value);
        if (typeof output === "object" && output !== null && "unsendable" in output) {
          return error(`Tool '${this.name}' returned a value that ${output.unsendable}`);
        }
        return { tool_call_id: context.callId, output: output.json };
      } catch (e) {
        const name = e instanceof Error ? e.name : typeof e;
        const message = e instanceof Error ? e.message : String(e);
        return error(`Tool '${this.name}' failed: ${name}: ${message}`);
      } finally {
        clearTimeout(timer);
      }
    });
  }
}

const TIMED_OUT = Symbol("timed out");

function explain(issues: ReadonlyArray<{ message: string; path?: ReadonlyArray<PropertyKey | { key: PropertyKey }> | undefined }>): string {
  return issues
    .map((issue) => {
      const where = (issue.path ?? []).map((p) => String(typeof p === "object" ? p.key : p)).join(".");
      return `${where || "arguments"}: ${issue.message}`;
    })
    .join("; ");
}

/** What the service takes in JSON (docs/reference.md "What a request may hold"): integers
 * within 64 bits, text without NUL or lone surrogates, at most 128 levels, where a tool
 * result's output starts three down. */
const OUTPUT_MAX_DEPTH = 128 - 3;

/** `value` as JSON (`undefined` is null), or why it cannot be sent. */
function toJson(value: unknown): { json: unknown } | { unsendable: string } {
  let text: string | undefined;
  try {
    text = JSON.stringify(value === undefined ? null : value, (_key, v: unknown) => {
      if (typeof v === "number" && !Number.isFinite(v)) throw new TypeError(`${v} has no JSON form`);
      return v;
    });
  } catch (e) {
    return { unsendable: `is not JSON: ${(e as Error).message}` };
  }
  const json: unknown = text === undefined ? null : JSON.parse(text);
  const problem = outputProblem(json);
  return problem ? { unsendable: `cannot be sent: ${problem}` } : { json };
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why the service would refuse `output` (parsed JSON) as a tool result; undefined if it
 * would take it. Iterative: a value nested too deep is the point. */
export function outputProblem(output: unknown): string | undefined {
  const stack: [unknown, string, number][] = [[output, "the output", 0]];
  while (stack.length) {
    const [item, where, depth] = stack.pop() as [unknown, string, number];
    if (typeof item === "string") {
      if (item.includes("\u0000")) return `${where} contains a NUL character (U+0000)`;
      if (LONE_SURROGATE.test(item)) return `${where} holds a lone surrogate, which is not Unicode text`;
    } else if (typeof item === "number") {
      if (Number.isInteger(item) && (item < -(2 ** 63) || item > 2 ** 64 - 1)) {
        return `${where} is an integer outside the 64-bit range`;
      }
    } else if (item !== null && typeof item === "object") {
      if (depth >= OUTPUT_MAX_DEPTH) return `the output is nested deeper than the service takes (${OUTPUT_MAX_DEPTH} levels)`;
      if (Array.isArray(item)) item.forEach((child, i) => stack.push([child, `${where}[${i}]`, depth + 1]));
      else {
        for (const [key, child] of Object.entries(item)) {
          if (key.includes("\u0000") || LONE_SURROGATE.test(key)) return `a key of ${where} cannot be sent`;
          stack.push([child, `${where}.${key}`, depth + 1]);
        }
      }
    }
  }
  return undefined;
}

/** Define a tool: `parameters` is JSON Schema, or a zod schema (the function then gets
 * the parsed arguments, typed). */
export function tool<Args = any>(spec: ToolSpec<Args> & { name: string }): Tool<Args> {
  return new Tool(spec);
}

export interface RegistryOptions {
  /** Calls running at once across the registry's tools, at most. */
  maxConcurrency?: number;
  /** Seconds each call may take unless its tool says (default: no limit). */
  timeout?: number;
}

/** A call to execute: a pending call of a run, as the API lists it. */
export interface CallLike {
  id: string;
  name: string;
  arguments?: unknown;
}

/** Tools by name, executed for a run's calls. */
export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();
  private readonly limit: Limit;
  readonly timeout: number | undefined;

  constructor(options: RegistryOptions = {}) {
    this.limit = new Limit(options.maxConcurrency);
    this.timeout = options.timeout;
  }

  /** Add a tool (a `Tool`, or a spec with its `name`); returns it. */
  add<Args>(entry: Tool<Args> | (ToolSpec<Args> & { name: string })): Tool<Args> {
    const made = entry instanceof Tool ? entry : new Tool(entry);
    if (this.tools.has(made.name)) throw new TypeError(`a tool named ${JSON.stringify(made.name)} is already registered`);
    this.tools.set(made.name, made as Tool);
    return made;
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  has(name: string): boolean {
    return this.tools.has(name);
  }

  get size(): number {
    return this.tools.size;
  }

  [Symbol.iterator](): IterableIterator<Tool> {
    return this.tools.values();
  }

  /** Every tool as `POST /v1/runs` takes it. */
  definitions(): ToolDefinition[] {
    return [...this.tools.values()].map((t) => t.definition());
  }

  /** One call's result; never throws for the tool's sake (errors are results). */
  async execute(call: CallLike, options: { runId: string; attempt?: number }): Promise<ToolResult> {
    const found = this.tools.get(call.name);
    if (!found) {
      const known = [...this.tools.keys()].sort().join(", ") || "none";
      return { tool_call_id: call.id, output: `Unknown tool '${call.name}'; the tools are: ${known}`, is_error: true };
    }
    const context = { runId: options.runId, callId: call.id, toolName: call.name, attempt: options.attempt ?? 1 };
    return this.limit.hold(() => found.call(call.arguments, context, found.timeout ?? this.timeout));
  }

  /** Every call's result, in the calls' order (run concurrently within the limits). */
  executeAll(calls: readonly CallLike[], options: { runId: string }): Promise<ToolResult[]> {
    return Promise.all(calls.map((c) => this.execute(c, options)));
  }
}

/** Tools as runs take them: a registry, a list of tools (or plain definitions: agent
 * tools, tools executed elsewhere), or tool specs by name. */
export type Tools =
  | ToolRegistry
  | readonly (Tool | ToolDefinition)[]
  | Record<string, ToolSpec>;

export function definitionsOf(tools: Tools | undefined): ToolDefinition[] {
  if (tools === undefined) return [];
  if (tools instanceof ToolRegistry) return tools.definitions();
  if (Array.isArray(tools)) return tools.map((t) => (t instanceof Tool ? t.definition() : { ...t }));
  return registryOf(tools).definitions();
}

/** The registry that executes `tools` (plain definitions in a list have no function: their
 * calls are not this registry's). */
export function registryOf(tools: Tools): ToolRegistry {
  if (tools instanceof ToolRegistry) return tools;
  const registry = new ToolRegistry();
  if (Array.isArray(tools)) {
    for (const t of tools) if (t instanceof Tool) registry.add(t);
  } else {
    for (const [name, spec] of Object.entries(tools as Record<string, ToolSpec>)) registry.add({ ...spec, name });
  }
  return registry;
}
