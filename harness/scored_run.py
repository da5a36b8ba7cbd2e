"""``python -m harness.scored_run``: an entry point only; the command is
:mod:`harness.commands.scored_run`."""

if __name__ == "__main__":
    import sys

    from harness.commands.base import run_command
    from harness.commands.scored_run import main

    sys.exit(run_command(main))
