"""Every command's argument layer, one module each, over a library function: ``compare``,
``explain``, ``reproduce``, ``sync``, ``cluster``, ``scored_run`` (``harness <command>``;
``python -m harness.<name>`` too). :mod:`harness.commands.dispatch` is the ``harness``
command line itself, whose default command ``run`` is the study (:mod:`harness.app.main`).
:mod:`harness.commands.base` holds what the commands share: ``--tracking-uri``, exit codes
(0 ok, 1 differences or failures, 2 bad input, 3 store unreachable) and the one-line
``error: ...`` on stderr."""
