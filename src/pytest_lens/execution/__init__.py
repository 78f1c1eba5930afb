"""Running an adapter safely.

Every call through ``AdapterCaller`` (faults, timeouts, owner threads), the stream runtime, the agent's tool
bridge. Internal.
"""
