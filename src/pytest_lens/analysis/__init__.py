"""Statistics of a run: confidence intervals, paired comparisons between adapters and against a baseline.

``models`` holds the typed results (pydantic, no numpy); ``resample`` the composite
recomputed over bootstrap resamples; ``run`` the per-run analysis; ``baseline`` the
comparison with a saved run; ``render`` the terminal tables. numpy is imported only
when a statistic is computed, scipy only when a significance test is (two adapters, or
a baseline): intervals alone are numpy's.
"""
