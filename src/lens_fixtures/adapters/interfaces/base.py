"""What the interface adapters share: binding to a target, the factory, episode metadata, ranked results.

An interface adapter is selected as ``--lens-adapter=SCHEME:REST`` (:mod:`pytest_lens.contract.registry`):
the registry calls :meth:`InterfaceAdapter.lens_bind` with ``REST``, which checks it at start-up and
returns a subclass carrying it. For the library interfaces ``REST`` names a factory, ``module:attribute``,
called once per scope (every scope starts from an empty store) with the keywords it accepts among those the
adapter offers (``embeddings``, ``storage_dir``, ...).
"""

from __future__ import annotations

import inspect
import itertools
import json
import math
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from lens_fixtures.adapters.embedding_options import embedder_from_options, embedding_extras
from lens_fixtures.adapters.snippets import excerpt
from pytest_lens import MemoryAdapter, SearchResult
from pytest_lens.contract.registry import AdapterLoadError, import_adapter_module
from pytest_lens.extras import missing_extra

__all__ = [
    "REF_KEY",
    "EmbeddingFactoryAdapter",
    "FactoryAdapter",
    "InterfaceAdapter",
    "StoreScores",
    "call_factory",
    "day_number",
    "episode_metadata",
    "load_factory",
    "merged_results",
    "ranked_results",
    "store_id",
]

#: The metadata key every mapped document carries its episode id under (the ref the agent cites).
REF_KEY = "lens_ref"
#: The episode's day as a number (20240131): the one form every store's filter language compares.
DAY_KEY = "lens_day"


class InterfaceAdapter(MemoryAdapter):
    """An adapter for a whole interface; :meth:`lens_bind` makes the class for one target."""

    #: The scheme it is registered under (``langchain``, ``mcp``, ...).
    scheme: ClassVar[str] = ""
    #: What follows ``SCHEME:`` on the command line; set on the bound subclass.
    lens_target: ClassVar[str] = ""
    #: The extra that installs the interface's library (``pytest-lens[langchain]``, ...).
    library_extra: ClassVar[str] = ""

    @classmethod
    def lens_bind(cls, rest: str, import_paths: Sequence[Path] = ()) -> type[InterfaceAdapter]:
        """The class bound to ``rest``, after :meth:`check_target` accepted it (the library's extra is checked first)."""
        missing = missing_extra(cls.library_extra, f"--lens-adapter={cls.scheme}:...") if cls.library_extra else None
        if missing is not None:
            raise AdapterLoadError(missing)
        cls.check_target(rest, import_paths)
        name = f"{cls.__name__}[{rest}]"
        return type(name, (cls,), {"lens_target": rest, "__module__": cls.__module__, "__qualname__": name})

    @classmethod
    def check_target(cls, rest: str, import_paths: Sequence[Path]) -> None:
        """Raise :class:`AdapterLoadError` saying why ``rest`` cannot be used. Default: anything goes."""

    @classmethod
    def lens_extras(cls, options: Mapping[str, Any]) -> tuple[str, ...]:
        """The extras it needs with ``options``: its library's."""
        return (cls.library_extra,) if cls.library_extra else ()

    def target(self) -> str:
        """The bound target; a clear error when the unbound class is used directly."""
        if not self.lens_target:
            raise TypeError(f"{type(self).__name__} is selected as --lens-adapter={self.scheme}:... (it needs a target)")
        return self.lens_target


def load_factory(target: str, import_paths: Sequence[Path] = ()) -> Callable[..., Any]:
    """The callable named by ``module:attribute`` (attributes may be dotted); :class:`AdapterLoadError` says why not."""
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise AdapterLoadError(f"expected a factory as module:function, got {target!r}")
    obj: Any = import_adapter_module(module_name, target, import_paths)
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise AdapterLoadError(f"module {module_name!r} has no attribute {attribute!r}") from None
    if not callable(obj):
        raise AdapterLoadError(f"{target} is a {type(obj).__name__}, not a callable factory")
    return obj  # type: ignore[no-any-return]


