"""What a run shows a person.

The terminal summary and legend, statistics tables, transcripts (``views``) and the HTML report (``html``).
Internal.
"""
