"""The HTML report (``--lens-html``, ``lens report``): one self-contained page per run."""

#: What writing the report imports (matplotlib above all): loaded in the background while the tests run.
REPORT_MODULES = ("matplotlib.figure", "matplotlib.backends.backend_svg", "markupsafe", "pytest_lens.html.report", "pytest_lens.html.page")
