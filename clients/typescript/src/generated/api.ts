// Generated from the service's OpenAPI document by scripts/generate.mjs
// (`npm run generate`): do not edit. A test fails when it is stale.
export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Healthz */
        get: operations["healthz_healthz_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Metrics
         * @description Needs the permission `metrics:read` (roles: admin, operator).
         */
        get: operations["metrics_metrics_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Readyz */
        get: operations["readyz_readyz_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the tenant's agents (each at its latest version), by name
         * @description Needs the permission `runs:read` (roles: admin, operator, creator, viewer).
         */
        get: operations["list_agents_v1_agents_get"];
        put?: never;
        /**
         * Create a named agent (its version 1)
         * @description A named agent of the caller's tenant that runs start from: `docs/reference.md#agents`.
         *
         *     Needs the permission `agents:manage` (roles: admin).
         */
        post: operations["create_agent_v1_agents_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * An agent at its latest version
         * @description Needs the permission `runs:read` (roles: admin, operator, creator, viewer).
         */
        get: operations["get_agent_v1_agents__name__get"];
        /**
         * Make an agent's next version (versions are immutable)
         * @description The runs in flight keep the version they started from; new runs that name the agent without a version take this one: `docs/reference.md#agents`.
         *
         *     Needs the permission `agents:manage` (roles: admin).
         */
        put: operations["update_agent_v1_agents__name__put"];
        post?: never;
        /**
         * Delete an agent: no new run starts from it; runs in flight keep their version
         * @description Needs the permission `agents:manage` (roles: admin).
         */
        delete: operations["delete_agent_v1_agents__name__delete"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{name}/versions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Every version of an agent, oldest first
         * @description Needs the permission `runs:read` (roles: admin, operator, creator, viewer).
         */
        get: operations["list_versions_v1_agents__name__versions_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{name}/versions/{version}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * One version of an agent
         * @description Needs the permission `runs:read` (roles: admin, operator, creator, viewer).
         */
        get: operations["get_version_v1_agents__name__versions__version__get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/approvals": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Pending approvals across the caller's runs, newest first
         * @description Needs the permission `runs:read` (roles: admin, operator, creator, viewer).
         */
        get: operations["pending_approvals_v1_approvals_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/callbacks/{token}/tool-results": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Submit tool results with a run's callback token (no API key) */
        post: operations["callback_tool_results_v1_callbacks__token__tool_results_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The tenant's API keys (never their secrets)
         * @description Needs the permission `keys:manage` (roles: admin).
         */
        get: operations["list_keys_v1_keys_get"];
        put?: never;
        /**
         * Create an API key (its secret is in this answer only)
         * @description Needs the permission `keys:manage` (roles: admin).
         */
        post: operations["create_key_v1_keys_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/keys/{key_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * One API key
         * @description Needs the permission `keys:manage` (roles: admin).
         */
        get: operations["get_key_v1_keys__key_id__get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/keys/{key_id}/revoke": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Revoke an API key: refused by every API process within a second
         * @description Needs the permission `keys:manage` (roles: admin).
         */
        post: operations["revoke_key_v1_keys__key_id__revoke_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/keys/{key_id}/rotate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A new secret for a key; the old one works for the grace period
         * @description Needs the permission `keys:manage` (roles: admin).
         */
        post: operations["rotate_key_v1_keys__key_id__rotate_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/providers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List Providers
         * @description The provider profiles a run may name (docs/reference.md, "Provider profiles").
         *
         *     Needs the permission `runs:create` (roles: admin, creator).
         */
        get: operations["list_providers_v1_providers_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/lease": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Lease pending tool calls of a queue (long poll)
         * @description Leases up to `limit` pending tool calls of runs whose `tool_queue` (or
         *     whose tool's `queue`) is this queue, oldest first, each for `lease_seconds`. When none is
         *     leasable the request waits up to `wait` seconds for one (holding no database connection),
         *     then answers with the calls it got, or none. A call whose lease lapsed unanswered (its
         *     executor died) is leased again, with a new `lease_token` and `attempt` + 1: calls are
         *     executed at least once, so use `tool_call_id` to make side effects idempotent. Extend a
         *     lease while the tool runs (`…/heartbeat`), answer through it (`…/result`).
         *
         *     Needs the permission `queues:work` (roles: admin, executor).
         */
        post: operations["lease_v1_queues__queue__lease_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/leases/{lease_token}/heartbeat": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Extend a lease while its tool runs
         * @description Extends the lease by `lease_seconds` from now. 409 `tool-call-lease-lost` once the lease moved on (the call was leased again after this lease lapsed, answered, or its run stopped waiting): stop the tool, its result would be refused.
         *
         *     Needs the permission `queues:work` (roles: admin, executor).
         */
        post: operations["heartbeat_v1_queues__queue__leases__lease_token__heartbeat_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/leases/{lease_token}/result": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Answer a leased tool call
         * @description Submits the call's result, as `POST /v1/runs/{run_id}/tool-results` does (the run resumes when it was the last open call). The same result again is a no-op; 409 `tool-call-lease-lost` when another lease holds the call now, `tool-result-conflict` when it has a different result, `run-state-conflict` when the run stopped waiting.
         *
         *     Needs the permission `queues:work` (roles: admin, executor).
         */
        post: operations["result_v1_queues__queue__leases__lease_token__result_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List runs, newest first
         * @description Needs the permission `runs:read` (roles: admin, operator, creator, viewer).
         */
        get: operations["list_runs_v1_runs_get"];
        put?: never;
        /**
         * Create a run (or continue a completed one: `previous_run_id`)
         * @description Every field and what it does: `docs/reference.md#creating-a-run`.
         *
         *     Needs the permission `runs:create` (roles: admin, creator).
         */
        post: operations["create_run_v1_runs_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{run_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a run
         * @description Statuses, `waiting_reason`, `required_action`, `error`: `docs/reference.md#the-run-object`.
         *
         *     Needs the permission `runs:read` (roles: admin, operator, creator, viewer).
         */
        get: operations["get_run_v1_runs__run_id__get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{run_id}/approvals": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A run's gated tool calls, pending and decided, in order
         * @description Needs the permission `runs:read` (roles: admin, operator, creator, viewer).
         */
        get: operations["run_approvals_v1_runs__run_id__approvals_get"];
        put?: never;
        /**
         * Approve or reject gated tool calls (idempotent)
         * @description Decisions, their refusals and what the model sees: `docs/reference.md#approvals`.
         *
         *     Needs the permission `runs:approve` (roles: admin, operator, creator).
         */
        post: operations["decide_v1_runs__run_id__approvals_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{run_id}/browser-tokens": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Mint a short-lived read-only token for one run, for a browser
         * @description A signed token that reads this one run and nothing else: its events
         *     (`GET /v1/runs/{run_id}/events`, JSON and server-sent events), its wait and its messages.
         *     Any other operation refuses it (403 `forbidden`), another run is a 404. It expires after
         *     `ttl_seconds` (default 900, at most 86400); an expired or
         *     altered token is a 401 `browser-token-invalid`. Tokens are not stored and cannot be
         *     revoked: keep them short. A stream opened before the expiry runs on until the run ends.
         *     `docs/reference.md#browser-tokens`.
         *
         *     Needs the permission `browser-tokens:create` (roles: admin, operator, creator).
         */
        post: operations["create_browser_token_v1_runs__run_id__browser_tokens_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{run_id}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancel a run that has not ended
         * @description Needs the permission `runs:cancel` (roles: admin, operator, creator).
         */
        post: operations["cancel_v1_runs__run_id__cancel_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{run_id}/checkpoints": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A run's checkpoints: where it can be forked
         * @description Read off the run's log; nothing is written to have them: `docs/reference.md#forks`.
         *
         *     Needs the permission `runs:read` (roles: admin, operator, creator, viewer).
         */
        get: operations["list_checkpoints_v1_runs__run_id__checkpoints_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{run_id}/children": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List a run's child runs, oldest first
         * @description The runs its agent tools' calls started (each answers one call): `docs/reference.md#agent-tools`.
         *
         *     Needs the permission `runs:read` (roles: admin, operator, creator, viewer).
         */
        get: operations["list_children_v1_runs__run_id__children_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{run_id}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The run's event log (JSON, or a live server-sent event stream)
         * @description Every event type and its `data`: `docs/reference.md#events` (the webhooks announce five of them: `docs/reference.md#webhooks`). With `tree=true`, its descendants' events too, the position a `cursor` (`Last-Event-ID`, `next_cursor`).
         *
         *     Needs the permission `runs:read` (roles: admin, operator, creator, viewer). A browser token for this run may call it too (`?access_token=`).
         */
        get: operations["events_v1_runs__run_id__events_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{run_id}/fork": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Fork a run from a checkpoint (or replay it)
         * @description A new run from the run's first `at` messages: `docs/reference.md#forks`.
         *
         *     Needs the permission `runs:create` (roles: admin, creator).
         */
        post: operations["fork_run_v1_runs__run_id__fork_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{run_id}/forks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the runs forked from a run, oldest first
         * @description Forks and replays made from any of its checkpoints (a fork's own forks are listed on it): `docs/reference.md#forks`.
         *
         *     Needs the permission `runs:read` (roles: admin, operator, creator, viewer).
         */
        get: operations["list_forks_v1_runs__run_id__forks_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{run_id}/limits": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Change a run's limits (and resume it when it waits on a budget)
         * @description The limits named are set (`null` removes one), the others are kept; a run suspended on a budget (`waiting_reason.type` `budget`) is queued again and its next model call checked against them: `docs/reference.md#budgets`.
         *
         *     Needs the permission `runs:operate` (roles: admin, operator).
         */
        post: operations["set_limits_v1_runs__run_id__limits_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{run_id}/log": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Every message the run's log holds, oldest first, a page at a time
         * @description The messages each batch of the run's log wrote, in order: the originals of the turns a compaction replaced with a summary among them (`GET /v1/runs/{run_id}/messages` shows the conversation as it is now). A compaction's batch (`replaces`) restates the conversation it left: the messages it kept, the summary and the recent turns. `docs/compaction.md`.
         *
         *     Needs the permission `runs:read` (roles: admin, operator, creator, viewer).
         */
        get: operations["run_log_v1_runs__run_id__log_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{run_id}/messages": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The run's conversation, oldest first, a page at a time
         * @description Every message the run's model sees after its preamble: the history it was given (`from_history`: its `history`, or the whole conversation of the run it continues) and its own (its prompt, the model's answers, the tool results), as stored when the request is served. Each `message` has the shape `history` takes on `POST /v1/runs`.
         *
         *     Needs the permission `runs:read` (roles: admin, operator, creator, viewer). A browser token for this run may call it too (`?access_token=`).
         */
        get: operations["messages_v1_runs__run_id__messages_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{run_id}/resolution": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Resolve a parked invalid tool call
         * @description The actions: `docs/reference.md#resolutions`.
         *
         *     Needs the permission `runs:resolve` (roles: admin, operator).
         */
        post: operations["resolve_v1_runs__run_id__resolution_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{run_id}/tool-results": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Submit tool results (partial and idempotent)
         * @description `output`, `is_error` and the answers to each case: `docs/reference.md#tool-results`.
         *
         *     Needs the permission `tool-results:submit` (roles: admin, operator, creator, executor).
         */
        post: operations["submit_tool_results_v1_runs__run_id__tool_results_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{run_id}/wait": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Wait until a run reaches a status (long poll)
         * @description Holds the request until the run's status is one of `status` (default:
         *     `requires_action` or any terminal status) or `timeout` seconds pass, then answers with the
         *     run as `GET /v1/runs/{run_id}` shows it: 200 either way, and the `Wait-Outcome` header
         *     says which: `reached` (the status is one you named), `final` (the run is `completed` or
         *     `cancelled`, which it never leaves, though you did not name it), `timeout` (also when the
         *     server is shutting down). A run already in a wanted status is answered at once. The
         *     server holds no database connection while it waits: it is woken by the run's commits.
         *
         *     Needs the permission `runs:read` (roles: admin, operator, creator, viewer). A browser token for this run may call it too (`?access_token=`).
         */
        get: operations["wait_for_run_v1_runs__run_id__wait_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/schedules": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the tenant's schedules, by key
         * @description Needs the permission `runs:read` (roles: admin, operator, creator, viewer).
         */
        get: operations["list_schedules_v1_schedules_get"];
        put?: never;
        /**
         * Create a schedule: runs started by the clock
         * @description Each tick of `cron` in `timezone` starts the run `run` describes, exactly once across every worker: `docs/reference.md#schedules`.
         *
         *     Needs the permission `schedules:manage` (roles: admin).
         */
        post: operations["create_schedule_v1_schedules_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/schedules/{key}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A schedule
         * @description Needs the permission `runs:read` (roles: admin, operator, creator, viewer).
         */
        get: operations["get_schedule_v1_schedules__key__get"];
        put?: never;
        post?: never;
        /**
         * Delete a schedule (the runs it started stay)
         * @description Needs the permission `schedules:manage` (roles: admin).
         */
        delete: operations["delete_schedule_v1_schedules__key__delete"];
        options?: never;
        head?: never;
        /**
         * Change a schedule's fields
         * @description A change of `cron`, `timezone`, `start_at` or `end_at` plans the next tick from now; the runs started already are unchanged: `docs/reference.md#schedules`.
         *
         *     Needs the permission `schedules:manage` (roles: admin).
         */
        patch: operations["update_schedule_v1_schedules__key__patch"];
        trace?: never;
    };
    "/v1/schedules/{key}/backfill": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Start the ticks of a past window
         * @description Each tick of the cron from `from` to `to` (both included) not recorded yet starts a run, under the backfill's `overlap` (default `allow_all`): `docs/reference.md#schedules`.
         *
         *     Needs the permission `schedules:manage` (roles: admin).
         */
        post: operations["backfill_schedule_v1_schedules__key__backfill_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/schedules/{key}/fire-times": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The times a schedule would fire, in UTC and in its zone
         * @description Needs the permission `runs:read` (roles: admin, operator, creator, viewer).
         */
        get: operations["fire_times_v1_schedules__key__fire_times_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/schedules/{key}/pause": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Pause a schedule: no tick fires until it is resumed
         * @description Needs the permission `schedules:manage` (roles: admin).
         */
        post: operations["pause_schedule_v1_schedules__key__pause_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/schedules/{key}/resume": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Resume a schedule: its next tick is the first after now
         * @description Needs the permission `schedules:manage` (roles: admin).
         */
        post: operations["resume_schedule_v1_schedules__key__resume_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/schedules/{key}/ticks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * What a schedule's ticks became (started, skipped, buffered, missed), newest first
         * @description Needs the permission `runs:read` (roles: admin, operator, creator, viewer).
         */
        get: operations["list_ticks_v1_schedules__key__ticks_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/schedules/{key}/trigger": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Start one run now (also while paused)
         * @description A tick now, outside the cron; `overlap` (default `allow_all`) says what it does while the schedule's last run has not ended: `docs/reference.md#schedules`.
         *
         *     Needs the permission `schedules:manage` (roles: admin).
         */
        post: operations["trigger_schedule_v1_schedules__key__trigger_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tenants": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Every tenant with its limits
         * @description Needs the permission `tenants:manage` (roles: admin).
         */
        get: operations["list_tenants_v1_tenants_get"];
        put?: never;
        /**
         * Create a tenant
         * @description Needs the permission `tenants:manage` (roles: admin).
         */
        post: operations["create_tenant_v1_tenants_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tenants/{tenant_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * One tenant
         * @description Needs the permission `tenants:manage` (roles: admin).
         */
        get: operations["get_tenant_v1_tenants__tenant_id__get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /**
         * Change a tenant's name, limits or state
         * @description Needs the permission `tenants:manage` (roles: admin).
         */
        patch: operations["update_tenant_v1_tenants__tenant_id__patch"];
        trace?: never;
    };
    "/v1/usage": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Usage and cost of every model call (attempts included) in a time range
         * @description Needs the permission `usage:read` (roles: admin, operator, creator, viewer).
         */
        get: operations["usage_v1_usage_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /**
         * AgentIn
         * @description A new agent of the caller's tenant.
         */
        AgentIn: {
            /**
             * Approval
             * @description the approval policy of the tools that name none (default `never`)
             */
            approval?: ("never" | "always") | components["schemas"]["ApprovalRule"] | null;
            /**
             * Approval On Timeout
             * @description the decision a call that waited too long gets (`reject`)
             */
            approval_on_timeout?: ("reject" | "approve") | null;
            /**
             * Approval Timeout
             * @description seconds a gated call waits for a decision before it gets `approval_on_timeout` (default: it waits as long as the run does)
             */
            approval_timeout?: number | null;
            /** @description context compaction for long runs: past `threshold_tokens`, older turns are replaced by a summary before the next model call (the run's log keeps them) */
            compaction?: components["schemas"]["CompactionPolicy"] | null;
            /**
             * Description
             * @description what it does: for people, agent cards and the agent tools that call it
             */
            description: string;
            /** Expires In */
            expires_in?: number | null;
            invalid_tool_call?: components["schemas"]["InvalidToolCallPolicy"];
            /** @description the run's budget, checked before each model call */
            limits?: components["schemas"]["RunLimits"] | null;
            /** Max Turns */
            max_turns?: number | null;
            /** Metadata */
            metadata?: {
                [key: string]: components["schemas"]["JsonValue"];
            };
            model: components["schemas"]["ModelSpec"];
            /**
             * Name
             * @description unique in the tenant; part of URLs
             */
            name: string;
            /**
             * Output Schema
             * @description structured output: a JSON Schema of an object. The model is offered the tool `final_output` with it as parameters, and the run completes when it calls it (its `output`: the arguments as JSON; a call missing a required field is asked again, up to 2 times) or answers with JSON text that holds the required fields
             */
            output_schema?: {
                [key: string]: components["schemas"]["JsonValue"];
            } | null;
            /** Preamble */
            preamble?: string | null;
            /**
             * Priority
             * @description claim order: a queued run of higher priority goes first; within one priority, fair keys (tenants) take turns
             * @default 0
             */
            priority?: number;
            /**
             * Stream
             * @default false
             */
            stream?: boolean;
            /** Tool Choice */
            tool_choice?: ("auto" | "none" | "required") | components["schemas"]["SpecificTool"] | null;
            /**
             * Tool Concurrency
             * @default 1
             */
            tool_concurrency?: number;
            /**
             * Tool Queue
             * @description the run's tool calls are leased by executors of this queue (`POST /v1/queues/{queue}/lease`) instead of being answered by whoever answers the run; a tool's own `queue` overrides it
             */
            tool_queue?: string | null;
            /** Tools */
            tools?: components["schemas"]["ToolDef"][];
            webhook?: components["schemas"]["WebhookSpec"] | null;
        };
        /** AgentList */
        AgentList: {
            /** Data */
            data: components["schemas"]["AgentOut"][];
            /** Next Cursor */
            next_cursor: string | null;
        };
        /** AgentOut */
        AgentOut: {
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /** Created By */
            created_by: string | null;
            /** Description */
            description: string;
            /** Name */
            name: string;
            /**
             * Spec
             * @description the fields its runs take (model, preamble, tools, limits, ...), as given
             */
            spec: {
                [key: string]: unknown;
            };
            /** Version */
            version: number;
        };
        /**
         * AgentUpdate
         * @description The next version of an agent: its description and the fields of its runs.
         */
        AgentUpdate: {
            /**
             * Approval
             * @description the approval policy of the tools that name none (default `never`)
             */
            approval?: ("never" | "always") | components["schemas"]["ApprovalRule"] | null;
            /**
             * Approval On Timeout
             * @description the decision a call that waited too long gets (`reject`)
             */
            approval_on_timeout?: ("reject" | "approve") | null;
            /**
             * Approval Timeout
             * @description seconds a gated call waits for a decision before it gets `approval_on_timeout` (default: it waits as long as the run does)
             */
            approval_timeout?: number | null;
            /** @description context compaction for long runs: past `threshold_tokens`, older turns are replaced by a summary before the next model call (the run's log keeps them) */
            compaction?: components["schemas"]["CompactionPolicy"] | null;
            /**
             * Description
             * @description what it does: for people, agent cards and the agent tools that call it
             */
            description: string;
            /** Expires In */
            expires_in?: number | null;
            invalid_tool_call?: components["schemas"]["InvalidToolCallPolicy"];
            /** @description the run's budget, checked before each model call */
            limits?: components["schemas"]["RunLimits"] | null;
            /** Max Turns */
            max_turns?: number | null;
            /** Metadata */
            metadata?: {
                [key: string]: components["schemas"]["JsonValue"];
            };
            model: components["schemas"]["ModelSpec"];
            /**
             * Output Schema
             * @description structured output: a JSON Schema of an object. The model is offered the tool `final_output` with it as parameters, and the run completes when it calls it (its `output`: the arguments as JSON; a call missing a required field is asked again, up to 2 times) or answers with JSON text that holds the required fields
             */
            output_schema?: {
                [key: string]: components["schemas"]["JsonValue"];
            } | null;
            /** Preamble */
            preamble?: string | null;
            /**
             * Priority
             * @description claim order: a queued run of higher priority goes first; within one priority, fair keys (tenants) take turns
             * @default 0
             */
            priority?: number;
            /**
             * Stream
             * @default false
             */
            stream?: boolean;
            /** Tool Choice */
            tool_choice?: ("auto" | "none" | "required") | components["schemas"]["SpecificTool"] | null;
            /**
             * Tool Concurrency
             * @default 1
             */
            tool_concurrency?: number;
            /**
             * Tool Queue
             * @description the run's tool calls are leased by executors of this queue (`POST /v1/queues/{queue}/lease`) instead of being answered by whoever answers the run; a tool's own `queue` overrides it
             */
            tool_queue?: string | null;
            /** Tools */
            tools?: components["schemas"]["ToolDef"][];
            webhook?: components["schemas"]["WebhookSpec"] | null;
        };
        /** CacheControl */
        AnthropicCacheControl: {
            /**
             * Ttl
             * @enum {string}
             */
            ttl?: "5m" | "1h";
            /**
             * Type
             * @constant
             */
            type: "ephemeral";
        };
        /** Container */
        AnthropicContainer: {
            /** Id */
            id?: string | null;
            /** Skills */
            skills?: components["schemas"]["AnthropicSkill"][] | null;
        };
        /** Diagnostics */
        AnthropicDiagnostics: {
            /** Previous Message Id */
            previous_message_id?: string | null;
        };
        /** JSONOutputFormat */
        AnthropicJSONOutputFormat: {
            /** Schema */
            schema: {
                [key: string]: components["schemas"]["JsonValue"];
            };
            /**
             * Type
             * @constant
             */
            type: "json_schema";
        };
        /** Metadata */
        AnthropicMetadata: {
            /** User Id */
            user_id?: string | null;
        };
        /** OutputConfig */
        AnthropicOutputConfig: {
            /** Effort */
            effort?: ("low" | "medium" | "high" | "xhigh" | "max") | null;
            format?: components["schemas"]["AnthropicJSONOutputFormat"] | null;
        };
        /** Skill */
        AnthropicSkill: {
            /** Skill Id */
            skill_id: string;
            /**
             * Type
             * @enum {string}
             */
            type: "anthropic" | "custom";
            /** Version */
            version?: string;
        };
        /** ThinkingAdaptive */
        AnthropicThinkingAdaptive: {
            /** Display */
            display?: ("summarized" | "omitted") | null;
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "adaptive";
        };
        /** ThinkingBetweenTools */
        AnthropicThinkingBetweenTools: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "between_tools";
        };
        /** ThinkingDisabled */
        AnthropicThinkingDisabled: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "disabled";
        };
        /** ThinkingEnabled */
        AnthropicThinkingEnabled: {
            /** Budget Tokens */
            budget_tokens: number;
            /** Display */
            display?: ("summarized" | "omitted") | null;
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "enabled";
        };
        /** ApprovalItem */
        ApprovalItem: {
            /**
             * Arguments
             * @description the model's arguments
             */
            arguments: unknown;
            /**
             * Arguments Hash
             * @description SHA-256 (hex) of `arguments` as compact JSON with sorted keys: a decision names it
             */
            arguments_hash: string;
            /** Id */
            id: string;
            /** Name */
            name: string;
            /**
             * Position
             * @description the call's place in its round (a decision may name it: needed when two calls of the round share an id)
             */
            position: number;
        };
        /** ApprovalList */
        ApprovalList: {
            /** Data */
            data: components["schemas"]["ApprovalOut"][];
            /** Next Cursor */
            next_cursor?: string | null;
        };
        /** ApprovalOut */
        ApprovalOut: {
            /**
             * Arguments
             * @description the model's arguments
             */
            arguments: unknown;
            /**
             * Arguments Hash
             * @description what a decision names the arguments by
             */
            arguments_hash: string;
            /** Decided At */
            decided_at: string | null;
            /** Decided By */
            decided_by: string | null;
            /**
             * Due At
             * @description when `approval_on_timeout` decides it
             */
            due_at: string | null;
            /**
             * Executed Arguments
             * @description approved with edited arguments: the ones executed
             */
            executed_arguments?: unknown;
            /**
             * Message
             * @description rejected: what the model was told
             */
            message?: string | null;
            /** Name */
            name: string;
            /**
             * Position
             * @description the call's place in its round
             */
            position: number;
            /** Requested At */
            requested_at: string | null;
            /** Round */
            round: number;
            /** Run Id */
            run_id: string;
            status: components["schemas"]["ApprovalStatus"];
            /** Tool Call Id */
            tool_call_id: string;
        };
        /** ApprovalRule */
        ApprovalRule: {
            /**
             * When
             * @description a JSON Schema (Draft 2020-12): a call whose parsed arguments validate against it waits for approval
             */
            when: {
                [key: string]: components["schemas"]["JsonValue"];
            };
        };
        /**
         * ApprovalStatus
         * @description A gated tool call's decision (`tool_calls.approval`; app.approvals.service).
         * @enum {string}
         */
        ApprovalStatus: "pending" | "approved" | "rejected" | "closed";
        /** ApproveToolCalls */
        ApproveToolCalls: {
            /**
             * Approvals
             * @description gated calls awaiting a decision
             */
            approvals: components["schemas"]["ApprovalItem"][];
            /** Callback Url */
            callback_url: string | null;
            /**
             * Tool Calls
             * @description the round's calls handed out meanwhile (as in `submit_tool_results`)
             */
            tool_calls: components["schemas"]["ToolCallOut"][];
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "approve_tool_calls";
        };
        /**
         * BackfillIn
         * @description The ticks of a past window (`from` ≤ tick ≤ `to`), each started as it would have
         *     been; a tick that has a recorded outcome already is left as it is.
         */
        BackfillIn: {
            /**
             * From
             * Format: date-time
             */
            from: string;
            /**
             * Overlap
             * @description when a tick comes while the schedule's last run has not ended: `skip` (the tick is recorded skipped), `buffer_one` (it starts when that run ends; one tick is kept, later ones are skipped), `allow_all` (it starts anyway), `cancel_other` (that run is cancelled, then this one starts)
             * @default allow_all
             * @enum {string}
             */
            overlap?: "skip" | "buffer_one" | "allow_all" | "cancel_other";
            /**
             * To
             * Format: date-time
             */
            to: string;
        };
        /** BrowserTokenIn */
        BrowserTokenIn: {
            /**
             * Ttl Seconds
             * @description how long the token is valid, in seconds
             * @default 900
             */
            ttl_seconds?: number;
        };
        /** BrowserTokenOut */
        BrowserTokenOut: {
            /**
             * Expires At
             * Format: date-time
             */
            expires_at: string;
            /** Run Id */
            run_id: string;
            /**
             * Token
             * @description send as `Authorization: Bearer <token>`, or as `?access_token=<token>` where no header can be sent (EventSource)
             */
            token: string;
        };
        /** CheckpointList */
        CheckpointList: {
            /** Data */
            data: components["schemas"]["CheckpointOut"][];
            /**
             * Messages
             * @description messages in the run's conversation now
             */
            messages: number;
            /** Run Id */
            run_id: string;
        };
        /** CheckpointOut */
        CheckpointOut: {
            /**
             * Kind
             * @description `start` (the given history and the prompt), `tool_calls` (the model's calls end it: a fork waits for them), `tool_results` (a round's results end it), `answer` (the model's message without calls ends it)
             */
            kind: string;
            /**
             * Seq
             * @description messages before it: a fork at it starts from the first `seq`
             */
            seq: number;
            /**
             * Turn
             * @description model calls made before it
             */
            turn: number;
            /**
             * Usage
             * @description the usage of those calls
             */
            usage: {
                [key: string]: unknown;
            };
        };
        /**
         * CompactionPolicy
         * @description A run's context compaction (`compaction`; docs/compaction.md): when the next model
         *     request's estimated tokens pass `threshold_tokens`, the worker first replaces the
         *     older turns with a summary (system and user messages kept verbatim). Its options are
         *     left out for their defaults, never null (as `model` is everywhere); integers take
         *     `5.0` as `5`, as every integer field does.
         */
        CompactionPolicy: {
            /**
             * Instructions
             * @description what the summarising model is told (default: the service's)
             */
            instructions?: string;
            /**
             * Keep Recent Turns
             * @description the latest model turns (each with its tool results) kept as they are
             * @default 2
             */
            keep_recent_turns?: number;
            model?: components["schemas"]["ModelSpec"];
            /**
             * Threshold Tokens
             * @description compact before a model call whose request is estimated above this many tokens (the JSON text of the preamble, tools and messages, 4 characters a token)
             */
            threshold_tokens: number;
        };
        /** ConversationMessageOut */
        ConversationMessageOut: {
            /**
             * From History
             * @description true for messages the run was given (its `history`, or the conversation of the run it continues), false for its own (its prompt, the model's answers, tool results)
             */
            from_history: boolean;
            /**
             * Index
             * @description the message's position in the conversation, from 0
             */
            index: number;
            message: components["schemas"]["HistoryMessageOut"];
        };
        /** DecisionIn */
        DecisionIn: {
            /**
             * Action
             * @enum {string}
             */
            action: "approve" | "reject";
            /**
             * Arguments
             * @description approve: edited arguments, executed instead of the model's (validated against the tool's `parameters`)
             */
            arguments?: {
                [key: string]: components["schemas"]["JsonValue"];
            } | null;
            /**
             * Arguments Hash
             * @description the `arguments_hash` of the call as the decider saw it (any other value is stale: 409 `approval-stale`)
             */
            arguments_hash: string;
            /**
             * Message
             * @description reject: what the model is told
             */
            message?: string | null;
            /**
             * Position
             * @description the call's `position` in its round: needed only when two calls of the round share `tool_call_id` (else `422 invalid-request`)
             */
            position?: number | null;
            /** Tool Call Id */
            tool_call_id: string;
        };
        /**
         * DecisionsIn
         * @description Decisions on a run's gated tool calls (`POST /v1/runs/{id}/approvals`).
         */
        DecisionsIn: {
            /** Decisions */
            decisions: components["schemas"]["DecisionIn"][];
        };
        /** EventList */
        EventList: {
            /** Data */
            data: components["schemas"]["EventOut"][];
            /**
             * Next Cursor
             * @description with `tree=true`: the `cursor` that continues after this page (also after the last one so far: fewer than `limit` events); null without it
             */
            next_cursor?: string | null;
        };
        /** EventOut */
        EventOut: {
            /** Actor */
            actor: string | null;
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /** Data */
            data: {
                [key: string]: unknown;
            };
            /**
             * Run Id
             * @description the run whose event it is (with `tree=true`, one of many)
             */
            run_id: string;
            /** Seq */
            seq: number;
            /** Type */
            type: string;
        };
        /** FireTimeOut */
        FireTimeOut: {
            /**
             * Local
             * @description in the schedule's zone, with its offset
             */
            local: string;
            /**
             * Utc
             * Format: date-time
             */
            utc: string;
        };
        /** FireTimes */
        FireTimes: {
            /** Data */
            data: components["schemas"]["FireTimeOut"][];
            /** Timezone */
            timezone: string;
        };
        /** ForkIn */
        ForkIn: {
            /**
             * At
             * @description the checkpoint's `seq` (`GET /v1/runs/{id}/checkpoints`): the fork starts from the run's first `at` messages; default: the run's start
             */
            at?: number | null;
            /**
             * Mode
             * @description `replay`: each model call whose request is the recorded one is answered from the recording (and each tool round from its recorded results) until the first difference
             * @default fork
             * @enum {string}
             */
            mode?: "fork" | "replay";
            /**
             * On Divergence
             * @description a replay at its first difference: go on with the live model and executors (`live`), or fail (`fail`); recorded as a `replay.diverged` event
             * @default live
             * @enum {string}
             */
            on_divergence?: "live" | "fail";
            /** @description fields of a create that replace the run's (model, preamble, tools, tool_choice, limits, max_turns, metadata, ...): only those given */
            overrides?: components["schemas"]["RunFields"] | null;
            patch?: components["schemas"]["ForkPatch"] | null;
        };
        /**
         * ForkPatch
         * @description Changes to the conversation the fork starts from (the checkpoint's).
         */
        ForkPatch: {
            /**
             * Append
             * @description messages added after the checkpoint's (and the results above), in the `history` shape of a create
             */
            append?: components["schemas"]["HistoryMessage"][];
            /**
             * Tool Results
             * @description a recorded tool result to replace (in place), or the results of the calls the checkpoint waits for (all of them: the fork then starts with a model call)
             */
            tool_results?: components["schemas"]["ToolResultIn"][];
        };
        /** Health */
        Health: {
            /**
             * Status
             * @constant
             */
            status: "ok";
        };
        /** HeartbeatIn */
        HeartbeatIn: {
            /**
             * Lease Seconds
             * @description the lease's new length, from now
             * @default 60
             */
            lease_seconds?: number;
        };
        /** HistoryMessage */
        HistoryMessage: {
            /** Content */
            content: string | {
                [key: string]: components["schemas"]["JsonValue"];
            }[];
            /** Id */
            id?: string | null;
            /**
             * Role
             * @enum {string}
             */
            role: "system" | "user" | "assistant";
        };
        /**
         * HistoryMessageOut
         * @description A message in the shape `history` takes on `POST /v1/runs` (it can be sent back).
         */
        HistoryMessageOut: {
            /**
             * Content
             * @description text (system) or the message's items: `text`, `image`, `toolcall` and `reasoning` (assistant), `text`, `image` and `toolresult` (user)
             */
            content: string | {
                [key: string]: unknown;
            }[];
            /**
             * Id
             * @description the provider's message id (assistant)
             */
            id?: string | null;
            /**
             * Role
             * @enum {string}
             */
            role: "system" | "user" | "assistant";
        };
        /** InvalidToolCallPolicy */
        InvalidToolCallPolicy: {
            /**
             * Action
             * @default fail
             * @enum {string}
             */
            action?: "fail" | "retry" | "repair" | "skip" | "stop" | "ask";
            /** Feedback */
            feedback?: string | null;
            /**
             * Max Retries
             * @default 1
             */
            max_retries?: number;
            /** Reason */
            reason?: string | null;
            /** Repair To */
            repair_to?: {
                [key: string]: string;
            };
        };
        /** IssuedKeyOut */
        IssuedKeyOut: {
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /** Created By */
            created_by: string | null;
            /** Expires At */
            expires_at: string | null;
            /**
             * Id
             * @description the public lookup id (the secret's second part)
             */
            id: string;
            /** Name */
            name: string;
            /** Revoked At */
            revoked_at: string | null;
            role: components["schemas"]["Role"];
            /** Rotated From */
            rotated_from: string | null;
            /**
             * Secret
             * @description the bearer key: shown in this answer only, stored hashed
             */
            secret: string;
            /**
             * State
             * @description active, expiring (rotated, in its grace), expired, revoked
             */
            state: string;
            /** Tenant */
            tenant: string;
        };
        /** @description Any JSON value: integers within the 64-bit range, finite numbers, text without NUL or lone surrogates (I-JSON), nested at most 128 levels below the top of the request body. */
        JsonValue: null | boolean | number | string | unknown[] | Record<string, unknown>;
        /** KeyCreate */
        KeyCreate: {
            /**
             * Expires In Seconds
             * @description the key stops working this long after it is made (default: never)
             */
            expires_in_seconds?: number | null;
            /**
             * Name
             * @description what holds it
             */
            name: string;
            role: components["schemas"]["Role"];
        };
        /** KeyList */
        KeyList: {
            /** Data */
            data: components["schemas"]["KeyOut"][];
        };
        /** KeyOut */
        KeyOut: {
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /** Created By */
            created_by: string | null;
            /** Expires At */
            expires_at: string | null;
            /**
             * Id
             * @description the public lookup id (the secret's second part)
             */
            id: string;
            /** Name */
            name: string;
            /** Revoked At */
            revoked_at: string | null;
            role: components["schemas"]["Role"];
            /** Rotated From */
            rotated_from: string | null;
            /**
             * State
             * @description active, expiring (rotated, in its grace), expired, revoked
             */
            state: string;
            /** Tenant */
            tenant: string;
        };
        /** KeyRotate */
        KeyRotate: {
            /**
             * Grace Seconds
             * @description how long the old secret keeps working (0: not at all)
             * @default 3600
             */
            grace_seconds?: number;
        };
        /** LeasedCallOut */
        LeasedCallOut: {
            /** Arguments */
            arguments: unknown;
            /**
             * Attempt
             * @description 1 for the first lease of this call, 2 after one lapsed…
             */
            attempt: number;
            /**
             * Lease Expires At
             * Format: date-time
             */
            lease_expires_at: string;
            /**
             * Lease Token
             * @description names this lease in heartbeats and the result
             */
            lease_token: string;
            /** Name */
            name: string;
            /** Round */
            round: number;
            /** Run Id */
            run_id: string;
            /**
             * Tool Call Id
             * @description stable across leases: an idempotency key
             */
            tool_call_id: string;
        };
        /** LeasedResultIn */
        LeasedResultIn: {
            /**
             * Is Error
             * @default false
             */
            is_error?: boolean;
            /** Output */
            output: components["schemas"]["JsonValue"];
        };
        /** LeaseExtendedOut */
        LeaseExtendedOut: {
            /**
             * Lease Expires At
             * Format: date-time
             */
            lease_expires_at: string;
            /** Lease Token */
            lease_token: string;
        };
        /** LeaseIn */
        LeaseIn: {
            /**
             * Executor
             * @description who leases (recorded as the lease's owner)
             * @default
             */
            executor?: string;
            /**
             * Lease Seconds
             * @description how long the lease lasts unless extended by a heartbeat
             * @default 60
             */
            lease_seconds?: number;
            /**
             * Limit
             * @default 1
             */
            limit?: number;
            /**
             * Wait
             * @description seconds to wait for a call when none is leasable (0: look once)
             * @default 30
             */
            wait?: number;
        };
        /** LeaseOut */
        LeaseOut: {
            /**
             * Calls
             * @description empty when none came within `wait`
             */
            calls: components["schemas"]["LeasedCallOut"][];
        };
        /**
         * LimitsIn
         * @description `POST /v1/runs/{id}/limits`: the limits named are set (null removes one), the
         *     others are kept.
         */
        LimitsIn: {
            /**
             * Max Cost Usd
             * @description US dollars of every model call of the run (the model must be priced)
             */
            max_cost_usd?: number | null;
            /**
             * Max Duration Seconds
             * @description wall-clock seconds since the run was created, checked before each call
             */
            max_duration_seconds?: number | null;
            /**
             * Max Model Calls
             * @description model calls answered (each one billed)
             */
            max_model_calls?: number | null;
            /**
             * Max Total Tokens
             * @description input + output tokens of every model call of the run
             */
            max_total_tokens?: number | null;
        };
        /** LimitsOut */
        LimitsOut: {
            /** Max Concurrent */
            max_concurrent?: number | null;
            /** Requests Per Minute */
            requests_per_minute?: number | null;
            /** Tokens Per Minute */
            tokens_per_minute?: number | null;
        };
        /** LogMessageList */
        LogMessageList: {
            /** Data */
            data: components["schemas"]["LogMessageOut"][];
            /** Next Cursor */
            next_cursor: string | null;
        };
        /** LogMessageOut */
        LogMessageOut: {
            /**
             * Batch
             * @description the log batch that wrote it: 1 at the run's creation, then one per change that added messages
             */
            batch: number;
            /**
             * From History
             * @description a message of the history the run was given
             */
            from_history: boolean;
            /**
             * Index
             * @description the message's position among the log's messages, from 0
             */
            index: number;
            message: components["schemas"]["HistoryMessageOut"];
            /**
             * Replaces
             * @description its batch replaced the conversation so far (a compaction): the conversation is this batch's messages and what later batches add
             */
            replaces: boolean;
        };
        /** MessageList */
        MessageList: {
            /** Data */
            data: components["schemas"]["ConversationMessageOut"][];
            /** Next Cursor */
            next_cursor: string | null;
        };
        /**
         * ModelSpec
         * @description The provider, the model's name and its request parameters.
         */
        ModelSpec: {
            audio?: components["schemas"]["OpenaiAudio"] | null;
            /** @description parameters newer than this service, sent verbatim */
            extra_body?: {
                [key: string]: components["schemas"]["JsonValue"];
            };
            /** Frequency Penalty */
            frequency_penalty?: number | null;
            /** Logit Bias */
            logit_bias?: {
                [key: string]: number;
            } | null;
            /** Logprobs */
            logprobs?: boolean | null;
            /** Max Completion Tokens */
            max_completion_tokens?: number | null;
            /** Max Tokens */
            max_tokens?: number | null;
            /** Metadata */
            metadata?: {
                [key: string]: string;
            } | null;
            /** Modalities */
            modalities?: ("text" | "audio")[] | null;
            moderation?: components["schemas"]["OpenaiModeration"] | null;
            name: string;
            /** Parallel Tool Calls */
            parallel_tool_calls?: boolean;
            prediction?: components["schemas"]["OpenaiPrediction"] | null;
            /** Presence Penalty */
            presence_penalty?: number | null;
            /** Prompt Cache Key */
            prompt_cache_key?: string | null;
            prompt_cache_options?: components["schemas"]["OpenaiChatPromptCacheOptions"];
            /** Prompt Cache Retention */
            prompt_cache_retention?: ("in_memory" | "24h") | null;
            /** @constant */
            provider: "openai";
            /** Reasoning Effort */
            reasoning_effort?: ("none" | "minimal" | "low" | "medium" | "high" | "xhigh" | "max") | null;
            /** Response Format */
            response_format?: components["schemas"]["OpenaiFormatText"] | components["schemas"]["OpenaiFormatJSONSchema"] | components["schemas"]["OpenaiFormatJSONObject"];
            /** Safety Identifier */
            safety_identifier?: string | null;
            /** Seed */
            seed?: number | null;
            /** Service Tier */
            service_tier?: ("auto" | "default" | "flex" | "scale" | "priority" | "fast") | null;
            /** Stop */
            stop?: string | string[] | null;
            /** Temperature */
            temperature?: number | null;
            /** Top Logprobs */
            top_logprobs?: number | null;
            /** Top P */
            top_p?: number | null;
            /** User */
            user?: string;
            /** Verbosity */
            verbosity?: ("low" | "medium" | "high") | null;
            web_search_options?: components["schemas"]["OpenaiWebSearchOptions"];
        } | {
            access_programs?: components["schemas"]["OpenaiResponsesAccessPrograms"];
            /** Context Management */
            context_management?: components["schemas"]["OpenaiResponsesContextManagement"][] | null;
            /** @description parameters newer than this service, sent verbatim */
            extra_body?: {
                [key: string]: components["schemas"]["JsonValue"];
            };
            image?: components["schemas"]["OpenaiResponsesImageOptions"];
            /** Include */
            include?: ("code_interpreter_call.outputs" | "computer_call_output.output.image_url" | "file_search_call.results" | "message.input_image.image_url" | "message.output_text.logprobs" | "reasoning.encrypted_content" | "web_search_call.action.sources" | "web_search_call.results")[] | null;
            /** Max Output Tokens */
            max_output_tokens?: number | null;
            /** Max Tool Calls */
            max_tool_calls?: number | null;
            /** Metadata */
            metadata?: {
                [key: string]: string;
            } | null;
            moderation?: components["schemas"]["OpenaiResponsesModeration"] | null;
            name: string;
            /** Parallel Tool Calls */
            parallel_tool_calls?: boolean | null;
            prompt?: components["schemas"]["OpenaiResponsesPrompt"] | null;
            /** Prompt Cache Key */
            prompt_cache_key?: string | null;
            prompt_cache_options?: components["schemas"]["OpenaiResponsesResponsesPromptCacheOptions"];
            /** Prompt Cache Retention */
            prompt_cache_retention?: ("in_memory" | "24h") | null;
            /** @constant */
            provider: "openai_responses";
            reasoning?: components["schemas"]["OpenaiResponsesReasoning"] | null;
            /** Safety Identifier */
            safety_identifier?: string | null;
            /** Service Tier */
            service_tier?: ("auto" | "default" | "flex" | "scale" | "priority" | "fast" | "ultrafast") | null;
            /** Temperature */
            temperature?: number | null;
            text?: components["schemas"]["OpenaiResponsesTextConfig"];
            /** Top Logprobs */
            top_logprobs?: number | null;
            /** Top P */
            top_p?: number | null;
            /** Truncation */
            truncation?: ("auto" | "disabled") | null;
            /** User */
            user?: string;
        } | {
            cache_control?: components["schemas"]["AnthropicCacheControl"] | null;
            /** Container */
            container?: components["schemas"]["AnthropicContainer"] | string | null;
            diagnostics?: components["schemas"]["AnthropicDiagnostics"] | null;
            /** @description parameters newer than this service, sent verbatim */
            extra_body?: {
                [key: string]: components["schemas"]["JsonValue"];
            };
            /** Inference Geo */
            inference_geo?: string | null;
            /** Max Tokens */
            max_tokens?: number;
            metadata?: components["schemas"]["AnthropicMetadata"];
            name: string;
            output_config?: components["schemas"]["AnthropicOutputConfig"];
            /** @constant */
            provider: "anthropic";
            /**
             * Service Tier
             * @enum {string}
             */
            service_tier?: "auto" | "standard_only";
            /** Speed */
            speed?: ("standard" | "fast") | null;
            /** Stop Sequences */
            stop_sequences?: string[];
            /** Thinking */
            thinking?: components["schemas"]["AnthropicThinkingEnabled"] | components["schemas"]["AnthropicThinkingDisabled"] | components["schemas"]["AnthropicThinkingBetweenTools"] | components["schemas"]["AnthropicThinkingAdaptive"];
            /** User Profile Id */
            user_profile_id?: string;
            /** Workspace Id */
            workspace_id?: string;
        } | {
            /** Delay Ms */
            delay_ms?: number;
            /** Fail Times */
            fail_times?: number;
            /** Max Tokens */
            max_tokens?: number;
            name: string;
            /** @constant */
            provider: "scripted";
            /** Script */
            script?: components["schemas"]["ScriptedScriptEntry"][];
        };
        /** Audio */
        OpenaiAudio: {
            /**
             * Format
             * @enum {string}
             */
            format: "wav" | "aac" | "mp3" | "flac" | "opus" | "pcm16";
            /** Voice */
            voice: string | components["schemas"]["OpenaiVoiceID"];
        };
        /** ChatPromptCacheOptions */
        OpenaiChatPromptCacheOptions: {
            /**
             * Mode
             * @enum {string}
             */
            mode?: "implicit" | "explicit";
            /**
             * Ttl
             * @constant
             */
            ttl?: "30m";
        };
        /** ContentPartText */
        OpenaiContentPartText: {
            prompt_cache_breakpoint?: components["schemas"]["OpenaiPromptCacheBreakpoint"];
            /** Text */
            text: string;
            /**
             * Type
             * @constant
             */
            type: "text";
        };
        /** FormatJSONObject */
        OpenaiFormatJSONObject: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "json_object";
        };
        /** FormatJSONSchema */
        OpenaiFormatJSONSchema: {
            json_schema: components["schemas"]["OpenaiJSONSchema"];
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "json_schema";
        };
        /** FormatText */
        OpenaiFormatText: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "text";
        };
        /** JSONSchema */
        OpenaiJSONSchema: {
            /** Description */
            description?: string;
            /** Name */
            name: string;
            /** Schema */
            schema?: {
                [key: string]: components["schemas"]["JsonValue"];
            };
            /** Strict */
            strict?: boolean | null;
        };
        /** Moderation */
        OpenaiModeration: {
            /** Model */
            model: string;
            policy?: components["schemas"]["OpenaiModerationPolicy"] | null;
        };
        /** ModerationPolicy */
        OpenaiModerationPolicy: {
            input?: components["schemas"]["OpenaiModerationPolicyInput"] | null;
            output?: components["schemas"]["OpenaiModerationPolicyOutput"] | null;
        };
        /** ModerationPolicyInput */
        OpenaiModerationPolicyInput: {
            /**
             * Mode
             * @enum {string}
             */
            mode: "score" | "block";
        };
        /** ModerationPolicyOutput */
        OpenaiModerationPolicyOutput: {
            /**
             * Mode
             * @enum {string}
             */
            mode: "score" | "block";
        };
        /** Prediction */
        OpenaiPrediction: {
            /** Content */
            content: string | components["schemas"]["OpenaiContentPartText"][];
            /**
             * Type
             * @constant
             */
            type: "content";
        };
        /** PromptCacheBreakpoint */
        OpenaiPromptCacheBreakpoint: {
            /**
             * Mode
             * @constant
             */
            mode: "explicit";
            /**
             * Ttl
             * @enum {string}
             */
            ttl?: "30m" | "12h";
        };
        /** AccessPrograms */
        OpenaiResponsesAccessPrograms: {
            /**
             * Cyber
             * @enum {string}
             */
            cyber?: "standard" | "daybreak_blue" | "daybreak_red";
        };
        /** ContextManagement */
        OpenaiResponsesContextManagement: {
            /** Compact Threshold */
            compact_threshold?: number | null;
            /** Type */
            type: string;
        };
        /** FormatJSONObject */
        OpenaiResponsesFormatJSONObject: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "json_object";
        };
        /** FormatText */
        OpenaiResponsesFormatText: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "text";
        };
        /** FormatTextJSONSchema */
        OpenaiResponsesFormatTextJSONSchema: {
            /** Description */
            description?: string;
            /** Name */
            name: string;
            /** Schema */
            schema: {
                [key: string]: components["schemas"]["JsonValue"];
            };
            /** Strict */
            strict?: boolean | null;
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "json_schema";
        };
        /** ImageOptions */
        OpenaiResponsesImageOptions: {
            /**
             * Context Compression
             * @enum {string}
             */
            context_compression?: "auto" | "enabled" | "disabled";
        };
        /** InputFile */
        OpenaiResponsesInputFile: {
            /**
             * Detail
             * @enum {string}
             */
            detail?: "auto" | "low" | "high";
            /** File Data */
            file_data?: string;
            /** File Id */
            file_id?: string | null;
            /** File Url */
            file_url?: string;
            /** Filename */
            filename?: string;
            prompt_cache_breakpoint?: components["schemas"]["OpenaiResponsesPromptCacheBreakpoint"];
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "input_file";
        };
        /** InputImage */
        OpenaiResponsesInputImage: {
            /**
             * Detail
             * @enum {string}
             */
            detail: "low" | "high" | "auto" | "original";
            /** File Id */
            file_id?: string | null;
            /** Image Url */
            image_url?: string | null;
            prompt_cache_breakpoint?: components["schemas"]["OpenaiResponsesPromptCacheBreakpoint"];
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "input_image";
        };
        /** InputText */
        OpenaiResponsesInputText: {
            prompt_cache_breakpoint?: components["schemas"]["OpenaiResponsesPromptCacheBreakpoint"];
            /** Text */
            text: string;
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "input_text";
        };
        /** Moderation */
        OpenaiResponsesModeration: {
            /** Model */
            model: string;
            policy?: components["schemas"]["OpenaiResponsesModerationPolicy"] | null;
        };
        /** ModerationPolicy */
        OpenaiResponsesModerationPolicy: {
            input?: components["schemas"]["OpenaiResponsesModerationPolicyInput"] | null;
            output?: components["schemas"]["OpenaiResponsesModerationPolicyOutput"] | null;
        };
        /** ModerationPolicyInput */
        OpenaiResponsesModerationPolicyInput: {
            /**
             * Mode
             * @enum {string}
             */
            mode: "score" | "block";
        };
        /** ModerationPolicyOutput */
        OpenaiResponsesModerationPolicyOutput: {
            /**
             * Mode
             * @enum {string}
             */
            mode: "score" | "block";
        };
        /** Prompt */
        OpenaiResponsesPrompt: {
            /** Id */
            id: string;
            /** Variables */
            variables?: {
                [key: string]: string | (components["schemas"]["OpenaiResponsesInputText"] | components["schemas"]["OpenaiResponsesInputImage"] | components["schemas"]["OpenaiResponsesInputFile"]);
            } | null;
            /** Version */
            version?: string | null;
        };
        /** PromptCacheBreakpoint */
        OpenaiResponsesPromptCacheBreakpoint: {
            /**
             * Mode
             * @constant
             */
            mode: "explicit";
            /**
             * Ttl
             * @enum {string}
             */
            ttl?: "30m" | "12h";
        };
        /** Reasoning */
        OpenaiResponsesReasoning: {
            /** Context */
            context?: ("auto" | "current_turn" | "all_turns") | null;
            /** Effort */
            effort?: ("none" | "minimal" | "low" | "medium" | "high" | "xhigh" | "max") | null;
            /** Generate Summary */
            generate_summary?: ("auto" | "concise" | "detailed") | null;
            /** Mode */
            mode?: string;
            /** Summary */
            summary?: ("auto" | "concise" | "detailed") | null;
        };
        /** ResponsesPromptCacheOptions */
        OpenaiResponsesResponsesPromptCacheOptions: {
            /** Comparison Response Id */
            comparison_response_id?: string | null;
            /**
             * Mode
             * @enum {string}
             */
            mode?: "implicit" | "explicit";
            /** Prewarm */
            prewarm?: boolean;
            /**
             * Ttl
             * @enum {string}
             */
            ttl?: "30m" | "12h";
        };
        /** TextConfig */
        OpenaiResponsesTextConfig: {
            /** Format */
            format?: components["schemas"]["OpenaiResponsesFormatText"] | components["schemas"]["OpenaiResponsesFormatTextJSONSchema"] | components["schemas"]["OpenaiResponsesFormatJSONObject"];
            /** Verbosity */
            verbosity?: ("low" | "medium" | "high") | null;
        };
        /** UserLocation */
        OpenaiUserLocation: {
            approximate: components["schemas"]["OpenaiUserLocationApproximate"];
            /**
             * Type
             * @constant
             */
            type: "approximate";
        };
        /** UserLocationApproximate */
        OpenaiUserLocationApproximate: {
            /** City */
            city?: string;
            /** Country */
            country?: string;
            /** Region */
            region?: string;
            /** Timezone */
            timezone?: string;
        };
        /** VoiceID */
        OpenaiVoiceID: {
            /** Id */
            id: string;
        };
        /** WebSearchOptions */
        OpenaiWebSearchOptions: {
            /**
             * Search Context Size
             * @enum {string}
             */
            search_context_size?: "low" | "medium" | "high";
            user_location?: components["schemas"]["OpenaiUserLocation"] | null;
        };
        /** OutcomeOut */
        OutcomeOut: {
            /**
             * Outcome
             * @description started | skipped | buffered | failed (the run body was refused) | exists (the tick had a recorded outcome: nothing done)
             */
            outcome: string;
            /** Reason */
            reason: string | null;
            /**
             * Run Id
             * @description the run started, or the one still running
             */
            run_id: string | null;
            /**
             * Scheduled Time
             * Format: date-time
             */
            scheduled_time: string;
        };
        /** Outcomes */
        Outcomes: {
            /** Data */
            data: components["schemas"]["OutcomeOut"][];
        };
        /** PauseIn */
        PauseIn: {
            /**
             * Note
             * @description why
             */
            note?: string | null;
        };
        /**
         * Problem
         * @description RFC 9457 problem details.
         */
        Problem: {
            /** Detail */
            detail: string;
            /** Instance */
            instance?: string | null;
            /** Status */
            status: number;
            /** Title */
            title: string;
            /** Type */
            type: string;
        } & {
            [key: string]: unknown;
        };
        /** ProviderOut */
        ProviderOut: {
            /**
             * Base Url
             * @description the endpoint (admins only; null for others)
             */
            base_url?: string | null;
            limits: components["schemas"]["LimitsOut"];
            /** Model Limits */
            model_limits: {
                [key: string]: components["schemas"]["LimitsOut"];
            };
            /**
             * Models
             * @description the models a run may ask for; null: any
             */
            models: string[] | null;
            /**
             * Name
             * @description what a run's `model.provider` names
             */
            name: string;
            /**
             * Wire
             * @description openai_chat, openai_responses, anthropic or scripted
             */
            wire: string;
        };
        /** ProvidersOut */
        ProvidersOut: {
            /** Data */
            data: components["schemas"]["ProviderOut"][];
        };
        /** RaiseLimits */
        RaiseLimits: {
            /** Allowed */
            allowed: number;
            /**
             * Limit
             * @description the limit the next model call could pass
             */
            limit: string;
            /**
             * Needed
             * @description the least the next call needs, where known
             */
            needed: number | null;
            /**
             * Scope
             * @description whose limit: `run`, `tenant`, `deployment` or `tree` (the root's limits, which cover its descendants: raise them on the root)
             */
            scope: string;
            /** Spent */
            spent: number;
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "raise_limits";
        };
        /**
         * ResolutionIn
         * @description The answer to a parked invalid tool call (`waiting_reason = resolution`).
         */
        ResolutionIn: {
            /**
             * Action
             * @enum {string}
             */
            action: "fail" | "retry" | "repair" | "skip" | "stop";
            /** Feedback */
            feedback?: string | null;
            /** Reason */
            reason?: string | null;
            /** Tool Name */
            tool_name?: string | null;
        };
        /** ResolveInvalidToolCall */
        ResolveInvalidToolCall: {
            /** Arguments */
            arguments: string;
            /** Tool Call Id */
            tool_call_id: string | null;
            /** Tool Name */
            tool_name: string;
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "resolve_invalid_tool_call";
        };
        /**
         * Role
         * @enum {string}
         */
        Role: "admin" | "operator" | "creator" | "executor" | "viewer";
        /** RotatedOut */
        RotatedOut: {
            new: components["schemas"]["IssuedKeyOut"];
            /** @description the key rotated: it works until its `expires_at` */
            old: components["schemas"]["KeyOut"];
        };
        /** RunCreate */
        RunCreate: {
            /**
             * Agent
             * @description start the run from this named agent of the tenant (`name`: its latest version; `name@2`: that version): its fields are the run's, and the body may add or narrow only `metadata` (merged over the agent's), `limits` (each at most the agent's), `webhook`, `priority`, `expires_in`, `stream` and `history`
             */
            agent?: string | null;
            /**
             * Approval
             * @description the approval policy of the tools that name none (default `never`)
             */
            approval?: ("never" | "always") | components["schemas"]["ApprovalRule"] | null;
            /**
             * Approval On Timeout
             * @description the decision a call that waited too long gets (`reject`)
             */
            approval_on_timeout?: ("reject" | "approve") | null;
            /**
             * Approval Timeout
             * @description seconds a gated call waits for a decision before it gets `approval_on_timeout` (default: it waits as long as the run does)
             */
            approval_timeout?: number | null;
            /** @description context compaction for long runs: past `threshold_tokens`, older turns are replaced by a summary before the next model call (the run's log keeps them) */
            compaction?: components["schemas"]["CompactionPolicy"] | null;
            /** Expires In */
            expires_in?: number | null;
            /** History */
            history?: components["schemas"]["HistoryMessage"][];
            /**
             * If Busy
             * @description with `previous_run_id`, when the conversation's latest run is still active: `reject` (409 naming it), `enqueue` (this run waits and starts when that one ends, continuing from it) or `interrupt` (that run is cancelled and this one continues from its last durable point)
             * @default reject
             * @enum {string}
             */
            if_busy?: "reject" | "enqueue" | "interrupt";
            invalid_tool_call?: components["schemas"]["InvalidToolCallPolicy"];
            /** @description the run's budget, checked before each model call */
            limits?: components["schemas"]["RunLimits"] | null;
            /** Max Turns */
            max_turns?: number | null;
            /** Metadata */
            metadata?: {
                [key: string]: components["schemas"]["JsonValue"];
            };
            model?: components["schemas"]["ModelSpec"];
            /**
             * Output Schema
             * @description structured output: a JSON Schema of an object. The model is offered the tool `final_output` with it as parameters, and the run completes when it calls it (its `output`: the arguments as JSON; a call missing a required field is asked again, up to 2 times) or answers with JSON text that holds the required fields
             */
            output_schema?: {
                [key: string]: components["schemas"]["JsonValue"];
            } | null;
            /** Preamble */
            preamble?: string | null;
            /**
             * Previous Run Id
             * @description Continue the conversation of this earlier run, which must be `completed` (else 409 `run-state-conflict` naming its status; 404 if there is no such run). Its whole conversation (its `history`, prompt and messages) becomes this run's history, followed by this run's `history` (if any) and `prompt`. These fields are taken from the earlier run unless this body sets them (a field present, `null` or `[]` included, overrides): `model`, `output_schema`, `preamble`, `tools`, `tool_choice`, `tool_concurrency`, `invalid_tool_call`, `webhook`, `tool_queue`, `approval`, `approval_timeout`, `approval_on_timeout`, `compaction`. The others (`max_turns`, `expires_in`, `metadata`, `stream`) are this run's own, with their usual defaults. The run's `conversation_id` is the first run's id. `model` is required unless this is set (else 422 `invalid-request`).
             */
            previous_run_id?: string | null;
            /**
             * Priority
             * @description claim order: a queued run of higher priority goes first; within one priority, fair keys (tenants) take turns
             * @default 0
             */
            priority?: number;
            /** Prompt */
            prompt: string;
            /**
             * Stream
             * @default false
             */
            stream?: boolean;
            /** Tool Choice */
            tool_choice?: ("auto" | "none" | "required") | components["schemas"]["SpecificTool"] | null;
            /**
             * Tool Concurrency
             * @default 1
             */
            tool_concurrency?: number;
            /**
             * Tool Queue
             * @description the run's tool calls are leased by executors of this queue (`POST /v1/queues/{queue}/lease`) instead of being answered by whoever answers the run; a tool's own `queue` overrides it
             */
            tool_queue?: string | null;
            /** Tools */
            tools?: components["schemas"]["ToolDef"][];
            webhook?: components["schemas"]["WebhookSpec"] | null;
        };
        /**
         * RunFields
         * @description The fields that configure a run: a create's (`RunCreate`) and a named agent's
         *     (app.agents), defined once.
         */
        RunFields: {
            /**
             * Approval
             * @description the approval policy of the tools that name none (default `never`)
             */
            approval?: ("never" | "always") | components["schemas"]["ApprovalRule"] | null;
            /**
             * Approval On Timeout
             * @description the decision a call that waited too long gets (`reject`)
             */
            approval_on_timeout?: ("reject" | "approve") | null;
            /**
             * Approval Timeout
             * @description seconds a gated call waits for a decision before it gets `approval_on_timeout` (default: it waits as long as the run does)
             */
            approval_timeout?: number | null;
            /** @description context compaction for long runs: past `threshold_tokens`, older turns are replaced by a summary before the next model call (the run's log keeps them) */
            compaction?: components["schemas"]["CompactionPolicy"] | null;
            /** Expires In */
            expires_in?: number | null;
            invalid_tool_call?: components["schemas"]["InvalidToolCallPolicy"];
            /** @description the run's budget, checked before each model call */
            limits?: components["schemas"]["RunLimits"] | null;
            /** Max Turns */
            max_turns?: number | null;
            /** Metadata */
            metadata?: {
                [key: string]: components["schemas"]["JsonValue"];
            };
            model?: components["schemas"]["ModelSpec"];
            /**
             * Output Schema
             * @description structured output: a JSON Schema of an object. The model is offered the tool `final_output` with it as parameters, and the run completes when it calls it (its `output`: the arguments as JSON; a call missing a required field is asked again, up to 2 times) or answers with JSON text that holds the required fields
             */
            output_schema?: {
                [key: string]: components["schemas"]["JsonValue"];
            } | null;
            /** Preamble */
            preamble?: string | null;
            /**
             * Priority
             * @description claim order: a queued run of higher priority goes first; within one priority, fair keys (tenants) take turns
             * @default 0
             */
            priority?: number;
            /**
             * Stream
             * @default false
             */
            stream?: boolean;
            /** Tool Choice */
            tool_choice?: ("auto" | "none" | "required") | components["schemas"]["SpecificTool"] | null;
            /**
             * Tool Concurrency
             * @default 1
             */
            tool_concurrency?: number;
            /**
             * Tool Queue
             * @description the run's tool calls are leased by executors of this queue (`POST /v1/queues/{queue}/lease`) instead of being answered by whoever answers the run; a tool's own `queue` overrides it
             */
            tool_queue?: string | null;
            /** Tools */
            tools?: components["schemas"]["ToolDef"][];
            webhook?: components["schemas"]["WebhookSpec"] | null;
        };
        /**
         * RunLimits
         * @description A run's `limits` (each optional; unset: unlimited). Stored in `runs.limits`.
         */
        RunLimits: {
            /**
             * Max Cost Usd
             * @description US dollars of every model call of the run (the model must be priced)
             */
            max_cost_usd?: number | null;
            /**
             * Max Duration Seconds
             * @description wall-clock seconds since the run was created, checked before each call
             */
            max_duration_seconds?: number | null;
            /**
             * Max Model Calls
             * @description model calls answered (each one billed)
             */
            max_model_calls?: number | null;
            /**
             * Max Total Tokens
             * @description input + output tokens of every model call of the run
             */
            max_total_tokens?: number | null;
        };
        /** RunList */
        RunList: {
            /** Data */
            data: components["schemas"]["RunOut"][];
            /** Next Cursor */
            next_cursor: string | null;
        };
        /** RunOut */
        RunOut: {
            /**
             * Agent
             * @description the named agent the run started from: `{"name", "version"}`
             */
            agent?: {
                [key: string]: unknown;
            } | null;
            /** Attempts */
            attempts: number;
            /**
             * Conversation Id
             * @description the first run of this run's conversation (its own id unless it continues one)
             */
            conversation_id: string;
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /**
             * Depth
             * @description its depth in its tree (0: a root)
             * @default 0
             */
            depth?: number;
            /** Error */
            error: {
                [key: string]: unknown;
            } | null;
            /** Expires At */
            expires_at: string | null;
            /**
             * Forked From
             * @description the run and checkpoint this fork was made from: `{"run_id", "checkpoint", "mode", "on_divergence"}` (`POST /v1/runs/{id}/fork`); `null` for other runs
             */
            forked_from?: {
                [key: string]: unknown;
            } | null;
            /** Id */
            id: string;
            /**
             * Limits
             * @description the run's budget (`limits` at create, as changed since)
             */
            limits?: {
                [key: string]: unknown;
            } | null;
            /** Max Turns */
            max_turns: number;
            /** Metadata */
            metadata: {
                [key: string]: unknown;
            };
            /** Model */
            model: {
                [key: string]: unknown;
            };
            /**
             * Origin
             * @description the open protocol the run was started over: `{"protocol": "a2a", "message_id"}` or `{"protocol": "ag-ui", "thread_id", "run_id"}`; `null` for the API
             */
            origin?: {
                [key: string]: unknown;
            } | null;
            /** Output */
            output: string | null;
            /**
             * Parent Run Id
             * @description a child run's parent (whose agent tool's call started it)
             */
            parent_run_id?: string | null;
            /**
             * Parent Tool Call Id
             * @description the parent's call this child run answers
             */
            parent_tool_call_id?: string | null;
            /**
             * Previous Run Id
             * @description the run this one continues (`previous_run_id` on create)
             */
            previous_run_id?: string | null;
            /**
             * Priority
             * @description claim order: higher first (-100..100)
             * @default 0
             */
            priority?: number;
            /**
             * Queue
             * @description a queued run's place, on a read of the run: `position` (how many due runs the claim takes first), `ahead_higher_priority`, `reason` (`next`, `higher_priority`, `fair_share`, `not_due`) and `available_at`
             */
            queue?: {
                [key: string]: unknown;
            } | null;
            /** Required Action */
            required_action?: (components["schemas"]["SubmitToolResults"] | components["schemas"]["ApproveToolCalls"] | components["schemas"]["ResolveInvalidToolCall"] | components["schemas"]["RaiseLimits"]) | null;
            /**
             * Root Run Id
             * @description the root of the run's tree (its own id unless it is a child)
             * @default
             */
            root_run_id?: string;
            /**
             * Schedule
             * @description the schedule tick that started the run: `{"key", "scheduled_time"}`
             */
            schedule?: {
                [key: string]: unknown;
            } | null;
            status: components["schemas"]["RunStatus"];
            /**
             * Tree Usage
             * @description on a read of one run that is part of a tree: its usage added to its descendants' (exact to the token; `usage` is its own)
             */
            tree_usage?: {
                [key: string]: unknown;
            } | null;
            /** Turn */
            turn: number;
            /**
             * Updated At
             * Format: date-time
             */
            updated_at: string;
            /** Usage */
            usage: {
                [key: string]: unknown;
            } | null;
            /** Waiting Reason */
            waiting_reason: {
                [key: string]: unknown;
            } | null;
        };
        /**
         * RunStatus
         * @enum {string}
         */
        RunStatus: "queued" | "running" | "requires_action" | "completed" | "failed" | "cancelled" | "expired";
        /**
         * ScheduleIn
         * @description A new schedule of the caller's tenant.
         */
        ScheduleIn: {
            /**
             * Catchup
             * @description ticks missed while no worker ran (more than 60 s late): `skip` (none fires), `latest` (the newest one within the window fires), `all` (every one within the window fires, oldest first); ticks older than `catchup_window_seconds` never fire
             * @default latest
             * @enum {string}
             */
            catchup?: "skip" | "latest" | "all";
            /**
             * Catchup Window Seconds
             * @default 86400
             */
            catchup_window_seconds?: number;
            /**
             * Cron
             * @description 5 fields (minute hour day-of-month month day-of-week; `L` is a month's last day) or @yearly, @monthly, @weekly, @daily, @hourly
             * @example 0 6 * * 1-5
             */
            cron: string;
            /**
             * End At
             * @description no tick after it
             */
            end_at?: string | null;
            /**
             * Jitter Seconds
             * @description each tick fires up to this many seconds late (the same delay on every worker); its scheduled time is unchanged
             * @default 0
             */
            jitter_seconds?: number;
            /**
             * Key
             * @description unique in the tenant; part of URLs
             */
            key: string;
            /**
             * Note
             * @description why it is paused
             */
            note?: string | null;
            /**
             * Overlap
             * @description when a tick comes while the schedule's last run has not ended: `skip` (the tick is recorded skipped), `buffer_one` (it starts when that run ends; one tick is kept, later ones are skipped), `allow_all` (it starts anyway), `cancel_other` (that run is cancelled, then this one starts)
             * @default skip
             * @enum {string}
             */
            overlap?: "skip" | "buffer_one" | "allow_all" | "cancel_other";
            /**
             * Paused
             * @default false
             */
            paused?: boolean;
            /** @description the run each tick starts: a run's create body (an `agent` with a prompt, or inline fields), without `previous_run_id` */
            run: components["schemas"]["RunCreate"];
            /**
             * Start At
             * @description no tick before it
             */
            start_at?: string | null;
            /**
             * Timezone
             * @description the IANA zone the expression is read in (DST: a time in a skipped hour fires once after the jump; in a repeated hour, once)
             * @default UTC
             * @example Europe/Berlin
             */
            timezone?: string;
        };
        /** ScheduleList */
        ScheduleList: {
            /** Data */
            data: components["schemas"]["ScheduleOut"][];
            /** Next Cursor */
            next_cursor: string | null;
        };
        /** ScheduleOut */
        ScheduleOut: {
            /**
             * Buffered Time
             * @description buffer_one: the tick that starts when the last run ends
             */
            buffered_time: string | null;
            /** Catchup */
            catchup: string;
            /** Catchup Window Seconds */
            catchup_window_seconds: number;
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /** Created By */
            created_by: string | null;
            /** Cron */
            cron: string;
            /** End At */
            end_at: string | null;
            /** Jitter Seconds */
            jitter_seconds: number;
            /** Key */
            key: string;
            /**
             * Last Run Id
             * @description the last run the schedule started
             */
            last_run_id: string | null;
            /**
             * Next Fire At
             * @description the next tick's scheduled time (UTC); null once there is none
             */
            next_fire_at: string | null;
            /**
             * Next Fire At Local
             * @description the same time in the schedule's zone
             */
            next_fire_at_local: string | null;
            /** Note */
            note: string | null;
            /** Overlap */
            overlap: string;
            /** Paused */
            paused: boolean;
            /**
             * Run
             * @description the run each tick starts, as given
             */
            run: {
                [key: string]: unknown;
            };
            /** Start At */
            start_at: string | null;
            /** Timezone */
            timezone: string;
            /**
             * Updated At
             * Format: date-time
             */
            updated_at: string;
        };
        /**
         * SchedulePatch
         * @description The fields to change; a change of `cron`, `timezone`, `start_at` or `end_at`
         *     plans the next tick again from now.
         */
        SchedulePatch: {
            /** Catchup */
            catchup?: ("skip" | "latest" | "all") | null;
            /** Catchup Window Seconds */
            catchup_window_seconds?: number | null;
            /** Cron */
            cron?: string | null;
            /** End At */
            end_at?: string | null;
            /** Jitter Seconds */
            jitter_seconds?: number | null;
            /** Note */
            note?: string | null;
            /** Overlap */
            overlap?: ("skip" | "buffer_one" | "allow_all" | "cancel_other") | null;
            run?: components["schemas"]["RunCreate"] | null;
            /** Start At */
            start_at?: string | null;
            /** Timezone */
            timezone?: string | null;
        };
        /** ScriptedCall */
        ScriptedScriptedCall: {
            /** Arguments */
            arguments?: components["schemas"]["JsonValue"];
            /** Id */
            id?: string;
            /** Name */
            name: string;
        };
        /** ScriptedUsage */
        ScriptedScriptedUsage: {
            /** Input Tokens */
            input_tokens?: number;
            /** Output Tokens */
            output_tokens?: number;
        };
        /** ScriptEntry */
        ScriptedScriptEntry: {
            /** Finish Reason */
            finish_reason?: string;
            /** Text */
            text?: string;
            /** Tool Calls */
            tool_calls?: components["schemas"]["ScriptedScriptedCall"][];
            usage?: components["schemas"]["ScriptedScriptedUsage"];
        };
        /** SpecificTool */
        SpecificTool: {
            /** Name */
            name: string;
        };
        /** SubmitToolResults */
        SubmitToolResults: {
            /** Callback Url */
            callback_url: string | null;
            /** Tool Calls */
            tool_calls: components["schemas"]["ToolCallOut"][];
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "submit_tool_results";
        };
        /** TenantCreate */
        TenantCreate: {
            /** Id */
            id: string;
            limits?: components["schemas"]["TenantLimits"];
            /** Name */
            name?: string | null;
        };
        /**
         * TenantLimits
         * @description What a tenant may use; each limit unset means unlimited. Stored in `tenants.limits`.
         */
        TenantLimits: {
            /**
             * Daily Cost Usd
             * @description model cost per UTC day, in US dollars
             */
            daily_cost_usd?: number | null;
            /**
             * Daily Tokens
             * @description model tokens per UTC day
             */
            daily_tokens?: number | null;
            /**
             * Max Active Runs
             * @description runs queued, running or suspended
             */
            max_active_runs?: number | null;
            /**
             * Max Concurrent
             * @description model calls in flight at once, over every worker
             */
            max_concurrent?: number | null;
            /**
             * Requests Per Minute
             * @description model calls per minute, over every worker
             */
            requests_per_minute?: number | null;
            /**
             * Tokens Per Minute
             * @description model tokens per minute (reserved at most, corrected)
             */
            tokens_per_minute?: number | null;
        };
        /** TenantList */
        TenantList: {
            /** Data */
            data: components["schemas"]["TenantOut"][];
        };
        /** TenantOut */
        TenantOut: {
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /** Disabled At */
            disabled_at: string | null;
            /** Id */
            id: string;
            limits: components["schemas"]["TenantLimits"];
            /** Name */
            name: string;
        };
        /** TenantPatch */
        TenantPatch: {
            /**
             * Disabled
             * @description true: its keys are refused
             */
            disabled?: boolean | null;
            /** @description the limits named are set (null: unlimited), others kept */
            limits?: components["schemas"]["TenantLimits"] | null;
            /** Name */
            name?: string | null;
        };
        /** TickList */
        TickList: {
            /** Data */
            data: components["schemas"]["TickOut"][];
            /**
             * Next Cursor
             * @description `before` for the next (older) page
             */
            next_cursor: string | null;
        };
        /** TickOut */
        TickOut: {
            /**
             * Count
             * @description missed: how many ticks (from this one to `last_time`)
             */
            count: number;
            /** Last Time */
            last_time: string | null;
            /**
             * Outcome
             * @description started | skipped | buffered | missed | failed
             */
            outcome: string;
            /**
             * Reason
             * @description overlap | buffer_full | superseded | catchup | catchup_window | why the run was refused
             */
            reason: string | null;
            /**
             * Recorded At
             * Format: date-time
             */
            recorded_at: string;
            /** Run Id */
            run_id: string | null;
            /**
             * Scheduled Time
             * Format: date-time
             */
            scheduled_time: string;
            /**
             * Source
             * @description cron | trigger | backfill
             */
            source: string;
        };
        /** ToolCallOut */
        ToolCallOut: {
            /**
             * Answered
             * @default false
             */
            answered?: boolean;
            /** Arguments */
            arguments: unknown;
            /** Id */
            id: string;
            /** Name */
            name: string;
            /**
             * Queue
             * @description the queue whose executors lease this call, if any
             */
            queue?: string | null;
        };
        /** ToolDef */
        ToolDef: {
            /**
             * Agent
             * @description an agent tool: each call starts a child run of this named agent of the tenant (`name`: its latest version when called; `name@2`: that version), whose outcome answers the call; its `parameters` default to one string `input` (the child's prompt; other parameters: the arguments as JSON are its prompt)
             */
            agent?: string | null;
            /**
             * Approval
             * @description which calls of this tool wait for approval: `never`, `always`, or `{"when": <JSON Schema>}` (default: the run's `approval`)
             */
            approval?: ("never" | "always") | components["schemas"]["ApprovalRule"] | null;
            /**
             * Description
             * @default
             */
            description?: string;
            /** Name */
            name: string;
            /** Parameters */
            parameters?: {
                [key: string]: components["schemas"]["JsonValue"];
            };
            /**
             * Queue
             * @description executors of this queue lease this tool's calls (overrides the run's `tool_queue`)
             */
            queue?: string | null;
        };
        /** ToolResultIn */
        ToolResultIn: {
            /**
             * Is Error
             * @default false
             */
            is_error?: boolean;
            /** Output */
            output: components["schemas"]["JsonValue"];
            /** Tool Call Id */
            tool_call_id: string;
        };
        /** ToolResultsIn */
        ToolResultsIn: {
            /** Results */
            results: components["schemas"]["ToolResultIn"][];
        };
        /** ToolResultsOut */
        ToolResultsOut: {
            /**
             * Accepted
             * @description tool call ids newly answered by this request
             */
            accepted: string[];
            /**
             * Resumed
             * @description true when this request answered the last pending call
             */
            resumed: boolean;
            run: components["schemas"]["RunOut"];
        };
        /** TriggerIn */
        TriggerIn: {
            /**
             * Overlap
             * @description if the schedule's last run has not ended (default: start anyway)
             * @default allow_all
             * @enum {string}
             */
            overlap?: "skip" | "buffer_one" | "allow_all" | "cancel_other";
        };
        /** UsageOut */
        UsageOut: {
            /**
             * By Model
             * @description keyed by provider:model
             */
            by_model: {
                [key: string]: components["schemas"]["UsageTotals"];
            };
            /**
             * By Status
             * @description by the run's current status
             */
            by_status: {
                [key: string]: components["schemas"]["UsageTotals"];
            };
            /** Cached Input Tokens */
            cached_input_tokens: number;
            /**
             * Calls
             * @description model call attempts, failed ones included
             */
            calls: number;
            /**
             * Cost Usd
             * @description null when no price is configured
             */
            cost_usd: number | null;
            /** Failed Calls */
            failed_calls: number;
            /**
             * From
             * Format: date-time
             */
            from: string;
            /** Input Tokens */
            input_tokens: number;
            /** Output Tokens */
            output_tokens: number;
            /** Reasoning Tokens */
            reasoning_tokens: number;
            /**
             * To
             * Format: date-time
             */
            to: string;
            /** Total Tokens */
            total_tokens: number;
        };
        /** UsageTotals */
        UsageTotals: {
            /** Cached Input Tokens */
            cached_input_tokens: number;
            /**
             * Calls
             * @description model call attempts, failed ones included
             */
            calls: number;
            /**
             * Cost Usd
             * @description null when no price is configured
             */
            cost_usd: number | null;
            /** Failed Calls */
            failed_calls: number;
            /** Input Tokens */
            input_tokens: number;
            /** Output Tokens */
            output_tokens: number;
            /** Reasoning Tokens */
            reasoning_tokens: number;
            /** Total Tokens */
            total_tokens: number;
        };
        /** WebhookSpec */
        WebhookSpec: {
            /** Url */
            url: string;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    healthz_healthz_get: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    metrics_metrics_get: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    readyz_readyz_get: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    list_agents_v1_agents_get: {
        parameters: {
            query?: {
                /** @description `next_cursor` of the page before */
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentList"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    create_agent_v1_agents_post: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AgentIn"];
            };
        };
        responses: {
            /** @description Successful Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An agent with this name exists; The schedule kept changing; A schedule with this key exists; A tenant with this id exists; Run is not in a state that allows this; A different result was already submitted for this tool call; The decision was made on other arguments; The fork would split a tool call from its result; A different decision was already made for this tool call; A request with this idempotency key is still being processed; The tool call's lease was lost */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    get_agent_v1_agents__name__get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description an agent's name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentOut"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    update_agent_v1_agents__name__put: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description an agent's name */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AgentUpdate"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    delete_agent_v1_agents__name__delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description an agent's name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    list_versions_v1_agents__name__versions_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description an agent's name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentList"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    get_version_v1_agents__name__versions__version__get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description an agent's name */
                name: string;
                /** @description a version of the agent */
                version: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentOut"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    pending_approvals_v1_approvals_get: {
        parameters: {
            query?: {
                /** @description `next_cursor` of the previous page (opaque); a cursor this service did not make is refused with 422 `invalid-request` */
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApprovalList"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    callback_tool_results_v1_callbacks__token__tool_results_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                token: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ToolResultsIn"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ToolResultsOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An agent with this name exists; The schedule kept changing; A schedule with this key exists; A tenant with this id exists; Run is not in a state that allows this; A different result was already submitted for this tool call; The decision was made on other arguments; The fork would split a tool call from its result; A different decision was already made for this tool call; A request with this idempotency key is still being processed; The tool call's lease was lost */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    list_keys_v1_keys_get: {
        parameters: {
            query?: {
                /** @description another tenant's keys (needs tenants:manage); default: the caller's */
                tenant?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["KeyList"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    create_key_v1_keys_post: {
        parameters: {
            query?: {
                /** @description another tenant's keys (needs tenants:manage); default: the caller's */
                tenant?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["KeyCreate"];
            };
        };
        responses: {
            /** @description Successful Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IssuedKeyOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    get_key_v1_keys__key_id__get: {
        parameters: {
            query?: {
                /** @description another tenant's keys (needs tenants:manage); default: the caller's */
                tenant?: string;
            };
            header?: never;
            path: {
                /** @description a key's lookup id */
                key_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["KeyOut"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    revoke_key_v1_keys__key_id__revoke_post: {
        parameters: {
            query?: {
                /** @description another tenant's keys (needs tenants:manage); default: the caller's */
                tenant?: string;
            };
            header?: never;
            path: {
                /** @description a key's lookup id */
                key_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["KeyOut"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    rotate_key_v1_keys__key_id__rotate_post: {
        parameters: {
            query?: {
                /** @description another tenant's keys (needs tenants:manage); default: the caller's */
                tenant?: string;
            };
            header?: never;
            path: {
                /** @description a key's lookup id */
                key_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["KeyRotate"] | null;
            };
        };
        responses: {
            /** @description Successful Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RotatedOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    list_providers_v1_providers_get: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProvidersOut"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    lease_v1_queues__queue__lease_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the queue's name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["LeaseIn"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LeaseOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    heartbeat_v1_queues__queue__leases__lease_token__heartbeat_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a call's `lease_token`, from its lease */
                lease_token: string;
                /** @description the queue's name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["HeartbeatIn"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LeaseExtendedOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An agent with this name exists; The schedule kept changing; A schedule with this key exists; A tenant with this id exists; Run is not in a state that allows this; A different result was already submitted for this tool call; The decision was made on other arguments; The fork would split a tool call from its result; A different decision was already made for this tool call; A request with this idempotency key is still being processed; The tool call's lease was lost */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    result_v1_queues__queue__leases__lease_token__result_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a call's `lease_token`, from its lease */
                lease_token: string;
                /** @description the queue's name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["LeasedResultIn"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ToolResultsOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An agent with this name exists; The schedule kept changing; A schedule with this key exists; A tenant with this id exists; Run is not in a state that allows this; A different result was already submitted for this tool call; The decision was made on other arguments; The fork would split a tool call from its result; A different decision was already made for this tool call; A request with this idempotency key is still being processed; The tool call's lease was lost */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    list_runs_v1_runs_get: {
        parameters: {
            query?: {
                /** @description `next_cursor` of the previous page (opaque); a cursor this service did not make is refused with 422 `invalid-request` */
                cursor?: string;
                limit?: number;
                /** @description only the runs of this tree: its root and every descendant */
                root_run_id?: string;
                status?: components["schemas"]["RunStatus"];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunList"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    create_run_v1_runs_post: {
        parameters: {
            query?: never;
            header?: {
                "idempotency-key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RunCreate"];
            };
        };
        responses: {
            /** @description Idempotent replay: the run already made */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunOut"];
                };
            };
            /** @description Successful Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An agent with this name exists; The schedule kept changing; A schedule with this key exists; A tenant with this id exists; Run is not in a state that allows this; A different result was already submitted for this tool call; The decision was made on other arguments; The fork would split a tool call from its result; A different decision was already made for this tool call; A request with this idempotency key is still being processed; The tool call's lease was lost */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    get_run_v1_runs__run_id__get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a run id */
                run_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunOut"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    run_approvals_v1_runs__run_id__approvals_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a run id */
                run_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApprovalList"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    decide_v1_runs__run_id__approvals_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a run id */
                run_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["DecisionsIn"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An agent with this name exists; The schedule kept changing; A schedule with this key exists; A tenant with this id exists; Run is not in a state that allows this; A different result was already submitted for this tool call; The decision was made on other arguments; The fork would split a tool call from its result; A different decision was already made for this tool call; A request with this idempotency key is still being processed; The tool call's lease was lost */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    create_browser_token_v1_runs__run_id__browser_tokens_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a run id */
                run_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["BrowserTokenIn"] | null;
            };
        };
        responses: {
            /** @description Successful Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BrowserTokenOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    cancel_v1_runs__run_id__cancel_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a run id */
                run_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunOut"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An agent with this name exists; The schedule kept changing; A schedule with this key exists; A tenant with this id exists; Run is not in a state that allows this; A different result was already submitted for this tool call; The decision was made on other arguments; The fork would split a tool call from its result; A different decision was already made for this tool call; A request with this idempotency key is still being processed; The tool call's lease was lost */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    list_checkpoints_v1_runs__run_id__checkpoints_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a run id */
                run_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CheckpointList"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    list_children_v1_runs__run_id__children_get: {
        parameters: {
            query?: {
                /** @description `next_cursor` of the previous page (opaque); a cursor this service did not make is refused with 422 `invalid-request` */
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path: {
                /** @description a run id */
                run_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunList"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    events_v1_runs__run_id__events_get: {
        parameters: {
            query?: {
                /** @description a browser token (`POST /v1/runs/{run_id}/browser-tokens`), for clients that cannot send headers (EventSource); never an API key */
                access_token?: string;
                after?: number;
                /** @description with `tree=true`: the `next_cursor` of the previous page, or a streamed event's `id` (opaque) */
                cursor?: string;
                /** @description the most events a page holds */
                limit?: number;
                /** @description the run's events and every descendant's, each with `run_id` */
                tree?: boolean;
            };
            header?: {
                /** @description the `id` of the last event received: a `seq` (with `tree=true`, a cursor) */
                "last-event-id"?: string;
            };
            path: {
                /** @description a run id */
                run_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The event log as JSON; with `Accept: text/event-stream`, server-sent events from `Last-Event-ID` (or `after`), live until the run ends. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventList"];
                    "text/event-stream": string;
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    fork_run_v1_runs__run_id__fork_post: {
        parameters: {
            query?: never;
            header?: {
                "idempotency-key"?: string;
            };
            path: {
                /** @description a run id */
                run_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ForkIn"];
            };
        };
        responses: {
            /** @description Idempotent replay: the fork already made */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunOut"];
                };
            };
            /** @description Successful Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An agent with this name exists; The schedule kept changing; A schedule with this key exists; A tenant with this id exists; Run is not in a state that allows this; A different result was already submitted for this tool call; The decision was made on other arguments; The fork would split a tool call from its result; A different decision was already made for this tool call; A request with this idempotency key is still being processed; The tool call's lease was lost */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    list_forks_v1_runs__run_id__forks_get: {
        parameters: {
            query?: {
                /** @description `next_cursor` of the previous page (opaque); a cursor this service did not make is refused with 422 `invalid-request` */
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path: {
                /** @description a run id */
                run_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunList"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    set_limits_v1_runs__run_id__limits_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a run id */
                run_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["LimitsIn"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An agent with this name exists; The schedule kept changing; A schedule with this key exists; A tenant with this id exists; Run is not in a state that allows this; A different result was already submitted for this tool call; The decision was made on other arguments; The fork would split a tool call from its result; A different decision was already made for this tool call; A request with this idempotency key is still being processed; The tool call's lease was lost */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    run_log_v1_runs__run_id__log_get: {
        parameters: {
            query?: {
                /** @description `next_cursor` of the previous page (opaque); a cursor this service did not make is refused with 422 `invalid-request` */
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path: {
                /** @description a run id */
                run_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LogMessageList"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    messages_v1_runs__run_id__messages_get: {
        parameters: {
            query?: {
                /** @description a browser token (`POST /v1/runs/{run_id}/browser-tokens`), for clients that cannot send headers (EventSource); never an API key */
                access_token?: string;
                /** @description `next_cursor` of the previous page (opaque); a cursor this service did not make is refused with 422 `invalid-request` */
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path: {
                /** @description a run id */
                run_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MessageList"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    resolve_v1_runs__run_id__resolution_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a run id */
                run_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ResolutionIn"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An agent with this name exists; The schedule kept changing; A schedule with this key exists; A tenant with this id exists; Run is not in a state that allows this; A different result was already submitted for this tool call; The decision was made on other arguments; The fork would split a tool call from its result; A different decision was already made for this tool call; A request with this idempotency key is still being processed; The tool call's lease was lost */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    submit_tool_results_v1_runs__run_id__tool_results_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a run id */
                run_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ToolResultsIn"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ToolResultsOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An agent with this name exists; The schedule kept changing; A schedule with this key exists; A tenant with this id exists; Run is not in a state that allows this; A different result was already submitted for this tool call; The decision was made on other arguments; The fork would split a tool call from its result; A different decision was already made for this tool call; A request with this idempotency key is still being processed; The tool call's lease was lost */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    wait_for_run_v1_runs__run_id__wait_get: {
        parameters: {
            query?: {
                /** @description a browser token (`POST /v1/runs/{run_id}/browser-tokens`), for clients that cannot send headers (EventSource); never an API key */
                access_token?: string;
                /** @description a status to wait for; repeat for several (default: `requires_action` and the terminal statuses) */
                status?: components["schemas"]["RunStatus"][];
                /** @description seconds to wait at most (0: answer at once) */
                timeout?: number;
            };
            header?: never;
            path: {
                /** @description a run id */
                run_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The run when the wait ended */
            200: {
                headers: {
                    /** @description why the wait ended */
                    "Wait-Outcome"?: "reached" | "final" | "timeout";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunOut"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    list_schedules_v1_schedules_get: {
        parameters: {
            query?: {
                /** @description `next_cursor` of the page before */
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ScheduleList"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    create_schedule_v1_schedules_post: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ScheduleIn"];
            };
        };
        responses: {
            /** @description Successful Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ScheduleOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An agent with this name exists; The schedule kept changing; A schedule with this key exists; A tenant with this id exists; Run is not in a state that allows this; A different result was already submitted for this tool call; The decision was made on other arguments; The fork would split a tool call from its result; A different decision was already made for this tool call; A request with this idempotency key is still being processed; The tool call's lease was lost */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    get_schedule_v1_schedules__key__get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a schedule's key */
                key: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ScheduleOut"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    delete_schedule_v1_schedules__key__delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a schedule's key */
                key: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    update_schedule_v1_schedules__key__patch: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a schedule's key */
                key: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SchedulePatch"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ScheduleOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An agent with this name exists; The schedule kept changing; A schedule with this key exists; A tenant with this id exists; Run is not in a state that allows this; A different result was already submitted for this tool call; The decision was made on other arguments; The fork would split a tool call from its result; A different decision was already made for this tool call; A request with this idempotency key is still being processed; The tool call's lease was lost */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    backfill_schedule_v1_schedules__key__backfill_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a schedule's key */
                key: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["BackfillIn"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Outcomes"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    fire_times_v1_schedules__key__fire_times_get: {
        parameters: {
            query?: {
                count?: number;
                /** @description after this time (default: now) */
                from?: string;
            };
            header?: never;
            path: {
                /** @description a schedule's key */
                key: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FireTimes"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    pause_schedule_v1_schedules__key__pause_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a schedule's key */
                key: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["PauseIn"] | null;
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ScheduleOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An agent with this name exists; The schedule kept changing; A schedule with this key exists; A tenant with this id exists; Run is not in a state that allows this; A different result was already submitted for this tool call; The decision was made on other arguments; The fork would split a tool call from its result; A different decision was already made for this tool call; A request with this idempotency key is still being processed; The tool call's lease was lost */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    resume_schedule_v1_schedules__key__resume_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a schedule's key */
                key: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ScheduleOut"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An agent with this name exists; The schedule kept changing; A schedule with this key exists; A tenant with this id exists; Run is not in a state that allows this; A different result was already submitted for this tool call; The decision was made on other arguments; The fork would split a tool call from its result; A different decision was already made for this tool call; A request with this idempotency key is still being processed; The tool call's lease was lost */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    list_ticks_v1_schedules__key__ticks_get: {
        parameters: {
            query?: {
                /** @description `next_cursor` of the page before */
                before?: string;
                limit?: number;
            };
            header?: never;
            path: {
                /** @description a schedule's key */
                key: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TickList"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    trigger_schedule_v1_schedules__key__trigger_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a schedule's key */
                key: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["TriggerIn"] | null;
            };
        };
        responses: {
            /** @description Successful Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OutcomeOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    list_tenants_v1_tenants_get: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TenantList"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    create_tenant_v1_tenants_post: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["TenantCreate"];
            };
        };
        responses: {
            /** @description Successful Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TenantOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An agent with this name exists; The schedule kept changing; A schedule with this key exists; A tenant with this id exists; Run is not in a state that allows this; A different result was already submitted for this tool call; The decision was made on other arguments; The fork would split a tool call from its result; A different decision was already made for this tool call; A request with this idempotency key is still being processed; The tool call's lease was lost */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    get_tenant_v1_tenants__tenant_id__get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a tenant's id */
                tenant_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TenantOut"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    update_tenant_v1_tenants__tenant_id__patch: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a tenant's id */
                tenant_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["TenantPatch"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TenantOut"];
                };
            };
            /** @description Malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found; Run not found; Callback token unknown or no longer valid; API key not found; Tenant not found; Agent not found; Schedule not found; No such lease */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    usage_v1_usage_get: {
        parameters: {
            query?: {
                /** @description RFC 3339 with a time zone; default: a day before `to` */
                from?: string;
                /** @description RFC 3339 with a time zone, not before `from` (else 422 `invalid-request`); default: now */
                to?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UsageOut"];
                };
            };
            /** @description Unauthorized; Browser token invalid or expired */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Permission missing */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request; Invalid request; Idempotency key reused with a different request; Tool call is not pending */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many failed authentications */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
}
