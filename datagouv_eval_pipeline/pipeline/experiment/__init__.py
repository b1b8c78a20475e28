"""One experiment end to end, as plain functions the Dagster assets and the benchmark call.

* ``store``: the run store, one JSON file per (stage, cell) written atomically;
* ``cache``: agent runs cached by the hash of their inputs;
* ``plan``: which cells and tasks an experiment covers, and its cost estimate;
* ``stages``: the stage functions (agents → action mappings → judge scores → warehouse).
"""
