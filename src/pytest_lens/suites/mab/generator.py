"""Seeded, offline MemoryAgentBench-style scopes, one per competency (Hu, Wang, McAuley, ICLR 2026).

- ``accurate_retrieval``: RULER-style needles in a long haystack; multi-value keys ("What are all the
  special magic numbers for K?", recall) and single-fact questions (SubEM).
- ``test_time_learning``: labelled examples in the stream (one ``<text> | Label: <n>`` per line, the MCC
  format kept on one line so each example stays one sentence), new inputs to classify (exact match on the
  parsed label).
- ``long_range_understanding``: a chronicle told over many chapters; questions whose answers span the
  whole stream (recall of every gold element).
- ``conflict_resolution``: a FactConsolidation-style knowledge pool of numbered facts where later facts
  overwrite earlier ones; single-hop and multi-hop questions (SubEM; the superseded values are recorded
  so a strict reading can check they are not stated).

The stream is chunked into episodes and every question is asked at the end, as in the paper's "inject
once, query many" protocol. All names are fictitious; the same seed gives byte-identical JSON.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from pytest_lens.datasets.models import Dataset, Episode, GroundTruth, KeyFact, Question, Scope
from pytest_lens.datasets.validator import validate_dataset

__all__ = ["COMPETENCIES", "MabConfig", "check_mab_dataset", "generate_mab"]

#: Competency (question type) -> the paper's metric for it.
COMPETENCIES: dict[str, str] = {
    "accurate_retrieval": "subem",
    "test_time_learning": "exact_match",
    "long_range_understanding": "recall",
    "conflict_resolution": "subem",
}

_SYLLABLES = ("vel", "mor", "ast", "quin", "tal", "bri", "sor", "den", "ka", "lu", "wen", "ost", "rha", "fen", "ily", "gar", "pel", "zor")
_HAYSTACK = (
    "The archive clerk sorted the blue ledgers before the afternoon bell.",
    "Rain drummed on the greenhouse roof while the seedlings were repotted.",
    "A delivery of lamp oil arrived two days later than the almanac promised.",
    "The north bridge was repainted in a shade the council called harbour grey.",
    "Children in the square traded painted stones and argued about their colours.",
    "The baker's apprentice practised braiding loaves until the dough tore.",
    "Someone left a folded map of the marshes on the reading room table.",
    "The clock above the tram depot ran four minutes fast all winter.",
    "Fishermen mended nets on the quay and complained about the tides.",
    "The museum moved its collection of brass instruments to the east hall.",
    "A choir rehearsed the same three bars until the director was satisfied.",
    "The orchard keeper counted the crates twice before signing the ledger.",
    "Lanterns along the canal were lit one by one as the fog rolled in.",
    "The ferry schedule was posted in three languages outside the ticket hall.",
    "An old cartographer corrected the coastline on a copy of the town map.",
    "Two cyclists stopped to watch the cranes unload timber at the docks.",
)  # fmt: skip


@dataclass(frozen=True)
class MabConfig:
    """Knobs of the MemoryAgentBench generator."""

    seed: int = 11
    #: Haystack sentences per episode (chunk) in the retrieval and conflict scopes.
    chunk_sentences: int = 12
    #: Episodes (chunks) of the accurate-retrieval haystack.
    haystack_chunks: int = 16
    questions_per_competency: int = 6

    def __post_init__(self) -> None:
        if self.chunk_sentences < 4 or self.haystack_chunks < 4 or self.questions_per_competency < 2:
            raise ValueError("chunk_sentences and haystack_chunks must be >= 4, questions_per_competency >= 2")


def generate_mab(config: MabConfig | None = None) -> Dataset:
    """A MemoryAgentBench-suite dataset: one scope per competency, validated."""
    config = config or MabConfig()
    parts = [
        _accurate_retrieval(config),
        _test_time_learning(config),
        _long_range_understanding(config),
        _conflict_resolution(config),
    ]
    dataset = Dataset(suite="mab", scopes=tuple(scope for scope, _ in parts), questions=tuple(q for _, qs in parts for q in qs))
    problems = check_mab_dataset(dataset)
    if problems:  # a generator bug, never a user error
        raise AssertionError("generated MemoryAgentBench data is invalid:\n" + "\n".join(problems))
    return dataset


def _rng(config: MabConfig, part: str) -> random.Random:
    return random.Random(f"mab:{config.seed}:{part}")


def _word(rng: random.Random, syllables: int = 2) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(syllables))


def _name(rng: random.Random, used: set[str]) -> str:
    while True:
        name = f"{_word(rng).capitalize()} {_word(rng, 3).capitalize()}"
        if name not in used:
            used.add(name)
            return name


def _episodes(scope_id: str, chunks: list[list[str]], rng: random.Random, joiner: str = " ") -> tuple[Episode, ...]:
    start = datetime(2025, 2, 3, 8, 0) + timedelta(days=rng.randrange(0, 200))
    return tuple(
        Episode(
            episode_id=f"{scope_id}_c{index + 1:03d}",
            scope_id=scope_id,
            timestamp=start + timedelta(hours=index),
            text=joiner.join(lines),
        )
        for index, lines in enumerate(chunks)
    )


def _question(
    scope_id: str,
    number: int,
    competency: str,
    prompt: str,
    answers: list[str],
    refs: list[str],
    checkpoint: int,
    metric: str,
    stale: tuple[str, ...] = (),
    **meta: object,
) -> Question:
    facts = [KeyFact(fact=a) for a in answers] if metric == "recall" else [KeyFact(fact=answers[0], aliases=tuple(answers[1:]))]
    return Question(
        question_id=f"{scope_id}_q{number:02d}_{meta.get('task', competency)}",
        scope_id=scope_id,
        checkpoint_after=checkpoint,
        question_type=competency,
        prompt=prompt,
        ground_truth=GroundTruth(
            canonical_answer=", ".join(answers), required_evidence_refs=tuple(dict.fromkeys(refs)), key_facts=tuple(facts)
        ),
        answers=tuple(answers),
        stale_values=stale,
        meta={"mab_metric": metric, **meta},
    )


def _accurate_retrieval(config: MabConfig) -> tuple[Scope, list[Question]]:
    rng, scope_id = _rng(config, "ar"), "mab_ar_01"
    chunks = [[rng.choice(_HAYSTACK) for _ in range(config.chunk_sentences)] for _ in range(config.haystack_chunks)]
    used: set[str] = set()
    questions: list[Question] = []
    n_multi = config.questions_per_competency // 2
    placements: list[tuple[int, str]] = []
    plans: list[tuple[str, list[str], list[int], str]] = []
    for index in range(config.questions_per_competency):
        if index < n_multi:  # NIAH-MQ: several numbers for one key, spread over the stream
            key = f"{_word(rng)}-{_word(rng)}"
            numbers = [str(rng.randrange(1_000_000, 9_999_999)) for _ in range(rng.choice((2, 3)))]
            where = rng.sample(range(config.haystack_chunks), len(numbers))
            placements += [
                (chunk, f"One of the special magic numbers for {key} is: {number}.") for chunk, number in zip(where, numbers, strict=True)
            ]
            plans.append((f"What are all the special magic numbers for {key}?", numbers, where, "recall"))
        else:  # RULER-QA: one gold passage answers the question
            person, item, place = (
                _name(rng, used),
                f"{_word(rng)} {rng.choice(('lantern', 'compass', 'ledger', 'telescope'))}",
                _name(rng, used),
            )
            chunk = rng.randrange(config.haystack_chunks)
            placements.append((chunk, f"{person} keeps the {item} in the attic of {place} House."))
            plans.append((f"Where does {person} keep the {item}?", [f"{place} House"], [chunk], "subem"))
    for chunk, sentence in placements:
        chunks[chunk].insert(rng.randrange(len(chunks[chunk]) + 1), sentence)
    episodes = _episodes(scope_id, chunks, rng)
    for number, (prompt, answers, where, metric) in enumerate(plans, start=1):
        refs = [episodes[i].episode_id for i in sorted(where)]
        task = "multi_needle" if metric == "recall" else "single_needle"
        questions.append(_question(scope_id, number, "accurate_retrieval", prompt, answers, refs, len(episodes), metric, task=task))
    return Scope(scope_id=scope_id, episodes=episodes), questions


_INTENTS: tuple[tuple[str, ...], ...] = (
    ("card", "lost", "stolen", "wallet", "block"),
    ("transfer", "pending", "arrived", "recipient", "delayed"),
    ("exchange", "rate", "currency", "abroad", "conversion"),
    ("pin", "reset", "forgot", "code", "locked"),
    ("refund", "fee", "charged", "twice", "reverse"),
    ("statement", "download", "monthly", "pdf", "export"),
)
_OPENERS = ("hello,", "hi there,", "quick question:", "please help,", "good morning,", "hey,")


def _utterance(rng: random.Random, cues: tuple[str, ...]) -> str:
    picked = rng.sample(list(cues), 3)
    filler = rng.choice(("about my", "regarding the", "with the", "for my", "on the"))
    return f"{rng.choice(_OPENERS)} {picked[0]} {filler} {picked[1]} and the {picked[2]} {_word(rng)}"


def _test_time_learning(config: MabConfig) -> tuple[Scope, list[Question]]:
    rng, scope_id = _rng(config, "ttl"), "mab_ttl_01"
    labels = rng.sample(range(10, 90), len(_INTENTS))
    examples = [(f"{_utterance(rng, _INTENTS[i])} | Label: {labels[i]}", i) for i in range(len(_INTENTS)) for _ in range(8)]
    rng.shuffle(examples)
    size = max(4, len(examples) // 6)
    chunks = [[text for text, _ in examples[i : i + size]] for i in range(0, len(examples), size)]
    episodes = _episodes(scope_id, chunks, rng, joiner="\n")
    questions = []
    for number in range(1, config.questions_per_competency + 1):
        intent = rng.randrange(len(_INTENTS))
        text = _utterance(rng, _INTENTS[intent])
        refs = [
            episodes[i].episode_id for i, chunk in enumerate(chunks) if any(line.endswith(f"Label: {labels[intent]}") for line in chunk)
        ]
        prompt = f"Use the labelled examples in memory to assign a numerical label to this request. Request: {text}"
        questions.append(
            _question(
                scope_id, number, "test_time_learning", prompt, [str(labels[intent])], refs, len(episodes), "exact_match", task="classify"
            )
        )
    return Scope(scope_id=scope_id, episodes=episodes), questions


def _long_range_understanding(config: MabConfig) -> tuple[Scope, list[Question]]:
    rng, scope_id = _rng(config, "lru"), "mab_lru_01"
    used: set[str] = set()
    ship = f"the {_word(rng).capitalize()} {rng.choice(('Gull', 'Heron', 'Lantern', 'Marrow'))}"
    chapters = max(6, config.questions_per_competency + 2)
    ports = [f"Port {_word(rng).capitalize()}" for _ in range(chapters)]
    joiners = {rng.randrange(1, chapters): _name(rng, used) for _ in range(3)}
    cargo = [
        f"{rng.choice(('crates of', 'barrels of', 'bales of'))} {_word(rng)} {rng.choice(('spice', 'wool', 'glass', 'salt'))}"
        for _ in range(chapters)
    ]
    chunks: list[list[str]] = []
    for index in range(chapters):
        lines = [f"Chapter {index + 1}.", f"After days at sea, {ship} docked at {ports[index]}."]
        lines += [rng.choice(_HAYSTACK) for _ in range(3)]
        lines.append(f"There the crew took on {cargo[index]}.")
        if index in joiners:
            lines.append(f"A navigator named {joiners[index]} signed on for the rest of the voyage.")
        lines += [rng.choice(_HAYSTACK) for _ in range(2)]
        chunks.append(lines)
    episodes = _episodes(scope_id, chunks, rng)
    all_refs = [episode.episode_id for episode in episodes]
    plans: list[tuple[str, list[str], list[str], str]] = [
        (f"List every port {ship} docked at during the whole voyage, in order.", ports, all_refs, "ports"),
        (f"Which navigators joined {ship} over the course of the voyage?", [joiners[i] for i in sorted(joiners)],
         [all_refs[i] for i in sorted(joiners)], "navigators"),
        (f"What cargo did the crew of {ship} take on over the whole voyage?", cargo, all_refs, "cargo"),
    ]  # fmt: skip
    questions = [
        _question(scope_id, number, "long_range_understanding", prompt, answers, refs, len(episodes), "recall", task=task)
        for number, (prompt, answers, refs, task) in enumerate(plans, start=1)
    ]
    return Scope(scope_id=scope_id, episodes=episodes), questions


def _conflict_resolution(config: MabConfig) -> tuple[Scope, list[Question]]:
    rng, scope_id = _rng(config, "cr"), "mab_cr_01"
    used: set[str] = set()
    orgs = [
        f"the {_word(rng).capitalize()} {rng.choice(('Guild', 'Council', 'Society', 'League'))}"
        for _ in range(config.questions_per_competency)
    ]
    cities = [f"{_word(rng, 3).capitalize()}" for _ in range(12)]
    facts: list[tuple[str, str | None]] = []  # (fact text without serial, key the fact sets)
    chair: dict[str, str] = {}
    born: dict[str, str] = {}
    history: dict[str, list[str]] = {}

    def say_chair(org: str, person: str) -> None:
        chair[org] = person
        history.setdefault(f"chair:{org}", []).append(person)
        facts.append((f"The chairperson of {org} is {person}.", f"chair:{org}"))

    def say_born(person: str, city: str) -> None:
        born[person] = city
        history.setdefault(f"born:{person}", []).append(city)
        facts.append((f"{person} was born in the city of {city}.", f"born:{person}"))

    people = [_name(rng, used) for _ in range(len(orgs) * 2)]
    for index, org in enumerate(orgs):
        say_chair(org, people[2 * index])
        say_born(people[2 * index], rng.choice(cities))
        say_born(people[2 * index + 1], rng.choice(cities))
    distractors = [(f"{_name(rng, used)} was born in the city of {rng.choice(cities)}.", None) for _ in range(3 * len(orgs))]
    facts += distractors
    rng.shuffle(facts)
    # Edits come later in the pool (larger serial numbers): new chairs for every org, a new birthplace for some.
    for index, org in enumerate(orgs):
        say_chair(org, people[2 * index + 1])
        if index % 2 == 1:  # the multi-hop questions' second hop changes too
            new_city = rng.choice([c for c in cities if c != born[people[2 * index + 1]]])
            say_born(people[2 * index + 1], new_city)
    numbered = [f"{serial}. {text}" for serial, (text, _) in enumerate(facts)]
    size = config.chunk_sentences
    chunks = [numbered[i : i + size] for i in range(0, len(numbered), size)]
    episodes = _episodes(scope_id, chunks, rng, joiner="\n")
    chunk_of: dict[str, list[str]] = {key: [] for key in history}
    for serial, (_, key) in enumerate(facts):
        if key is not None:
            chunk_of[key].append(episodes[serial // size].episode_id)
    questions: list[Question] = []
    note = "(A newer fact has a larger serial number.)"
    for index, org in enumerate(orgs):
        if index % 2 == 0:
            stale = tuple(v for v in history[f"chair:{org}"] if v != chair[org])
            prompt = f"Based on the knowledge pool, who is the chairperson of {org}? {note}"
            questions.append(
                _question(scope_id, len(questions) + 1, "conflict_resolution", prompt, [chair[org]], chunk_of[f"chair:{org}"],
                          len(episodes), "subem", stale, task="single_hop")
            )  # fmt: skip
        else:
            person = chair[org]
            old_chair = history[f"chair:{org}"][0]
            stale = tuple(dict.fromkeys(v for v in [*history[f"born:{person}"], born[old_chair]] if v != born[person]))
            prompt = f"Based on the knowledge pool, in which city was the chairperson of {org} born? {note}"
            refs = chunk_of[f"chair:{org}"] + chunk_of[f"born:{person}"]
            questions.append(
                _question(scope_id, len(questions) + 1, "conflict_resolution", prompt, [born[person]], refs, len(episodes), "subem",
                          stale, task="multi_hop")
            )  # fmt: skip
    return Scope(scope_id=scope_id, episodes=episodes), questions


def check_mab_dataset(dataset: Dataset) -> list[str]:
    """Invariants of a MemoryAgentBench dataset; empty when sound.

    LENS validation clean, known competencies and metrics, gold answers present, every gold answer stated
    somewhere in the stream, and no superseded value also a gold answer.
    """
    problems = [str(issue) for issue in validate_dataset(dataset, "<mab>")]
    texts = {scope.scope_id: "\n".join(e.text for e in scope.episodes).lower() for scope in dataset.scopes}
    for q in dataset.questions:
        if q.question_type not in COMPETENCIES:
            problems.append(f"{q.question_id}: unknown competency {q.question_type!r}")
        if q.meta.get("mab_metric") not in ("subem", "exact_match", "recall"):
            problems.append(f"{q.question_id}: unknown metric {q.meta.get('mab_metric')!r}")
        if not q.answers:
            problems.append(f"{q.question_id}: no gold answers")
        missing = [a for a in q.answers if a.lower() not in texts.get(q.scope_id, "")]
        if missing:
            problems.append(f"{q.question_id}: gold answers never stated in the stream: {missing}")
        if set(q.answers) & set(q.stale_values):
            problems.append(f"{q.question_id}: a stale value is also a gold answer")
    return problems
