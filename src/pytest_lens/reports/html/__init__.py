"""The HTML report (``--lens-html``, ``lens report``): one self-contained page per run."""

#: What writing the report imports: loaded in the background while the tests run. (No plotting library: the
#: figures are Vega-Lite specs the browser draws.)
REPORT_MODULES = ("markupsafe", "pytest_lens.reports.html.report", "pytest_lens.reports.html.page")
