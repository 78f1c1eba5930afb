"""The adapter contract.

What a memory adapter implements (public through ``pytest_lens``), how adapters are found by name, and
the JSON schemas of extra tools.
"""
