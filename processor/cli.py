"""The ``deltaflow`` command line.

Every subcommand imports its implementation lazily, so ``deltaflow --help`` stays fast.
A ``DeltaflowError`` (a user's mistake or bad input) is printed as one message and
exits with status 2; it is never shown as a traceback.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from deltaflow.formats.errors import DeltaflowError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deltaflow",
        description="Run Flink SQL jobs over Debezium CDC topics in Kafka.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a Flink SQL job file until stopped or its input ends")
    run.add_argument("job", help="path of the .sql job file")
    run.add_argument(
        "--state-dir", default=None, help="LMDB state directory (default ./deltaflow-state/<job>)"
    )
    run.add_argument(
        "--from",
        dest="start_from",
        default=None,
        help="replay into a fresh state dir: earliest | latest | committed | timestamp:MS | "
        "offsets:TOPIC:PARTITION:OFFSET,...",
    )
    run.add_argument(
        "--embedded", action="store_true", help="start an embedded broker if the job names none"
    )
    run.add_argument(
        "--bootstrap-servers", default=None, help="override properties.bootstrap.servers"
    )
    run.add_argument(
        "--metrics-port", type=int, default=None, help="serve Prometheus metrics on this port"
    )
    run.add_argument("--quiet", action="store_true", help="no progress line")

    explain = sub.add_parser(
        "explain", help="print the optimized plan of every INSERT of a job file"
    )
    explain.add_argument("job", help="path of the .sql job file")
    explain.add_argument(
        "--code", action="store_true", help="also print the Python code generated for every node"
    )

    broker = sub.add_parser(
        "broker", help="run the embedded Kafka-compatible broker (tansu) on loopback"
    )
    broker.add_argument("--port", type=int, default=9092)

    state = sub.add_parser("state", help="inspect a state directory")
    state_sub = state.add_subparsers(dest="state_command", required=True)
    inspect = state_sub.add_parser("inspect", help="operators, key counts and bytes")
    inspect.add_argument("--state-dir", required=True)

    demo = sub.add_parser("demo", help="the inventory CDC demo on the embedded broker")
    demo.add_argument("--port", type=int, default=0, help="broker port (default: a free one)")
    return parser


def dispatch(args: argparse.Namespace) -> int:
    if args.command == "run":
        from deltaflow.processor.launch import run_cli

        return run_cli(args)
    if args.command == "explain":
        from deltaflow.processor.launch import explain_cli

        return explain_cli(args)
    if args.command == "broker":
        from deltaflow.connectors.broker import serve_forever

        return serve_forever(args.port)
    if args.command == "state":
        from deltaflow.state.inspect import inspect_cli

        return inspect_cli(args.state_dir)
    if args.command == "demo":
        from deltaflow.processor.demo import demo_cli

        return demo_cli(args)
    raise AssertionError(args.command)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
    """A planner warning is one line on stderr, like an error, without a source location."""
    print(f"deltaflow: warning: {message}", file=file or sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    warnings.showwarning = _show_warning
    if args.command == "run":  # in a child process, so that a native crash is reported
        from deltaflow.processor.supervise import supervised

        return supervised(lambda: reported(args), lambda: crash_cause(args))
    return reported(args)


def reported(args: argparse.Namespace) -> int:
    try:
        return dispatch(args)
    except DeltaflowError as err:
        print(f"deltaflow: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def crash_cause(args: argparse.Namespace) -> str | None:
    from deltaflow.processor.launch import deleted_topics

    return deleted_topics(args)


if __name__ == "__main__":
    sys.exit(main())
