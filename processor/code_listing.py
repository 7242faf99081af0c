"""``deltaflow explain --code``: the Python code a job generates, node by node.

The job's decoders, operators and encoders are built as ``deltaflow run`` builds them
(the sources' decoders and the sinks' encoders without their connections: nothing is
read or written, no broker is contacted), over a throw-away state directory, while ``formats/generated.py``
records every function compiled. Each is printed under the file name its frames carry
in a traceback, ``<deltaflow GroupAggregate#3 fold>``.
"""

from __future__ import annotations

import tempfile

from deltaflow.connectors.base import build_sink_encoders, source_changelog_mode
from deltaflow.formats.generated import Generated, collecting, for_node, listing
from deltaflow.processor.job_tables import scans_of, sink_spec, source_spec
from deltaflow.processor.plan import JobPlan
from deltaflow.processor.runtime.graph import Graph, RuntimeContext
from deltaflow.state.backend import StateBackend


def generated_code(plan: JobPlan) -> list[Generated]:
    """Every function the job compiles: its sources' decoders, then its operators in
    topological order, then its sinks' encoders."""
    with collecting() as found, tempfile.TemporaryDirectory(prefix="deltaflow-code-") as tmp:
        for scan in scans_of(plan):
            spec = source_spec(scan)  # the plan records its projection and pushed filter
            with for_node(scan):
                source_changelog_mode(spec)  # builds its decoders
        with StateBackend(tmp, durable=False) as backend:
            Graph(plan, backend, RuntimeContext.from_settings(plan.settings))
        for sink in plan.sinks:
            with for_node(sink):
                build_sink_encoders(sink_spec(sink))
    return found


def code_text(plan: JobPlan) -> str:
    """The listing printed by ``deltaflow explain --code``."""
    found = generated_code(plan)
    if not found:
        return "== Generated code ==\n(none)\n"
    return "== Generated code ==\n\n" + listing(found)
