"""Build time only: regenerate the twin's snapshot from the reviewable ``source/`` files.

Not imported at run time; ``datagouv-eval twin build-snapshot`` runs :mod:`.build`.
"""
