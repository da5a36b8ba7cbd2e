"""``python -m harness.sync``: an entry point only; the command is
:mod:`harness.commands.sync`."""

if __name__ == "__main__":
    import sys

    from harness.commands.base import run_command
    from harness.commands.sync import main

    sys.exit(run_command(main))
