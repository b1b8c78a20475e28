"""Agent runs: capability toolsets, models (live, offline baselines, replay), the code sandbox."""
