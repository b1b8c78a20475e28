"""``python -m datagouv_eval_pipeline.world.datagouv_cli`` runs the emulated ``datagouv`` CLI."""

from datagouv_eval_pipeline.world.datagouv_cli.app import main

main()
