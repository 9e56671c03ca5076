"""The ``perfsuite`` command: ``perfsuite info | compare | qualify | sweep | db``.

Exit codes, the same for every subcommand: 0 pass; 1 a regression (compare) or a FAIL
(qualify); 2 a usage or input error (bad option, unreadable or invalid file, output location
that cannot take files), one line on stderr; 3 an internal error (a bug: one line, and the
traceback with PERFSUITE_DEBUG=1)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Iterable

from perfsuite.text import NotFinite, SafeTerminal
from perfsuite.writing import NotWritable

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it

# Each verb is a module of this package, perfsuite.cli.<verb>, with add_parser(subparsers),
# its cmd_* and INPUT_ERRORS (the exceptions that are bad input: exit 2). Here is its line in
# `perfsuite --help`: main imports only the module of the verb it runs, so that `perfsuite
# --help` and `perfsuite info` do not load the gate (scipy), the results history (SQLAlchemy)
# and the rest of what the other verbs need.
VERBS = {
    "info": "print the host fingerprint",
    "compare": "gate CURRENT against BASELINE (files or run dirs)",
    "qualify": "qualify this server against its SKU reference",
    "sweep": "run a sweep profile on each host of a Spark cluster (on this machine: "
    "pytest --benchmark-only)",
    "ab": "relative runs: the same points from two interpreters/venvs, interleaved, B gated "
    "against A",
    "icount": "instruction counts of the kernels under valgrind: deterministic, gated at 1%%",
    "db": "the results history: import, runs, history, changes, ...",
    "export": "a run as github-action-benchmark, Bencher (BMF) or Conbench JSON",
    "models": "list the models a run can measure, or inspect one (a name or a file)",
}


def verb_module(name: str):
    # by name, when the verb runs: see VERBS
    return importlib.import_module(f"{__name__}.{name}")


def add_verb(subparsers, name: str) -> argparse.ArgumentParser:
    """The verb's parser, with its line from VERBS (for the verb modules' add_parser)."""
    return subparsers.add_parser(name, help=VERBS[name])


class Parser(argparse.ArgumentParser):
    def error(self, message: str):
        """One line (not argparse's usage block), exit 2. "unrecognized arguments: --store
        postgresql://u:pw@..." would print the password: URLs are masked."""
        from perfsuite.urls import hide_secrets

        self.exit(EXIT_USAGE, f"{self.prog}: {hide_secrets(message)} (see --help)\n")


def build_parser(verbs: Iterable[str] = tuple(VERBS)) -> argparse.ArgumentParser:
    """The parser of every verb (the default: the reference docs render it), or of the given
    verbs with the others listed by name only."""
    parser = Parser(prog="perfsuite", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in VERBS:
        if name in verbs:
            verb_module(name).add_parser(sub)
        else:
            add_verb(sub, name)
    return parser


def main(argv: list[str] | None = None) -> int:

    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = SafeTerminal(sys.stdout), SafeTerminal(sys.stderr)
    try:  # Ctrl-C at any moment, imports and parsing included: one line, exit 130
        return _main(argv)
    except KeyboardInterrupt:
        print("perfsuite: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        sys.stdout, sys.stderr = streams


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # the verb is the first word that is not an option (the top level has none but --help)
    verb = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser((verb,) if verb in VERBS else ()).parse_args(argv)  # usage errors: 2
    module = verb_module(args.command)
    from perfsuite import kernels  # after parsing: numpy would double `perfsuite --help`'s time

    problem = kernels.forced_isa_problem()
    if problem:
        print(f"perfsuite: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return args.func(args)
    except (*module.INPUT_ERRORS, NotWritable, NotFinite) as exc:  # bad input: one line
        print(f"perfsuite {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a bug: one line, not a traceback, and a code of its own
        if os.environ.get("PERFSUITE_DEBUG"):
            raise
        name = args.func.__name__.removeprefix("cmd_")
        print(
            f"perfsuite {name}: internal error: {exc.__class__.__name__}: {exc} "
            "(PERFSUITE_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


__all__ = [
    "EXIT_FAIL",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "VERBS",
    "build_parser",
    "main",
]
