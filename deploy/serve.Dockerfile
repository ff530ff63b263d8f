# A served agentgym env: `agentgym serve ENV` on port 8000 (optionally `--ray --replicas N`).
# Build from the repository root:  docker build -f deploy/serve.Dockerfile -t agentgym-serve .
# NOT built in this repository's CI: it needs a Python package registry, which the build machines lack.
FROM python:3.11-slim

# The Docker CLI lets CLI-v0 / FHIR-v0 (code=True) start sandbox containers through a mounted Docker socket.
RUN apt-get update \
    && apt-get install -y --no-install-recommends docker.io git \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/agentgym
COPY . /opt/agentgym
RUN pip install --no-cache-dir -e ".[serve]" "ray[serve]>=2.9"

# Not root: the server never needs it (sandboxes run in their own containers through the socket).
RUN useradd --create-home agentgym
USER agentgym

EXPOSE 8000
ENTRYPOINT ["agentgym", "serve"]
CMD ["SQL-v0", "--host", "0.0.0.0", "--port", "8000"]
