"""Late rows, counted on the metrics endpoint per event-time operator (issue 18: late data
dropped, as in Flink, and counted in a metric).

A TUMBLE window of 10 s over a Kafka topic with a 1 s watermark delay: a row at 25 s
moves the watermark to 24 s, which closes the windows [0 s, 10 s) and [10 s, 20 s); a
row at 3 s read after it is late (Flink drops it and counts it in numLateRecordsDropped),
one at 21 s is not.
"""

from __future__ import annotations

from metrics_text import parse, sample, scrape
from test_watermarks_kafka import JOB, Running, produce

from deltaflow.connectors.broker import ensure_topics, free_port
from deltaflow.processor.metrics import serve_metrics


def test_a_row_behind_the_watermark_is_counted_as_late(broker, new_topic, tmp_path):
    topic = new_topic("late")
    ensure_topics(broker, [topic], partitions=1)
    sql = JOB.format(settings="", topic=topic, bs=broker, extra="")
    running = Running(sql, broker, tmp_path)
    produce(broker, topic, [(0, 25)])
    running.wait_read(1)
    produce(broker, topic, [(0, 3), (0, 21)])
    running.wait_read(3)
    port = free_port()
    server = serve_metrics(running.job, port)
    try:
        families = parse(scrape(port))
    finally:
        server.shutdown()
        running.close()
    samples = families["deltaflow_late_records_dropped_total"]["samples"]
    assert [(labels["operator"], value) for _, labels, value in samples] == [("WindowAggregate", 1)]
    node = samples[0][1]["operator_id"]
    assert sample(families, "deltaflow_late_records_dropped_total", operator="WindowAggregate",
                  operator_id=node) == 1  # fmt: skip
