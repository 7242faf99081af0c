"""The planner: a job file to the physical plan of ``deltaflow.processor.plan``.

Stages (``api.plan_job``): statements -> catalog (``catalog``) -> bound logical tree per
INSERT (``query``, ``binder``, ``aggregate``, ``top_n``, ``windows``, ``scan``, ``sink``;
expressions in ``bind_exprs``) -> ``api.TREE_RULES`` -> traits (``traits``: changelog
modes bottom-up, update kinds top-down, beside each node in ``logical``) ->
``api.SINK_RULES`` (materializer, sink and NDU checks) -> ``physical`` ->
``physical_rules`` over the whole job (pushed projections and filters, fused Calcs, as
fields of the frozen plan) -> ``explain`` and ``fingerprint``. Rules are pure functions,
one per module in ``rules``.
"""
