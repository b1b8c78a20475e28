"""The CLI shows a catalogue dataset's generated resources, as the API serves them."""

from __future__ import annotations

import json

from datagouv_eval_pipeline.world.catalogue import generated

from .helpers import Cli

DATASET = "6969c228770f993ed4817ef7"  # 6 resources in its export row, none hand-written


def test_dataset_get_lists_the_generated_resources(cli: Cli) -> None:
    result = cli("dataset", "get", DATASET)
    assert result.exit_code == 0, result.output
    record = json.loads(result.output.splitlines()[0])  # then the no-config notice
    assert len(record["resources"]) == 6
    assert record["extras"] == {generated.GENERATED_KEY: ["resources", "quality"]}
    rid = generated.resource_id(DATASET, 2)
    shown = cli("resource", "display", rid)
    assert shown.exit_code == 0, shown.output
    assert rid in shown.output and "esri shapefile (shp)" in shown.output
