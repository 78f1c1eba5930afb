"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests, driven by scripted policies.

The real ``openai`` client talks to it, so everything between pytest-lens (or your
own LLM-backed adapter) and an endpoint is exercised: tool calls, usage, retries,
the request cache. Replies come from deterministic policies instead of a model, and
faults (429, 5xx, slow responses, malformed tool-call JSON, unusable text) can be
injected for chosen requests. Every request is counted::

    from lens_fixtures.openai_server import Fault, OpenAITestServer

    with OpenAITestServer(faults=[Fault("status", rate=0.2, status=500)]) as server:
        run_pytest(f"--lens-llm-base-url={server.base_url}", "--lens-agent=llm", "--lens-agent-model=scripted")
        assert server.count(path="/v1/chat/completions") > 0

The default policy, :class:`LensPolicy`, plays every role pytest-lens asks of a model:
an agent that searches the question, batch-retrieves the top hits and answers citing
them; a judge that compares key-fact coverage; MEME's and LongMemEval's judges (:class:`MemeJudgePolicy`:
JSON verdicts by MEME's mechanical rules, with misbehaving variants); the naive baseline;
the compaction adapter's summariser, and the memory policies' folds (:class:`FoldPolicy`). ``/v1/embeddings``
returns deterministic hashed bag-of-words vectors. :class:`EmptyExtractionPolicy` is the empty extractor: every
memory-building request answered well formed, with nothing extracted.

Standalone: ``python -m lens_fixtures.openai_server [--port 8090] [--empty-extraction]``.
"""

from lens_fixtures.openai_server.empty import EmptyExtractionPolicy
from lens_fixtures.openai_server.extraction import ExtractionPolicy
from lens_fixtures.openai_server.extraction_letta import LettaAgentPolicy
from lens_fixtures.openai_server.faults import Fault
from lens_fixtures.openai_server.folds import FoldPolicy
from lens_fixtures.openai_server.policies import (
    BaselinePolicy,
    ChatRequest,
    FactCheckPolicy,
    HierarchyPolicy,
    JudgePolicy,
    LensPolicy,
    LongMemEvalJudgePolicy,
    MemeJudgePolicy,
    MemePrompt,
    Policy,
    Reply,
    RetrievalAgentPolicy,
    ScriptedAgentPolicy,
    StochasticAgentPolicy,
    SummaryPolicy,
    SupportPolicy,
    classify,
)
from lens_fixtures.openai_server.server import CONTEXT_ERROR_STYLES, OpenAITestServer, RecordedRequest, hashed_embedding

__all__ = [
    "CONTEXT_ERROR_STYLES",
    "BaselinePolicy",
    "ChatRequest",
    "EmptyExtractionPolicy",
    "ExtractionPolicy",
    "FactCheckPolicy",
    "Fault",
    "FoldPolicy",
    "HierarchyPolicy",
    "JudgePolicy",
    "LensPolicy",
    "LettaAgentPolicy",
    "LongMemEvalJudgePolicy",
    "MemeJudgePolicy",
    "MemePrompt",
    "OpenAITestServer",
    "Policy",
    "RecordedRequest",
    "Reply",
    "RetrievalAgentPolicy",
    "ScriptedAgentPolicy",
    "StochasticAgentPolicy",
    "SummaryPolicy",
    "SupportPolicy",
    "classify",
    "hashed_embedding",
]
