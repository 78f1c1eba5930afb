"""One LENS run as a whole, without pytest.

The session the plugin drives, saved runs, merged runs and the evidence an artifact keeps. Internal.
"""
