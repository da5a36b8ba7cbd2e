"""Every command's argument layer, one module each, over a library function: ``compare``,
``explain``, ``reproduce``, ``sync``, ``cluster``, ``scored_run`` (``python -m
harness.<name>``). :mod:`harness.commands.base` holds what they share: ``--tracking-uri``,
exit codes (0 ok, 1 differences or failures, 2 bad input, 3 store unreachable) and the
one-line ``error: ...`` on stderr. The study itself is ``python -m harness``
(:mod:`harness.app.main`)."""
