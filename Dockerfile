# Multi-stage build: a virtualenv is built in the first stage and copied into a slim
# runtime image that runs as a non-root user. The command picks the process:
#   docker run IMAGE agentrun api --host 0.0.0.0      (HTTP API)
#   docker run IMAGE agentrun worker --concurrency 8  (worker)
#   docker run IMAGE agentrun migrate                 (schema migrations)
#   docker run IMAGE agentrun runs list --base-url …  (the client's command line)
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/venv
COPY pyproject.toml README.md ./
COPY app ./app
COPY client ./client
# The client (agentrun_client) too: `agentrun runs …` and `agentrun-client` use it.
RUN /opt/venv/bin/pip install . ./client

FROM python:3.11-slim AS runtime
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
RUN groupadd --system agentrun && useradd --system --gid agentrun --home /app agentrun
WORKDIR /app
COPY --from=build /opt/venv /opt/venv
COPY alembic.ini ./
COPY alembic ./alembic
USER agentrun
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
  CMD python -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)" || exit 1
CMD ["agentrun", "api", "--host", "0.0.0.0", "--port", "8000"]
