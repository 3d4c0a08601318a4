"""The HTTP API: a thin FastAPI layer over the service."""
