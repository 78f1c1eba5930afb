"""Answering questions.

One question end to end (``engine``) and many at once (``concurrency``). Internal.
"""
