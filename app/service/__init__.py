"""The operations the HTTP API, the dashboard and the tests call."""
