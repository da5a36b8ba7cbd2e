from harness.app.help import main as help_main

help_main()  # --help / -h: the project's own help, answered before Hydra is imported

from harness.app.main import main  # noqa: E402

main()
