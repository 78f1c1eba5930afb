"""The conformance suite's pytest layer.

``--lens-conformance``, the ``lens_conformance`` marker and fixture.
"""
