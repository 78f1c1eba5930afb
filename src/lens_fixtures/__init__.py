"""Reference memory adapters and bundled datasets for pytest-lens."""

__all__: list[str] = []
