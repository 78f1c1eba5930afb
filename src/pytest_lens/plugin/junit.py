"""Per-question scores as JUnit XML ``<property>`` elements.

pytest writes a test's ``user_properties`` from its teardown report into ``--junitxml``
for every ``junit_family`` (only the ``record_property`` fixture warns under xunit2),
so the plugin adds these flat name/value pairs to each LENS test and keeps the full
result record off that report.
"""

from __future__ import annotations

from pytest_lens.records.results import QuestionResult

__all__ = ["PROPERTY_PREFIX", "junit_properties"]

PROPERTY_PREFIX = "lens."


def junit_properties(result: QuestionResult) -> list[tuple[str, str]]:
    """``lens.composite``, ``lens.metric.<name>``, ``lens.gated`` and the question's identity, as strings."""
    properties = [
        ("adapter", result.adapter),
        ("scope", result.scope_id),
        ("question", result.question_id),
        ("question_type", result.question_type),
        ("budget", result.budget),
        ("agent", result.agent),
        # A question not measured has no score to report, not a composite of 0.
        *(
            [("not_measured", result.not_measured)]
            if result.not_measured is not None
            else [("composite", f"{result.composite:.6g}"), ("gated", "true" if result.gated else "false")]
        ),
        *((f"metric.{name}", f"{value:.6g}") for name, value in sorted(result.metrics.items())),
    ]
    if result.judge:
        properties.append(("judge", result.judge))
    return [(PROPERTY_PREFIX + name, value) for name, value in properties]
