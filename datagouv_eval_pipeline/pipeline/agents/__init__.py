"""Agent runs: capability toolsets, models (live, offline baselines, replay), skills, web tools."""
