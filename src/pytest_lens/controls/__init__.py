"""Controls and mutants (``--lens-controls``): the benchmark measures its own power.

:mod:`~pytest_lens.controls.plan` decides which control adapters a run adds (``null``,
``random`` and mutants of each user adapter); :mod:`~pytest_lens.controls.mutants` holds the
degrading wrappers; :mod:`pytest_lens.analysis.sensitivity` turns their results into the
sensitivity table. Nothing here imports anything heavy.
"""
