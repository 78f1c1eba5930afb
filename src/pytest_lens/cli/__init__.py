"""The ``lens`` command and its subcommands.

Internal: run it as ``lens``, not as a library.
"""
