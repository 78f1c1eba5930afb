"""LLM plumbing shared by the LLM agent, the LLM judge, the naive baseline and LLM-backed adapters.

Every request goes through one :class:`~pytest_lens.llm.client.ChatClient`, which
answers from the :class:`~pytest_lens.llm.cache.RequestCache` when it can and
otherwise calls an OpenAI-compatible endpoint through the ``openai`` package
(imported on the first real request only).

This package's ``__init__`` imports nothing: ``settings`` is read by the plugin at
start-up and must stay stdlib-only.
"""
