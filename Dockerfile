# The tunemem image for server mode (compose.yaml): the package with its PostgreSQL driver.
# Not built or run by the test suite (no container runtime there); .ci/run is the tested path.
FROM python:3.11-slim
WORKDIR /src
COPY . .
# The CPU build of torch first, so the install does not pull a CUDA build; then exactly the
# versions of requirements.lock, each checked against its hash; then tunemem itself.
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu \
    && pip install --no-cache-dir --require-hashes --no-deps -r requirements.lock \
    && pip install --no-cache-dir --no-deps .
ENV HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
    TUNEMEM_MODEL_CACHE=/opt/tunemem/models
# The default embedder's ONNX graph, exported from the bundled weights at build, so no worker
# exports it at its first start.
RUN python -c "from tunemem.memory_service.core.embedding.factory import create_embedder; \
from tunemem.memory_service.core.settings import Settings; s = Settings(); \
create_embedder(s.embedder, s.embedding_model_path, s.embed_threads, s.model_cache)"
EXPOSE 8000
CMD ["tunemem", "serve", "--host", "0.0.0.0", "--port", "8000"]
