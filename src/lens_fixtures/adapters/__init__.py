"""Reference adapters, registered by short name under the ``pytest_lens.adapters`` entry points."""
