// The inline executor (`client.run`, `client.execute`), a port of the Python client's
// (client/agentrun_client/_async.py `execute`, _tree.py): wait until the run, or a run
// below it (agent tools start child runs), suspends for tool calls; execute them here;
// answer each to the run that made it; again until the run ends or waits for a person.

import { type ApprovalAnswer, type Approvals, type OnApproval, decision } from "./approvals.js";
import { Conflict, ValidationError, WaitTimeout } from "./errors.js";
import type { Runs } from "./runs.js";
import { now } from "./retry.js";
import type { ToolRegistry } from "./tools.js";
import {
  type Decision,
  type Run,
  type RunStatus,
  SUSPENDED_OR_FINISHED,
  TERMINAL,
  isTerminal,
  pendingApprovals,
  pendingToolCalls,
} from "./types.js";

/** How long a wait on one run of a tree lasts at first when other runs of it may change
 * meanwhile; doubled while nothing changes, up to `MAX_SLICE` (seconds). */
const FIRST_SLICE = 1;
const MAX_SLICE = 8;
/** What an executor waits for once every pending call is answered, some by others. */
const MOVED_ON: RunStatus[] = [...TERMINAL, "queued", "running"];

interface Watch {
  runId: string;
  statuses: readonly RunStatus[];
  /** Other runs of the tree may change meanwhile: look again after a slice of time. */
  bounded: boolean;
}

/** The runs at or below `top` (by their `parent_run_id`), `top` first. */
export function subtree(runs: readonly Run[], top: string): Run[] {
  const byParent = new Map<string, Run[]>();
  for (const run of runs) {
    if (run.parent_run_id) byParent.set(run.parent_run_id, [...(byParent.get(run.parent_run_id) ?? []), run]);
  }
  const out = runs.filter((r) => r.id === top);
  for (let i = 0; i < out.length; i++) out.push(...(byParent.get((out[i] as Run).id) ?? []));
  return out;
}

/** Suspended for what only a person answers (a resolution, a budget, gated calls nobody
 * decided): nothing moves it until they do. */
function waitsForPerson(run: Run): boolean {
  const action = run.required_action;
  if (run.status !== "requires_action" || !action) return false;
  const forTools = action.type === "submit_tool_results" || action.type === "approve_tool_calls";
  return !forTools || pendingApprovals(run).length > 0;
}

/** What to wait on once nothing in `runs` (a tree, as read) is this client's to answer;
 * undefined when only a person can move it. The deepest first: it is the nearest to a
 * tool call. */
function watch(runs: readonly Run[]): Watch | undefined {
  const open = runs.filter((r) => !isTerminal(r));
  const withOpenChild = new Set(open.map((r) => r.parent_run_id).filter(Boolean));
  const candidates: [Run, readonly RunStatus[]][] = [];
  let person = false;
  for (const run of open) {
    if (run.status !== "requires_action") candidates.push([run, SUSPENDED_OR_FINISHED]);
    else if (waitsForPerson(run)) person = true;
    else if (!withOpenChild.has(run.id)) candidates.push([run, MOVED_ON]);
  }
  if (!candidates.length) return undefined;
  const [run, statuses] = candidates.reduce((a, b) => ((b[0].depth ?? 0) > (a[0].depth ?? 0) ? b : a));
  return { runId: run.id, statuses, bounded: person || candidates.length > 1 };
}

export interface ExecuteOptions {
  /** Seconds the whole run may take (`WaitTimeout`). */
  timeout?: number | undefined;
  /** Asked once for each gated call: `approve()`, `approve(args)`, `reject(message)`, or
   * undefined to leave it to a person. */
  onApproval?: OnApproval | undefined;
}

/** Serve a run's tool calls from `tools` until it ends, and those of the runs below it;
 * gated calls go to `onApproval`. Returns the run once it has ended, or once only a person
 * can move its tree (a resolution, a budget, undecided approvals). */
