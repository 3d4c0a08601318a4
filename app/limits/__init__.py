"""Limits: run budgets, daily budgets, and the shared rate and concurrency limits.

- `rules`: the budget check's pure decisions (ceilings, the output cap, the tenant cache).
- `budgets`: the check before each model call (the input estimate, the cap's parameter).
- `run_limits`: a run's limits at create and `POST /v1/runs/{id}/limits`.
- `rates`, `rates_sql`, `slots_sql`: the shared limits' worker side, buckets and slots.
- `gates`, `hooks`: the model-call gates and their installation (`app.worker.gates`).

Prices stay in the kernel (`app.service.prices`): every model call is billed on the
ledger, limits or none.
"""
