"""Judging answers.

LLM and offline judges, strict reading of verdicts, the naive baseline, the judge-backed scorers and LENS V2
scoring. Internal.
"""
