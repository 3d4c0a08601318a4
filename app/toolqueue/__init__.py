"""The tool-call queue: executors without a public address lease the calls of runs that
name their queue (`service`), over HTTP (`routes`, mounted by the composition root); its
SQL (`sql`). The lease itself is one of the kernel's writes (`Backend.lease_calls`)."""
