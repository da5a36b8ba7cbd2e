"""trec_eval's procedure around the engine: which queries count, its flags, its output.

:mod:`.trec_eval_compute` is the procedure on tables; :mod:`.trec_eval_arrays` the same on
column arrays without pandas (``harness eval``'s quick path) and :mod:`.trec_eval_blocks`
on a large run block by block; :mod:`.prefs`, :mod:`.prefs_counts` and :mod:`.prefs_input`
are its preference measures.
"""
