"""deltaflow benchmarks (issue 7): ``python -m bench`` from the repository root.

A plain folder, not an installed package. Every system under test runs in its own
subprocess (``python -m bench.child``, or the Flink interpreter running
``bench/flink_job.py``) so that its peak RSS and CPU seconds are its own.
"""
