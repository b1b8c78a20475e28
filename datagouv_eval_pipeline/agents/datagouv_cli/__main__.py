"""``python -m datagouv_eval_pipeline.agents.datagouv_cli`` runs the emulated ``datagouv`` CLI."""

from datagouv_eval_pipeline.agents.datagouv_cli.app import main

main()
