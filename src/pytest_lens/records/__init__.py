"""Typed records that the layers above read and write.

Settings, cases, budgets, per-question results and summaries, statistics: data and validation, no behaviour.
"""
