"""The planner: a job file to the physical plan of ``deltaflow.processor.plan``.

Stages (``api.plan_job``): statements -> catalog (``catalog``) -> bound logical tree per
INSERT (``query``, ``binder``, ``aggregate``, ``top_n``, ``windows``, ``scan``, ``sink``;
expressions in ``bind_exprs``) -> ``api.TREE_RULES`` -> traits (``traits``: changelog
modes bottom-up, update kinds top-down, beside each node in ``logical``) ->
``api.SINK_RULES`` (materializer, sink and NDU checks) -> ``physical`` and ``explain``.
Rules are pure functions, one per module in ``rules``.
"""
