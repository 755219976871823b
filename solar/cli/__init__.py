"""The ``solar`` command line, assembled from one table of command modules.

Each module of :data:`COMMANDS` defines ``add_parser(subparsers)`` (returns its parser) and
``run(args) -> int`` (the exit status). Adding a command is one module and one entry here.

Layer: the top. Commands use the analysis API, the questions, the device-side modules and the
views; nothing imports the CLI.
"""

from __future__ import annotations

import argparse
import logging
import sys

from solar.cli import (
    bound,
    calibrate,
    common,
    compare,
    graph,
    headroom,
    ir,
    plot,
    provision,
    specs,
    validate,
)

#: every command, in the order ``solar --help`` lists them
COMMANDS = (bound, ir, graph, specs, compare, provision, plot, validate, headroom, calibrate)

EXPECTED_ERRORS: tuple[type[BaseException], ...] = (ValueError, TypeError, OSError, KeyError)

__all__ = ["COMMANDS", "build_parser", "common", "main"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="solar", description="Speed-of-light bounds of PyTorch and JAX programs on GPUs."
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = p.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub).set_defaults(run=command.run)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # torch logs a failing fake-tensor kernel's traceback; the one-line error says it
    fake_log = logging.getLogger("torch._subclasses.fake_tensor")
    level = fake_log.level
    if not args.debug:
        fake_log.setLevel(logging.CRITICAL)
    try:
        return args.run(args)
    except EXPECTED_ERRORS as e:
        report = getattr(e, "report", None)  # UnsupportedOperatorError: every missing operator
        if args.debug:
            if callable(report):
                print(f"solar: error: {report(all_sources=True)}", file=sys.stderr)
            raise
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if callable(report):
            msg = report()
        if isinstance(e, KeyError):  # str(KeyError) is the repr of the key alone
            msg = f"KeyError: {msg}"
        print(f"solar: error: {msg}", file=sys.stderr)
        return 2
    except Exception as e:  # anything else (a framework error in user code, a bug): one line
        if args.debug:
            raise
        lines = str(e).strip().splitlines()
        msg = f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__
        print(f"solar: error: {msg} (--debug shows the traceback)", file=sys.stderr)
        return 2
    finally:
        fake_log.setLevel(level)


if __name__ == "__main__":
    sys.exit(main())