def call_factory(factory: Callable[..., Any], offered: Mapping[str, Any], target: str) -> Any:
    """``factory(**the offered keywords it names)``; with ``**kwargs`` it gets them all.

    A required parameter that is not offered is an error naming it and what is offered.
    """
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return factory()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return factory(**offered)
    kwargs = {}
    for name, parameter in parameters.items():
        if name in offered and parameter.kind is not inspect.Parameter.POSITIONAL_ONLY:
            kwargs[name] = offered[name]
        elif parameter.default is inspect.Parameter.empty and parameter.kind not in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ):
            raise TypeError(f"factory {target} requires {name!r}, which the adapter does not offer (it offers: {', '.join(offered)})")
    return factory(**kwargs)


class FactoryAdapter(InterfaceAdapter):
    """An interface adapter whose target is a factory, called once per scope with a fresh storage directory."""

    @classmethod
    def check_target(cls, rest: str, import_paths: Sequence[Path]) -> None:
        """The factory imports and is callable."""
        load_factory(rest, import_paths)

    def __init__(self, storage_dir: str | None = None, *, snippet_chars: int = 600, max_results: int = 20, batch_size: int = 32) -> None:
        for name, value in (("snippet_chars", snippet_chars), ("max_results", max_results), ("batch_size", batch_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"option {name} must be a positive integer, got {value!r}")
        self._factory = load_factory(self.target())
        self._storage_dir = Path(storage_dir) if storage_dir else None
        self._scopes = itertools.count(1)
        self._snippet_chars = snippet_chars
        self._max_results = max_results
        self._batch_size = batch_size
        self._built = False
        #: Something was written to the current store (the next ``reset`` makes a new one).
        self.dirty = False

    def offered(self) -> dict[str, Any]:
        """The keywords this interface offers the factory besides ``storage_dir``."""
        return {}

    def adopt(self, made: Any) -> None:
        """Check what the factory returned and keep it (raise ``TypeError`` saying what was expected)."""
        raise NotImplementedError

    def made(self) -> None:
        """Make sure a store exists: the factory's first one is made on first need (its manifest depends on it)."""
        if not self._built:
            self._new_store()

    def _new_store(self) -> None:
        directory = None
        if self._storage_dir is not None:
            directory = self._storage_dir / f"scope-{next(self._scopes)}"
            directory.mkdir(parents=True, exist_ok=True)
        keywords = {"storage_dir": str(directory) if directory else None, **self.offered()}
        self.adopt(call_factory(self._factory, keywords, self.target()))
        self._built, self.dirty = True, False

    def reset(self, scope_id: str) -> None:
        """A new store from the factory (a store nothing was written to yet is kept): the scope starts empty."""
        if not self._built or self.dirty:
            self._new_store()

    def limit(self, limit: int | None) -> int:
        """The number of results to ask for: ``limit`` (default 10) capped at ``max_results``."""
        return max(1, min(limit or 10, self._max_results))

    def snippet(self, text: str) -> str:
        """What a search result shows of a stored text."""
        return excerpt(text, self._snippet_chars) if text.strip() else text


class EmbeddingFactoryAdapter(FactoryAdapter):
    """A factory adapter for a vector-store library: it offers the factory pytest-lens's embedder, and may filter by day.

    Options: ``date_filter`` (checked by :meth:`check_date_filter`; :attr:`default_date_filter` when not given),
    the embedder's (``embedding_model``, ``embedding_base_url``, ``embedding_batch_size``, ``cache``,
    ``cache_dir``: the offline MiniLM through the shared cache by default), ``snippet_chars`` (600),
    ``max_results`` (20), ``batch_size`` (32 documents per write). A subclass wraps the embedder in its
    library's type in :meth:`setup`.
    """

    #: ``date_filter`` when the option is not given.
    default_date_filter: ClassVar[Any] = True

    def __init__(
        self,
        storage_dir: str | None = None,
        *,
        date_filter: Any = None,
        embedding_model: str | None = None,
        embedding_base_url: str | None = None,
        embedding_batch_size: int | None = None,
        cache: bool = True,
        cache_dir: str | None = None,
        snippet_chars: int = 600,
        max_results: int = 20,
        batch_size: int = 32,
    ) -> None:
        date_filter = self.default_date_filter if date_filter is None else date_filter
        self.check_date_filter(date_filter)
        super().__init__(storage_dir, snippet_chars=snippet_chars, max_results=max_results, batch_size=batch_size)
        self._embedder = embedder_from_options(
            embedder=None,
            embedding_model=embedding_model,
            embedding_base_url=embedding_base_url,
            embedding_batch_size=embedding_batch_size,
            cache=cache,
            cache_dir=cache_dir,
        )
        self._date_filter = date_filter
        #: Documents mapped from episodes, written in batches of ``batch_size`` (and before any read).
        self._pending: list[Any] = []
        #: How the current store's scores run along its ranking.
        self.scores = StoreScores()
        self._unordered_before = 0
        self.setup()

    @classmethod
    def lens_extras(cls, options: Mapping[str, Any]) -> tuple[str, ...]:
        """Its library's extra, and its embedder's."""
        return (*super().lens_extras(options), *embedding_extras(options))

    @classmethod
    def check_date_filter(cls, value: Any) -> None:
        """Raise saying what ``date_filter`` accepts. Default: true or false."""
        if not isinstance(value, bool):
            raise TypeError(f"option date_filter must be true or false, got {value!r}")

    def setup(self) -> None:
        """Wrap the embedder for the library and start with no store (the embedder is ``self._embedder``)."""

    def adopted(self) -> None:
        """A new store was adopted: nothing queued for the old one is written to it, and its scores are read anew."""
        self._pending = []
        self._unordered_before += self.scores.unordered
        self.scores = StoreScores()

    def queue(self, document: Any) -> None:
        """Queue one mapped episode for the current store (made on first need); a full batch is written."""
        self.made()
        self.dirty = True
        self._pending.append(document)
        if len(self._pending) >= self._batch_size:
            self.flush()

    def flush(self) -> None:
        """Write whatever is queued (:meth:`write`)."""
        if self._pending:
            documents, self._pending = self._pending, []
            self.write(documents)

    def write(self, documents: list[Any]) -> None:
        """Write a batch of mapped episodes to the store."""
        raise NotImplementedError

    def ready(self) -> None:
        """Before a read: the store exists and holds every episode queued so far."""
        self.made()
        self.flush()

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        """Write whatever is queued."""
        self.flush()

    def lens_stats(self) -> dict[str, int]:
        """Embedding-cache hits and misses; result lists whose store scores ran against the store's order, if any."""
        counters = self._embedder.stats.as_counters()
        unordered = self._unordered_before + self.scores.unordered
        if unordered:
            counters["store_scores_against_order"] = unordered
        return counters

    def close(self) -> None:
        """Drop the store and close the embedding cache."""
        self.drop()
        self._embedder.close()

    def drop(self) -> None:
        """Let go of the current store."""


#: The namespace of :func:`store_id`'s UUIDs (a uuid5 of the project's name).
STORE_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_DNS, "pytest-lens")


