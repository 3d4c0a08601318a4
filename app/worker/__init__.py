"""Workers: claim due runs, drive `AgentRun` through providers, suspend and complete."""
