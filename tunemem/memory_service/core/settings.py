"""Service settings: the one place that reads the environment (prefix TUNEMEM_)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field, create_model, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from tunemem.memory_service.core.errors import InvalidInput
from tunemem.memory_service.core.schemas.knob_fields import setting_fields
from tunemem.retrieval.knobs import KNOBS, KnobValue, ranking_settings, resolve
from tunemem.retrieval.ranking import RankingSettings
from tunemem.retrieval.toolchain import ToolchainPolicy


class _ServiceSettings(BaseSettings):
    """The settings other than the ranking knobs."""

    model_config = SettingsConfigDict(env_prefix="TUNEMEM_", extra="ignore")

    data_dir: Path = Field(Path(".tunemem"), description="embedded store directory")
    database_url: str | None = Field(
        None, description="SQLAlchemy URL; default sqlite under data_dir (WAL mode)"
    )
    index: str = Field("chroma", description="vector index kind: chroma | chroma-http | memory")
    index_url: str | None = Field(None, description="Chroma server URL for index=chroma-http")
    index_collection: str = Field("tunemem_lessons", description="Chroma collection name")
    embedder: str = Field(
        "minilm",
        description="embedder kind: minilm (ONNX Runtime) | minilm-torch (PyTorch) | hashing",
    )
    embedding_model_path: Path | None = Field(
        None, description="sentence-transformers model folder; default the bundled MiniLM"
    )
    model_cache: Path | None = Field(
        None,
        description="folder of the ONNX models exported from the weights at first use; "
        "default ~/.cache/tunemem/models",
    )
    migrate_on_start: bool = Field(
        True,
        description="upgrade the SQL schema when the service starts (off: run `tunemem migrate`)",
    )
    embed_threads: int = Field(
        0,
        ge=0,
        description="most threads of a MiniLM pass that runs alone (passes that overlap "
        "take one each); 0: every core",
    )
    embedding_cache: str = Field(
        "auto",
        description="file of lesson embeddings by content hash, reused across runs and stores; "
        "auto: <data_dir>/embedding-cache.sqlite in the embedded mode, none in the server mode; "
        "off: none",
    )
    tenant: str = Field("default", description="tenant used when a request names none")
    api_key: str | None = Field(None, description="bearer key the CLI sends with --url")
    llm_url: str | None = Field(None, description="OpenAI-compatible endpoint for the LLM proposer")
    llm_model: str | None = Field(None, description="model name for the LLM proposer")
    llm_api_key: str | None = Field(None, description="key for the LLM endpoint")
    seed_samples: bool = Field(False, description="ingest the bundled sample data on first start")

    # Values (DESIGN sections 4 and 5).
    alpha: float = Field(0.3, gt=0.0, le=1.0, description="value learning rate")
    reward_min_count: int = Field(5, ge=1, description="refine outcomes before normalising")

    # Toolchain staleness (DESIGN section 5): which components matter per backend, and to which
    # depth, over `retrieval.toolchain.DEFAULT_COMPONENTS`; what superseded evidence weighs.
    toolchain_components: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="per backend, component -> ignore|major|minor|patch, e.g. "
        '{"cuda": {"torch": "minor"}}; merged over the defaults (Triton and the vendor '
        "toolkit at minor)",
    )
    toolchain_superseded_weight: float = Field(
        0.5, ge=0.0, le=1.0, description="weight of an outcome under a superseded toolchain"
    )

    # Performance models behind suggest (DESIGN section 5, "Configurations beyond the
    # remembered ones"): caches of the stored search spaces, trained off the request path.
    suggest_model: bool = Field(
        True, description="model-based suggestions (source model) from the stored search spaces"
    )
    model_wait_s: float = Field(
        0.0,
        ge=0.0,
        le=600.0,
        description="seconds a suggest waits for a model being (re)trained; 0: it never waits "
        "and answers with the previous model, or without one",
    )
    suggest_deadline_s: float = Field(
        10.0,
        gt=0.0,
        le=600.0,
        description="seconds a suggest's search may run; past it the answer holds what was "
        "found, with a warning",
    )
    suggest_concurrency: int = Field(
        4,
        ge=0,
        description="suggests one server process computes at once; more get 429 busy with "
        "Retry-After; 0 turns the cap off",
    )
    suggest_per_tenant: int = Field(
        2,
        ge=1,
        description="of those, the most one tenant may hold at once (so one tenant's flood "
        "leaves the others theirs)",
    )
    model_builds_per_tenant: int = Field(
        2,
        ge=1,
        description="performance-model builds one tenant may have waiting; the builds of "
        "different tenants take turns",
    )

    dedup_threshold: float = Field(0.95, gt=0.0, le=1.0, description="near-duplicate cosine")
    max_body_bytes: int = Field(8 * 1024 * 1024, gt=0, description="largest accepted request")
    max_inflated_body_bytes: int = Field(
        64 * 2**20,
        gt=0,
        description="largest gzip-encoded upload after inflating (POST /v1/trajectories; "
        "the body limit bounds its bytes on the wire)",
    )
    batch_size: int = Field(256, ge=1, description="ingest embedding/commit batch size")
    write_rate_per_minute: int = Field(
        600,
        ge=0,
        description="per-key lesson adds, outcome reports and run uploads per minute (a burst "
        "of this many, then this many a minute); 0 turns the limit off",
    )
    ingest_max_file_bytes: int = Field(
        128 * 2**20, gt=0, description="largest file `tunemem ingest` reads, after decompression"
    )

    @field_validator("toolchain_components")
    @classmethod
    def _known_depths(cls, value: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        ToolchainPolicy.with_overrides(value)  # raises on an unknown depth
        return value

    def toolchain_policy(self) -> ToolchainPolicy:
        return ToolchainPolicy.with_overrides(
            self.toolchain_components, self.toolchain_superseded_weight
        )

    def resolved_embedding_cache(self) -> Path | None:
        if self.embedding_cache == "off":
            return None
        if self.embedding_cache == "auto":
            return None if self.database_url else self.data_dir / "embedding-cache.sqlite"
        return Path(self.embedding_cache)

    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'tunemem.db').resolve()}"


if TYPE_CHECKING:

    class _WithKnobs(_ServiceSettings):
        q0: float  # the one knob read outside a retrieval: where a learned value starts

else:
    # Ranking (DESIGN section 4): one field per knob of `retrieval.knobs`, echoed in every
    # retrieval response.
    _WithKnobs = create_model("_WithKnobs", __base__=_ServiceSettings, **setting_fields())


class Settings(_WithKnobs):
    """Everything configurable about a tunemem service; each field maps to TUNEMEM_<NAME>."""

    def knob(self, name: str) -> KnobValue:
        """A ranking knob's value in these settings."""
        if name not in KNOBS:
            raise ValueError(f"unknown ranking knob {name!r}; valid: {', '.join(KNOBS)}")
        return getattr(self, name)  # type: ignore[no-any-return]  # a field from the table

    def ranking(self, **overrides: object) -> RankingSettings:
        """The settings of one retrieval: these knobs with `overrides` (not None) over them."""
        base = {name: self.knob(name) for name in KNOBS}
        try:
            return ranking_settings(resolve(base, overrides))
        except ValueError as exc:
            raise InvalidInput(str(exc), code="invalid_knob") from exc
