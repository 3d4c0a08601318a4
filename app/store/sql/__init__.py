"""The SQL the store's repositories and its backends share (statement builders only, no
IO), kept apart from the code that runs it so that neither imports the other:
`runs` (a run's UPDATE, the claim's pick and rank), `reads` (a run by key, its log)."""
