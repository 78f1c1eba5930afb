"""A quick hypothesis profile for the conformance suite's own tests, and adapter specs."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

from pytest_lens.conformance.subject import SubjectFactory
from pytest_lens.records.settings import AdapterSpec

#: Fewer examples than lens-ci, for checks that only need to see a clause hold on some inputs.
QUICK = "lens-test-quick"
settings.register_profile(
    QUICK,
    max_examples=8,
    derandomize=True,
    database=None,
    deadline=None,
    phases=(Phase.explicit, Phase.generate, Phase.shrink),
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture
def factory_for(tmp_path: Path):  # type: ignore[no-untyped-def]
    """``factory_for("bm25")`` or ``factory_for("pkg.mod:Class", label="x")``: a SubjectFactory storing under tmp_path."""

    def make(target: str, label: str | None = None, **options: object) -> SubjectFactory:
        return SubjectFactory(AdapterSpec(label or target, target, dict(options)), tmp_path / "storage")

    return make
