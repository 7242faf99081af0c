"""The streaming runtime: one operator per physical plan node, run on batches.

``graph.Graph(plan, backend, ctx)`` builds the operators of a ``JobPlan`` and runs
source batches through them (``push``), advances watermarks (``advance_watermark``),
empties buffers (``flush``) and ends bounded input (``finish``). Operators keep their
state in tables of the job's LMDB ``StateBackend`` named ``"<node_id>:<Node>:<part>"``
and reproduce Apache Flink's changelog at parallelism 1:

- ``simple``: scan, Calc (one generated function), DropUpdateBefore, Union, Sink
- ``group_agg`` + ``aggs``: GroupAggregate with retracting accumulators, mini-batch
- ``join``: regular INNER/LEFT/RIGHT/FULL join; ``lookup``: lookup join
- ``keyed``: ChangelogNormalize, Deduplicate, SinkUpsertMaterializer
- ``rank``: ROW_NUMBER Top-N; ``window``: TUMBLE/HOP/CUMULATE window aggregation
"""
