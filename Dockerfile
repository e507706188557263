# An image that serves one mcpserve app over Streamable HTTP on port 8000.
#
# mcpserve is installed from this checkout, with the fast HTTP stack, Redis and the CLI.
# The app is yours: mount it at /app/server.py, or build an image FROM this one that
# copies it there. docs/deployment.md ("Docker") shows both, and the settings.
#
#   docker build -t mcpserve .
#   docker run --rm -p 8000:8000 -v "$PWD/app.py:/app/server.py:ro" mcpserve

FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Only what building the package needs (the version lives in src/mcpserve/__init__.py).
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install --no-cache-dir ".[http,redis,cli]" \
    && cd / && rm -rf /src

# The server runs as an unprivileged user; /app belongs to root and is read-only to it.
RUN useradd --no-log-init --create-home --uid 10001 mcpserve
WORKDIR /app
USER mcpserve

EXPOSE 8000

# Liveness: /healthz answers 200 while the process serves HTTP, never depending on Redis
# (docs/observability.md); a restart would not bring a missing Redis back.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import http.client, sys; c = http.client.HTTPConnection('127.0.0.1', 8000, timeout=2); c.request('GET', '/healthz'); sys.exit(c.getresponse().status != 200)"]

# 0.0.0.0 so that the published port reaches the server. The Host check still passes
# only loopback names: set MCPSERVE_PUBLIC_URL or MCPSERVE_ALLOWED_HOSTS for others.
CMD ["mcpserve", "run", "/app/server.py", "--http", "--host", "0.0.0.0", "--port", "8000"]
