"""The ``accel`` command.

User errors (bad flags, bad files, a GPU asked for where none is usable) print one line,
``accel: error: ...``, on stderr and exit with status 2; no traceback, nothing written.
A run in which an arm failed exits with status 1 after writing its record.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence

from accel import __version__, output
from accel.credentials import hide
from accel.errors import AccelError, one_line
from accel.interrupts import Terminated, exit_status_stands, never_lost, what_was_kept
from accel.record import dumps as strict_json
from accel.record import remove_unused_folders


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (argparse prints the usage block first)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise AccelError(f"{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="accel", description="Tabular data science on the GPU, measured against a fair CPU baseline.")
    parser.add_argument("--version", action="version", version=f"accel {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    info = sub.add_parser("info", help="this machine: CPU, memory, GPUs, library versions, which arms can run")
    info.add_argument("--json", action="store_true", help="print JSON instead of tables")
    info.set_defaults(handler=_cmd_info)

    from accel.cli import bench, hpo, runs

    # run: a workflow on both arms; scale: on 1, 2, 4 ... Dask workers; bench, data, report; hpo,
    # experiments; predict: score new rows with a run's pipeline; compare: a user's own script,
    # CPU vs cudf.pandas/cuml.accel.
    runs.register(sub, "run", "scale")
    bench.register(sub)
    hpo.register(sub)
    runs.register(sub, "predict", "compare")
    completion = sub.add_parser("completion", help="print a shell completion script (bash or zsh)")
    completion.add_argument("shell", choices=["bash", "zsh"], help="the shell")
    completion.set_defaults(handler=lambda args: _cmd_completion(parser, args.shell))
    from accel.cli.usage import finish

    finish(parser)  # --quiet/--verbose and examples on every command
    return parser


def _cmd_completion(parser: argparse.ArgumentParser, shell: str) -> int:
    import shtab

    print(shtab.complete(parser, shell), end="")
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    from rich.console import Console

    from accel.environment import collect_environment
    from accel.report.console import render_info

    env = collect_environment()
    if args.json:
        print(strict_json(env))
    else:
        render_info(env, Console())
    return 0


#: The longest error line (the middle of a longer one is left out).
ERROR_CHARS = 1000


def error_line(message: str) -> str:
    """What follows ``accel: error:``: one printable line (a script's stderr quoted in it keeps no
    terminal escapes, :func:`accel.errors.one_line`), every credential hidden (a password quoted
    from an argument, :func:`accel.credentials.hide`), cut in the middle beyond
    :data:`ERROR_CHARS` (a 100,000-character name quoted whole would bury the advice after it)."""
    line = one_line(hide(message))
    if len(line) <= ERROR_CHARS:
        return line
    half = ERROR_CHARS // 2
    return f"{line[:half]} [... {len(line) - 2 * half:,} characters ...] {line[-half:]}"


def main(argv: Sequence[str] | None = None) -> int:
    before = output.level()  # --quiet / --verbose hold for this command, not for the process after it
    main_thread = threading.current_thread() is threading.main_thread()
    sigint = signal.getsignal(signal.SIGINT) if main_thread else None
    try:
        with never_lost():
            status = _main(argv)
            if status >= 2:  # refused, or stopped: an output folder made for it and left empty goes
                remove_unused_folders()
            return status
    finally:
        output.set_level(before)
        exit_status_stands()
        if argv is not None and sigint is not None:  # a Python caller gets its Ctrl-C back; the command line exits next
            signal.signal(signal.SIGINT, sigint)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        passthrough = None
        if argv[:1] == ["compare"] and "--" in argv:  # what follows '--' is the user's script's own
            cut = argv.index("--")
            argv, passthrough = argv[:cut], argv[cut + 1 :]
        args = parser.parse_args(argv)
        # Every command has both (usage.finish).
        output.set_level(output.QUIET if args.quiet else output.VERBOSE if args.verbose else output.NORMAL)
        if passthrough is not None:
            args.script_args = passthrough
        return args.handler(args)  # each command sets its own
    except AccelError as exc:
        print(f"accel: error: {error_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        # What the machine refused wherever it happens (a full disk, a read-only folder, no
        # permission): one line, not a traceback. Writers remove their temporary files themselves.
        from accel.files import ENVIRONMENT_ERRNOS, environment_error_line

        if exc.errno not in ENVIRONMENT_ERRNOS:
            raise
        print(f"accel: error: {error_line(environment_error_line(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        if threading.current_thread() is threading.main_thread():
            # The clean-up has run and the exit status is decided: a copy of the same Ctrl-C (sent
            # to the whole process group, or redelivered from a callback) must not kill the exit.
            signal.signal(signal.SIGINT, signal.SIG_IGN)

        if isinstance(exc, Terminated):
            print(f"accel: terminated ({exc.name}); {what_was_kept(exc)}", file=sys.stderr)
            return 128 + exc.signum
        print(f"accel: interrupted; {what_was_kept(exc)}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
