"""The evaluation's pure core: task specs, semantic layer, metrics, judges, benchmark."""
