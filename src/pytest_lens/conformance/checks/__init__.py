"""The clauses of the adapter contract, one module per concern; :mod:`pytest_lens.conformance.catalog` lists them."""
