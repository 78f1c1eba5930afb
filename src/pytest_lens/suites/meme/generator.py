"""Seeded MEME episodes: a DAG of entities, conditional rules, evidence sessions among fillers, probes.

Each episode (one scope) follows the paper's construction (Section 3.2, Appendix B.2): a root entity
that changes, a 1-hop Cascade target (announced replacement rule) and Absence target (dependency without
a replacement), optionally the same at 2 hops below the Cascade target, and orphan entities for Tracking
(three ordered values), Deletion, Aggregation (three unnamed related entities) and Exact Recall (a
verbatim payload). Five evidence sessions (Fact Introduction 1a, 1b, 2, Update, Change+Delete Event)
are interleaved with filler sessions; before-probes are asked just before the change event, after-probes
at the end. Everything derives from the seed: the same seed gives byte-identical JSON.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from pytest_lens.datasets.key_facts import DELETED_FACT, UNCERTAIN_FACT
from pytest_lens.datasets.models import Dataset, Episode, GroundTruth, KeyFact, Question, Scope
from pytest_lens.datasets.validator import validate_dataset
from pytest_lens.suites.meme.domains import DOMAINS, Domain, Entity
from pytest_lens.suites.meme.tasks import TASK_CODES
from pytest_lens.text import normalize

__all__ = ["MemeConfig", "check_meme_dataset", "generate_meme"]

_ACKS = (
    "Got it, I will keep that in mind.",
    "Thanks, noted.",
    "Understood, I have made a note of it.",
    "Okay, good to know.",
    "Noted, thanks for telling me.",
    "All right, I will remember that.",
)


@dataclass(frozen=True)
class MemeConfig:
    """Knobs of the MEME generator."""

    seed: int = 7
    episodes_per_domain: int = 2
    #: Filler sessions in each gap around the five evidence sessions.
    fillers_per_gap: int = 1
    #: Include the 2-hop Cascade/Absence targets below the 1-hop Cascade target.
    two_hop: bool = True
    domains: tuple[str, ...] = ("pl", "sw")

    def __post_init__(self) -> None:
        if self.episodes_per_domain < 1:
            raise ValueError("episodes_per_domain must be at least 1")
        if self.fillers_per_gap < 0:
            raise ValueError("fillers_per_gap must not be negative")
        unknown = [code for code in self.domains if code not in DOMAINS]
        if unknown or not self.domains:
            raise ValueError(f"unknown MEME domain(s) {unknown or '(none)'}; available: {', '.join(DOMAINS)}")


def generate_meme(config: MemeConfig | None = None) -> Dataset:
    """A MEME-suite dataset: ``episodes_per_domain`` scopes per domain, validated."""
    config = config or MemeConfig()
    scopes: list[Scope] = []
    questions: list[Question] = []
    for code in config.domains:
        for index in range(config.episodes_per_domain):
            scope, scope_questions = _Episode(DOMAINS[code], index, config).build()
            scopes.append(scope)
            questions.extend(scope_questions)
    dataset = Dataset(suite="meme", scopes=tuple(scopes), questions=tuple(questions))
    problems = check_meme_dataset(dataset)
    if problems:  # a generator bug, never a user error
        raise AssertionError("generated MEME data is invalid:\n" + "\n".join(problems))
    return dataset


class _Episode:
    """One episode's sampling and rendering."""

    def __init__(self, domain: Domain, index: int, config: MemeConfig) -> None:
        self.domain = domain
        self.config = config
        self.scope_id = f"meme_{domain.code}_{index + 1:02d}"
        self.rng = random.Random(f"meme:{config.seed}:{domain.code}:{index}")
        self.root = domain.roots[index % len(domain.roots)]
        self.used: set[str] = set()
        start = datetime(2024, 1, 8, 9, 0) + timedelta(days=self.rng.randrange(0, 300))
        self.clock = start

    def pick(self, entity: Entity) -> str:
        pool = self.domain.people if entity.pool == ("@people",) else entity.pool
        choices = sorted(value for value in pool if value not in self.used)
        value = self.rng.choice(choices)
        self.used.add(value)
        return value

    def build(self) -> tuple[Scope, list[Question]]:
        d, rng, root = self.domain, self.rng, self.root
        e = d.entity
        children = list(root.children)
        cas1 = root.middle if self.config.two_hop else rng.choice(children)
        abs1 = rng.choice(sorted(set(children) - {cas1}))
        cas2 = abs2 = None
        if self.config.two_hop:
            cas2, abs2 = rng.sample(list(root.grandchildren), 2)
        tracking = rng.choice(d.tracking)
        deletion = rng.choice(d.deletion)
        agg_question, agg_entities = rng.choice(d.aggregation)

        root_before, root_after = self.pick(e(root.entity)), self.pick(e(root.entity))
        before = {name: self.pick(e(name)) for name in (cas1, abs1, cas2, abs2) if name}
        cas_after = {name: self.pick(e(name)) for name in (cas1, cas2) if name}
        track = [self.pick(e(tracking)) for _ in range(3)]
        deleted = self.pick(e(deletion))
        agg = [self.pick(e(name)) for name in agg_entities]
        payload = rng.choice(d.exact_recall.pool)
        self.used.add(payload)
        r, c1 = e(root.entity), e(cas1)

        def dependency(target: str, parent: Entity) -> list[str]:
            statement = e(target).state(before[target]).rstrip(".")
            return [f"{statement}, and that depends on {parent.noun}: if {parent.noun} changes, this would change."]

        def rule(target: str, parent: Entity) -> list[str]:
            return [e(target).state(before[target]), f"If {parent.noun} changes, {e(target).noun} will be {cas_after[target]}."]

        evidence: list[tuple[str, list[str]]] = [
            ("Fact Introduction (Part 1a)", [r.state(root_before), e(tracking).state(track[0]), e(agg_entities[0]).state(agg[0]),
                                             e(deletion).state(deleted)]),
            ("Fact Introduction (Part 1b)", [*rule(cas1, r), *dependency(abs1, r), e(agg_entities[1]).state(agg[1])]),
            ("Fact Introduction (Part 2)", [d.exact_recall_intro, d.exact_recall.state(payload), e(tracking).announce(track[1]),
                                            e(agg_entities[2]).state(agg[2]),
                                            *(rule(cas2, c1) if cas2 else []), *(dependency(abs2, c1) if abs2 else [])]),
            ("Update", [e(tracking).announce(track[2])]),
            ("Change+Delete Event", [r.announce(root_after), f"{e(deletion).state(deleted)} Please delete that from your memory."]),
        ]  # fmt: skip
        episodes: list[Episode] = []
        evidence_ids: list[str] = []
        for kind, lines in evidence:
            self._fillers(episodes)
            evidence_ids.append(self._session(episodes, lines, {"session_type": "evidence", "evidence_type": kind}))
        before_checkpoint = len(episodes) - 1  # just before the change event
        self._fillers(episodes)
        after_checkpoint = len(episodes)
        e1, e2, e3, e4, e5 = evidence_ids

        questions: list[Question] = []

        def ask(
            task: str,
            phase: str,
            entity: str,
            prompt: str,
            answer: str,
            facts: list[KeyFact],
            refs: list[str],
            stale: tuple[str, ...] = (),
            hop: int | None = None,
        ) -> None:
            suffix = f"_{hop}hop" if hop == 2 else ""
            questions.append(Question(
                question_id=f"{self.scope_id}_q{len(questions) + 1:02d}_{task}{suffix}_{phase}",
                scope_id=self.scope_id,
                checkpoint_after=before_checkpoint if phase == "before" else after_checkpoint,
                question_type=task,
                prompt=prompt,
                ground_truth=GroundTruth(canonical_answer=answer, required_evidence_refs=tuple(refs), key_facts=tuple(facts)),
                phase=phase,  # type: ignore[arg-type]
                entity=entity,
                stale_values=stale,
                meta={"domain": d.name, "root": root.entity, "task_code": TASK_CODES[task], **({"hop": hop} if hop else {})},
            ))  # fmt: skip

        dependents: list[tuple[str, str, int, list[str]]] = [("cascade", cas1, 1, [e2]), ("absence", abs1, 1, [e2])]
        if cas2 and abs2:
            dependents += [("cascade", cas2, 2, [e2, e3]), ("absence", abs2, 2, [e3])]
        # Before-probes: the entities whose after-probes the trivial-pass filter pairs them with.
        ask("deletion", "before", deletion, e(deletion).question, deleted, [KeyFact(fact=deleted)], [e1])
        for task, name, hop, _ in dependents:
            ask(task, "before", name, e(name).question, before[name], [KeyFact(fact=before[name])], [e2 if hop == 1 else e3], hop=hop)
        # After-probes, one per task (Cascade/Absence per hop).
        ask("exact_recall", "after", d.exact_recall.name, d.exact_recall.question, payload, [KeyFact(fact=payload)], [e3])
        ask("aggregation", "after", agg_entities[0], agg_question, ", ".join(agg), [KeyFact(fact=v) for v in agg], [e1, e2, e3])
        ask(
            "tracking",
            "after",
            tracking,
            e(tracking).question,
            f"First {track[0]}, then {track[1]}, now {track[2]}.",
            [KeyFact(fact=v) for v in track],
            [e1, e3, e4],
        )
        ask(
            "deletion",
            "after",
            deletion,
            e(deletion).question,
            "I don't have that information; it was deleted at the user's request.",
            [DELETED_FACT],
            [e5],
            stale=(deleted,),
        )
        for task, name, hop, refs in dependents:
            parent = r if hop == 1 else c1
            if task == "cascade":
                ask(
                    task,
                    "after",
                    name,
                    e(name).question,
                    cas_after[name],
                    [KeyFact(fact=cas_after[name])],
                    [*refs, e5],
                    stale=(before[name],),
                    hop=hop,
                )
            else:
                ask(
                    task,
                    "after",
                    name,
                    e(name).question,
                    f"Uncertain: previously {before[name]}, but {parent.noun} changed and no replacement was given.",
                    [UNCERTAIN_FACT],
                    [*refs, e5],
                    stale=(before[name],),
                    hop=hop,
                )
        return Scope(scope_id=self.scope_id, episodes=tuple(episodes)), questions

    def _fillers(self, episodes: list[Episode]) -> None:
        for _ in range(self.config.fillers_per_gap):
            exchanges = self.rng.sample(list(self.domain.fillers), 3)
            self._session(episodes, [], {"session_type": "filler"}, exchanges)

    def _session(
        self, episodes: list[Episode], facts: list[str], meta: dict[str, str], exchanges: list[tuple[str, str]] | None = None
    ) -> str:
        self.clock += timedelta(days=self.rng.randrange(1, 4), hours=self.rng.randrange(0, 9), minutes=self.rng.randrange(0, 60))
        episode_id = f"{self.scope_id}_s{len(episodes) + 1:02d}"
        lines = [f"Conversation on {self.clock:%Y-%m-%d %H:%M}"]
        for user, assistant in exchanges or [(fact, self.rng.choice(_ACKS)) for fact in facts]:
            lines += [f"User: {user}", f"Assistant: {assistant}"]
        episodes.append(
            Episode(episode_id=episode_id, scope_id=self.scope_id, timestamp=self.clock, text="\n".join(lines), meta=dict(meta))
        )
        return episode_id


