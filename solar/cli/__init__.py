"""The ``solar`` command line, assembled from one table of command modules.

Each module of :data:`COMMANDS` defines ``add_parser(subparsers)`` (returns its parser) and
``run(args) -> int`` (the exit status). Adding a command is one module and one entry here.
A command's module is imported only when that command runs, so ``solar --help`` and
``solar specs`` import no framework.

Layer: the top. Commands use the analysis API, the questions, the device-side modules and the
views; nothing imports the CLI.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from dataclasses import dataclass
from types import ModuleType

from solar.frontend.extras import MissingExtra, missing_extra
from solar.frontend.torchvision_ops import install_import_hook


@dataclass(frozen=True)
class Command:
    """One command: its module ``solar.cli.<name>``, imported only when the command runs (or
    when the whole parser is built), and its one-line help for ``solar --help``."""

    name: str
    help: str

    @property
    def __name__(self) -> str:
        return f"solar.cli.{self.name}"

    @property
    def module(self) -> ModuleType:
        return importlib.import_module(self.__name__)

    def add_parser(self, sub) -> argparse.ArgumentParser:
        return self.module.add_parser(sub)

    def run(self, args) -> int:
        return self.module.run(args)


#: every command, in the order ``solar --help`` lists them (each help as its module gives it)
COMMANDS = (
    Command("bound", "print the unfused, fused and cache-aware bounds"),
    Command("ir", "print the Affine Loop IR as loops"),
    Command("graph", "print the einsum graph"),
    Command("specs", "list the GPU spec catalogue"),
    Command("compare", "bounds of one program on several GPUs, one table"),
    Command(
        "provision", "inverse roofline: bandwidth, capacity and peaks a GPU needs for a target time"
    ),
    Command("serving", "the serving frontier of a model by name: TPOT against tokens/s/GPU"),
    Command("plot", "write the roofline, capacity, kernel, region, compare PNGs"),
    Command(
        "validate", "execute the IR at full size and compare with the source program's outputs"
    ),
    Command("headroom", "measure programs on the GPU, bound them, report headroom and violations"),
    Command(
        "calibrate", "measure the GPU's ceilings and write a spec with them beside the datasheet's"
    ),
    Command("score", "SOL score of a solution to a definition (needs a CUDA GPU)"),
)

EXPECTED_ERRORS: tuple[type[BaseException], ...] = (ValueError, TypeError, OSError, KeyError)

__all__ = ["COMMANDS", "Command", "build_parser", "main"]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with ``only``, the full parser of that command alone, the others named
    with their help (so ``solar --help`` and one command import no other command's module)."""
    p = argparse.ArgumentParser(
        prog="solar", description="Speed-of-light bounds of PyTorch and JAX programs on GPUs."
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = p.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        if only is None or command.name == only:
            command.add_parser(sub).set_defaults(run=command.module.run)
        else:
            sub.add_parser(command.name, help=command.help)
    return p


def _command_named(argv: list[str]) -> str:
    """The command word of ``argv``: its first argument that is not an option of ``solar``
    itself ("" when there is none: ``solar --help``)."""
    return next((a for a in argv if not a.startswith("-")), "")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(only=_command_named(argv)).parse_args(argv)
    # the command's process is solar's own: a torchvision whose extension cannot load beside
    # this torch imports in it (problem files, hub models, the zoo; solar.frontend.torchvision_ops)
    install_import_hook()
    # torch logs a failing fake-tensor kernel's traceback; the one-line error says it
    fake_log = logging.getLogger("torch._subclasses.fake_tensor")
    level = fake_log.level
    if not args.debug:
        fake_log.setLevel(logging.CRITICAL)
    try:
        return args.run(args)
    except BrokenPipeError:  # the reader went away (solar ... | head): end quietly
        _quiet_stdout()
        return 0
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
    except ModuleNotFoundError as e:  # an optional package: one line naming its extra
        if args.debug:
            raise
        known = e if isinstance(e, MissingExtra) else missing_extra(e, f"solar {args.command}")
        print(f"solar: error: {known or f'ModuleNotFoundError: {e}'}", file=sys.stderr)
        return 2
    except Exception as e:  # anything else (a framework error in user code, a bug): one line
        if args.debug:
            raise
        summary = getattr(e, "summary", None)  # solar.api.ProgramError: the program raised it
        if summary:  # an EagerRefusal says why there is no bound
            why = getattr(e, "hint", "raised by the program")
            msg, hint = summary, f"{why}; --debug shows the traceback"
        else:
            lines = str(e).strip().splitlines()
            msg = f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__
            hint = "--debug shows the traceback"
        print(f"solar: error: {msg} ({hint})", file=sys.stderr)
        return 2
    finally:
        fake_log.setLevel(level)


def _quiet_stdout() -> None:
    """Point stdout at the null device, so that the interpreter's last flush of a pipe whose
    reader has gone writes nowhere instead of printing another Broken pipe error."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