export async function execute(
  client: { runs: Runs; approvals: Approvals },
  id: string,
  tools: ToolRegistry,
  options: ExecuteOptions = {},
): Promise<Run> {
  const runs = client.runs;
  const deadline = options.timeout === undefined ? undefined : now() + options.timeout;
  const onApproval = options.onApproval;
  const asked = new Set<string>(); // `${run}/${call}` put to `onApproval` already
  let statuses: readonly RunStatus[] = SUSPENDED_OR_FINISHED;
  let slice: number | undefined;
  const waiter = runs.waiter(id, { deadline });
  for (;;) {
    const run = await waiter.until(statuses);
    statuses = SUSPENDED_OR_FINISHED;
    if (isTerminal(run)) return run;
    if (run.status !== "requires_action") continue; // it moved on: until its next suspension
    if (await serve(client, tools, run, asked, onApproval)) {
      slice = undefined;
      continue;
    }
    const tree = await subtreeOf(runs, run);
    let served = false;
    for (const other of tree) {
      if (other.status === "requires_action") served = (await serve(client, tools, other, asked, onApproval)) || served;
    }
    if (served) {
      slice = undefined;
      continue;
    }
    const next = watch(tree);
    if (!next) {
      if ((tree[0] as Run).status !== "requires_action") continue; // it moved on since
      return tree[0] as Run; // what is left is a person's
    }
    if (next.runId === id && !next.bounded) {
      statuses = next.statuses; // every call answered (or queued): until it moves on
      continue;
    }
    slice = next.bounded ? (slice === undefined ? FIRST_SLICE : Math.min(MAX_SLICE, slice * 2)) : undefined;
    if (await watchOne(runs, next, slice, deadline, run)) slice = undefined;
  }
}

/** Execute a suspended run's open calls and submit the results to it; put its fresh gated
 * calls to `onApproval`. Whether anything was sent. */
async function serve(
  client: { runs: Runs; approvals: Approvals },
  tools: ToolRegistry,
  run: Run,
  asked: Set<string>,
  onApproval: OnApproval | undefined,
): Promise<boolean> {
  const type = run.required_action?.type;
  if (type !== "submit_tool_results" && type !== "approve_tool_calls") return false;
  const calls = pendingToolCalls(run).filter((c) => !c.queue); // (a queue's: its executors')
  if (calls.length) {
    const results = await tools.executeAll(calls, { runId: run.id });
    await quietly(() => client.runs.submitToolOutputs(run.id, results));
  }
  let decided = false;
  if (onApproval) {
    const fresh = pendingApprovals(run).filter((a) => !asked.has(`${run.id}/${a.id}`));
    for (const a of fresh) asked.add(`${run.id}/${a.id}`);
    const decisions: Decision[] = [];
    for (const call of fresh) {
      const answer: ApprovalAnswer = await onApproval({ ...call, runId: run.id });
      if (answer) decisions.push(decision(call, answer));
    }
    if (decisions.length) {
      await quietly(() => client.approvals.decide(run.id, decisions));
      decided = true;
    }
  }
  return calls.length > 0 || decided;
}

/** An executor's answer, safe to repeat; one the run no longer takes is not an error:
 * answered by someone else meanwhile, or the run moved on. */
async function quietly(send: () => Promise<unknown>): Promise<void> {
  try {
    await send();
  } catch (error) {
    if (error instanceof Conflict) return;
    if (error instanceof ValidationError && error.code === "tool-call-not-pending") return;
    throw error;
  }
}

/** `run`, then the runs below it, as they are now. */
async function subtreeOf(runs: Runs, run: Run): Promise<Run[]> {
  if (!run.root_run_id) return [run];
  const found: Run[] = [];
  for await (const other of runs.list({ rootRunId: run.root_run_id })) found.push(other);
  const out = subtree(found, run.id);
  return out.length ? out : [run];
}

/** Wait on one run of `root`'s tree until it reaches `w.statuses` (at most `slice`
 * seconds); whether it did. `WaitTimeout` (naming `root`) at `deadline`. */
async function watchOne(
  runs: Runs,
  w: Watch,
  slice: number | undefined,
  deadline: number | undefined,
  root: Run,
): Promise<boolean> {
  let until = deadline;
  if (slice !== undefined) until = Math.min(deadline ?? Infinity, now() + slice);
  try {
    await runs.waiter(w.runId, { deadline: until }).until(w.statuses);
  } catch (error) {
    if (!(error instanceof WaitTimeout)) throw error;
    if (deadline !== undefined && now() >= deadline) {
      throw new WaitTimeout(`run ${root.id} is still ${root.status}, waiting on ${w.runId} of its tree (${error.message})`, root);
    }
    return false;
  }
  return true;
}
