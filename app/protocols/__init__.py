"""The open protocols every named agent is reachable over, front ends beside the API and
the dashboard (`sessions`: what both share, an agent's conversations; `a2a`: the Agent2Agent
protocol; `agui`: AG-UI). They call the service and the features' services, never the
store, and are mounted by the composition root (app.main)."""
