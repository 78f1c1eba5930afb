"""Statistics of a run: confidence intervals, paired comparisons between adapters and against a baseline.

``models`` holds the typed results (pydantic, no numpy); ``resample`` the composite
recomputed over bootstrap resamples; ``run`` the per-run analysis; ``baseline`` the
comparison with a saved run; ``render`` the terminal tables. numpy and scipy are
imported only when a statistic is computed.
"""
