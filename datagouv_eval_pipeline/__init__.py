"""datagouv-eval-pipeline: how well AI agents use the data.gouv.fr toolsets."""

from datagouv_eval_pipeline.base.loopback import exempt_loopback_from_proxies

exempt_loopback_from_proxies()