def store_id(episode_id: str) -> str:
    """The id an episode is stored under: a UUID (uuid5 of the episode id), which every store accepts.

    Qdrant takes only UUIDs or unsigned integers, and other stores have rules of their own; the episode id
    itself travels in the metadata (:data:`REF_KEY`), where results and ``retrieve`` read it back.
    """
    return str(uuid.uuid5(STORE_ID_NAMESPACE, episode_id))


def day_number(timestamp: str) -> int:
    """``2024-01-31T...`` -> 20240131 (0 when the timestamp does not start with a date)."""
    digits = timestamp[:10].replace("-", "")
    return int(digits) if len(digits) == 8 and digits.isdigit() else 0


def episode_metadata(episode_id: str, scope_id: str, timestamp: str, meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """The episode's metadata as flat scalars (what every store accepts): ref, scope, timestamp, day, then ``meta``.

    A ``meta`` value that is not a string, number or boolean is written as JSON; ``meta`` never
    overwrites the adapter's own keys.
    """
    mapped: dict[str, Any] = {}
    for key, value in (meta or {}).items():
        mapped[str(key)] = value if isinstance(value, str | int | float | bool) else json.dumps(value, sort_keys=True, default=str)
    mapped.update({REF_KEY: episode_id, "lens_scope": scope_id, "timestamp": timestamp, DAY_KEY: day_number(timestamp)})
    return mapped


def day_bounds(filters: Mapping[str, Any] | None) -> tuple[int | None, int | None]:
    """``start_date``/``end_date`` filters as day numbers (``None`` when absent)."""
    filters = filters or {}
    start, end = filters.get("start_date"), filters.get("end_date")
    return (day_number(str(start)) if start else None, day_number(str(end)) if end else None)


class StoreScores:
    """How one store's scores run along its own ranking, learned from the result lists it returns.

    A store ranks best first, but its score may be a similarity (falling down the list), a distance (rising: L2,
    Chroma, pgvector's cosine distance) or neither (LangChain's relevance function for an inner-product FAISS
    index, ``1 - similarity``, inverted). :meth:`shown` gives scores that fall down the store's list whatever it
    returned: similarities as they are, a distance ``d`` as ``1 / (1 + d)``, and ``1 / (1 + rank)`` for a list
    without scores or with scores that do not follow its order. The direction a list shows is kept for the
    lists that show none (one hit, equal scores), so one store's scores mean the same in every search.
    """

    def __init__(self) -> None:
        #: ``True``: a distance, ``False``: a similarity, ``None``: not seen yet.
        self.distance: bool | None = None
        #: Result lists whose scores ran against the store's order (shown by rank instead).
        self.unordered = 0

    def shown(self, scores: Sequence[float | None]) -> list[float]:
        """The scores to show for one result list, in the store's order."""
        by_rank = [1.0 / (1 + rank) for rank in range(len(scores))]
        if any(score is None or not math.isfinite(score) for score in scores):
            return by_rank
        values = [float(score) for score in scores if score is not None]
        pairs = list(itertools.pairwise(values))
        falling, rising = all(a >= b for a, b in pairs), all(a <= b for a, b in pairs)
        if falling and rising:  # one hit, or equal scores: the direction seen before
            distance = bool(self.distance)
        elif falling or rising:
            distance = self.distance = rising
        else:
            self.unordered += 1
            return by_rank
        if not distance:
            return values
        if min(values, default=0.0) < 0:
            return [-value for value in values]
        return [1.0 / (1 + value) for value in values]


def ranked_results(
    hits: Iterable[tuple[str, str, float | None, Mapping[str, Any]]], limit: int, scores: StoreScores | None = None
) -> list[SearchResult]:
    """``(ref, snippet, score, metadata)`` hits in the order the store ranked them: that order, one per ref, at most ``limit``.

    The store's ranking is never re-sorted (a score's direction differs from store to store, and one store's
    relevance function inverted its own ranking); the scores shown are ``scores``'s reading of the store's
    (:class:`StoreScores`), by rank without one.
    """
    kept: list[tuple[str, str, float | None, dict[str, Any]]] = []
    seen: set[str] = set()
    for ref, text, score, metadata in hits:
        if ref not in seen:
            seen.add(ref)
            kept.append((ref, text, score, dict(metadata)))
        if len(kept) == limit:
            break
    shown = (scores or StoreScores()).shown([score if scores is not None else None for _, _, score, _ in kept])
    return [
        SearchResult(ref_id=ref, text=text, score=round(value, 6), metadata=metadata)
        for (ref, text, _, metadata), value in zip(kept, shown, strict=True)
    ]


def merged_results(hits: Iterable[tuple[str, str, float, Mapping[str, Any]]], limit: int) -> list[SearchResult]:
    """Hits merged from several searches, sorted by a score the adapter computed itself (higher is better).

    For an adapter that must merge (the MCP adapter's share of query terms an entity matched); a store's own
    ranking goes through :func:`ranked_results`. The sort is stable: equal scores keep the order they came in.
    """
    ordered = sorted(hits, key=lambda hit: -hit[2])
    return ranked_results(((ref, text, score, metadata) for ref, text, score, metadata in ordered), limit, StoreScores())
