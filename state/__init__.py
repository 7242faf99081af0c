"""LMDB state: keyed tables, indexed CDC mirrors, checkpoints.

``deltaflow.state.backend.StateBackend`` is the entry point; see its module docstring.
"""
