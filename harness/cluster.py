"""``python -m harness.cluster``: an entry point only; the command is
:mod:`harness.commands.cluster`."""

if __name__ == "__main__":
    import sys

    from harness.commands.base import run_command
    from harness.commands.cluster import main

    sys.exit(run_command(main))
