# A served agentgym env: `agentgym serve ENV` on port 8000 (SQL-v0, FHIR-v0, CLI-v0; add --ray for Ray Serve
# where ray[serve] is installed). Build it with deploy/build.py, which stages the context (the repository itself
# would send its .venv to the daemon):
#   python deploy/build.py --tag agentgym-serve              # pip installs from the package index
#   python deploy/build.py --offline --tag agentgym-serve    # no network: the sandbox image plus this venv's packages
# Run:  docker run --rm -p 8000:8000 -e AGENTGYM_SERVE_TOKEN=... agentgym-serve SQL-v0 --host 0.0.0.0
ARG BASE=python:3.11-slim
FROM ${BASE}

# The sandbox image runs as nobody: installing needs root; the server then runs as its own user.
USER root
COPY . /opt/agentgym
# Offline (the context has site-packages/, see deploy/build.py): those packages are put on the path by a .pth file.
# Otherwise pip installs the project and its dependencies. CLI-v0 and FHIR-v0 (code=True) start their sandboxes
# as sibling containers through a mounted Docker socket, with the Docker SDK (no Docker CLI needed).
RUN set -eu; \
    site="$(python3 -c 'import site; print(site.getsitepackages()[0])')"; \
    if [ -d /opt/agentgym/site-packages ]; then \
        echo /opt/agentgym/site-packages > "$site/agentgym-offline.pth"; \
    else \
        pip install --no-cache-dir "/opt/agentgym/src[serve]" /opt/agentgym/src/domains/sql \
            /opt/agentgym/src/domains/fhir /opt/agentgym/src/domains/cli "ray[serve]>=2.9"; \
    fi; \
    python3 -c "import agentgym.serving.server"; \
    useradd --create-home --uid 10001 agentgym

USER agentgym
WORKDIR /home/agentgym
EXPOSE 8000
ENTRYPOINT ["python3", "-m", "agentgym.cli", "serve"]
CMD ["SQL-v0", "--host", "0.0.0.0", "--port", "8000"]
