"""Sources and sinks: Kafka, upsert-kafka, filesystem, datagen, print, blackhole, and the
embedded broker.

The runtime uses ``deltaflow.connectors.base``: ``create_source(spec, bootstrap=, start=)``,
``create_sink(spec, bootstrap=, out=)``, ``source_changelog_mode(spec)`` and
``sink_accepted_mode(spec)``; ``deltaflow.connectors.broker`` runs tansu locally.
"""
