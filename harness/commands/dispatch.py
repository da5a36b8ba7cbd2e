"""``harness <command> [args]``: the one command line, handing over to each command.

``run`` (the study, over Hydra) is the default: ``harness`` alone, or with a first argument
that is a Hydra override (``dataset=x``, ``+a=b``, ``~key``) or a Hydra flag (``-m``,
``--cfg job``), runs a study. Every other command lives in :mod:`harness.commands`; the
registry below names its module, imported only when the command runs, so ``harness
--help`` answers without loading pandas, MLflow or Hydra. ``python -m harness`` is this
same command line; ``python -m harness.<command>`` still runs one command directly.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys
from collections.abc import Sequence
from typing import NamedTuple

from harness.commands.base import BAD_INPUT, OK, run_command, tune_allocator

__all__ = ["COMMANDS", "STUDY", "main", "parser", "unknown_command"]


class Command(NamedTuple):
    module: str  # holds ``main(argv: list[str] | None = None) -> int``
    summary: str  # its line in ``harness --help``


#: The study: a Hydra app, handed the command line as ``sys.argv``.
STUDY = "run"
#: command name -> where it lives and what it does, in the order ``--help`` lists them
COMMANDS: dict[str, Command] = {
    STUDY: Command("harness.app.main", "run a study: dataset x rankers x metric variants "
                   "(the default)"),
    "compare": Command("harness.commands.compare", "compare the ranker versions of a sweep; "
                       "write a report"),
    "reproduce": Command("harness.commands.reproduce", "re-run logged evaluations; compare "
                         "every value bit for bit"),
    "explain": Command("harness.commands.explain", "why two definitions of a metric disagree "
                       "on a TREC run"),
    "sync": Command("harness.commands.sync", "send log plans left pending while MLflow was "
                    "unreachable"),
    "cluster": Command("harness.commands.cluster", "rewrite a parquet run clustered by qid, "
                       "out of core"),
    "scored-run": Command("harness.commands.scored_run", "write a synthetic scored parquet "
                          "run (to try streaming)"),
    "eval": Command("harness.commands.eval", "trec_eval's command line and output; "
                    "ir_measures' and ranx's names too"),
    "judgments": Command("harness.commands.judgments", "how much a comparison of TREC runs "
                         "depends on unjudged documents"),
}
#: Hydra's own flags: a command line starting with one of them is a study's
HYDRA_FLAGS = frozenset((
    "-m", "--multirun", "-c", "--cfg", "--resolve", "-p", "--package", "-r", "--run",
    "--hydra-help", "-i", "--info", "-cp", "--config-path", "-cn", "--config-name", "-cd",
    "--config-dir", "-sc", "--shell-completion", "--experimental-rerun"))
EXIT_CODES = "exit codes: 0 ok, 1 a finding (differences, failed checks), 2 bad input,\n" \
             "            3 service unreachable (MLflow)"


def parser() -> argparse.ArgumentParser:
    """The top-level parser: its help lists the commands, one line each."""
    from harness.version import __version__

    width = max(map(len, COMMANDS))
    listing = "\n".join(f"  {name:<{width}}  {c.summary}" for name, c in COMMANDS.items())
    p = argparse.ArgumentParser(
        prog="harness", formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="harness <command> [args ...]\n"
              "       harness [-m] [GROUP=OPTION ...] [KEY=VALUE ...]   (same as harness run)",
        description="Ranking evaluation where every nDCG choice is explicit.\n\n"
                    f"commands:\n{listing}",
        epilog="harness <command> --help shows a command's options (harness run --help: the "
               "study's\nconfig groups and overrides).\n" + EXIT_CODES)
    p.add_argument("--version", action="version", version=f"harness {__version__}")
    sub = p.add_subparsers(dest="command", help=argparse.SUPPRESS)
    for name in COMMANDS:
        sub.add_parser(name, add_help=False)
    return p


def starts_a_study(arg: str) -> bool:
    """Whether a first argument belongs to ``harness run``: a Hydra override or flag."""
    return "=" in arg or arg.startswith(("+", "~")) or arg in HYDRA_FLAGS


def unknown_command(name: str) -> str:
    """The one-line error for a name that is no command: the closest ones, and the list."""
    close = difflib.get_close_matches(name.replace("_", "-"), COMMANDS, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (f"unknown command {name!r}{hint}; commands: {', '.join(COMMANDS)} (harness "
            "--help); a study's overrides look like key=value")


def _study(argv: Sequence[str]) -> int:
    """``harness run``: Hydra reads ``sys.argv``, so the command line becomes it."""
    sys.argv = [sys.argv[0], *argv]
    from harness.app.help import main as help_main

    help_main(argv)  # the study's help answers without loading Hydra
    from harness.app.main import main as study_main

    study_main()  # exits through SystemExit on an error, or os._exit after a run
    return OK


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``harness <command> [args]``; return the exit code (see :data:`EXIT_CODES`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if argv is None:  # the process is the command line's own (not a caller's)
        tune_allocator()
    if not args or starts_a_study(args[0]):
        return _study(args)
    name, rest = args[0], args[1:]
    if name.startswith("-") and name not in ("-h", "--help", "--version"):
        print(f"error: unknown option {name!r}: give a command first "
              f"({', '.join(COMMANDS)}), or a study's key=value overrides", file=sys.stderr)
        return BAD_INPUT
    if name not in COMMANDS and not name.startswith("-"):
        print(f"error: {unknown_command(name)}", file=sys.stderr)
        return BAD_INPUT
    parsed = parser().parse_args(args[:1])  # --help and --version exit here
    if parsed.command == STUDY:
        return _study(rest)
    command = importlib.import_module(COMMANDS[parsed.command].module)
    return run_command(command.main, rest)