def check_meme_dataset(dataset: Dataset) -> list[str]:
    """Structural invariants of a MEME dataset (generated or imported); empty when sound.

    The LENS validator's errors and warnings, plus: every Cascade/Absence/Deletion after-probe has a
    before-probe of the same entity at an earlier checkpoint; after-probes state their stale values;
    the stale value is never also the expected one; filler sessions mention no value of their episode.
    """
    problems = [str(issue) for issue in validate_dataset(dataset, "<meme>")]
    by_scope: dict[str, list[Question]] = {}
    for question in dataset.questions:
        by_scope.setdefault(question.scope_id, []).append(question)
        if question.phase is None:
            problems.append(f"{question.question_id}: MEME probes need a phase (before/after)")
        if question.question_type not in TASK_CODES:
            problems.append(f"{question.question_id}: unknown MEME task {question.question_type!r}")
    for scope in dataset.scopes:
        qs = by_scope.get(scope.scope_id, [])
        before = {(q.entity, q.question_type): q for q in qs if q.phase == "before"}
        values: set[str] = set()
        for q in qs:
            values.update(fact.fact for fact in q.ground_truth.key_facts if fact not in (DELETED_FACT, UNCERTAIN_FACT))
            values.update(q.stale_values)
            if q.phase != "after" or q.question_type not in ("cascade", "absence", "deletion"):
                continue
            probe = before.get((q.entity, q.question_type))
            if probe is None:
                problems.append(f"{q.question_id}: no before-probe for entity {q.entity!r}")
            elif probe.checkpoint_after >= q.checkpoint_after:
                problems.append(f"{q.question_id}: before-probe {probe.question_id} is not asked earlier")
            if not q.stale_values:
                problems.append(f"{q.question_id}: after-probe without the stale value it must not state")
            expected = {normalize(fact.fact) for fact in q.ground_truth.key_facts}
            if expected & {normalize(value) for value in q.stale_values}:
                problems.append(f"{q.question_id}: stale value equals the expected answer")
        for episode in scope.episodes:
            if episode.meta.get("session_type") != "filler":
                continue
            text = f" {normalize(episode.text)} "
            leaked = sorted(value for value in values if f" {normalize(value)} " in text)
            if leaked:
                problems.append(f"{episode.episode_id}: filler mentions episode values {leaked}")
    return problems
