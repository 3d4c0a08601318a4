"""agentrun-service: durable agent runs around a sans-IO agent loop."""
