"""The simulated world an agent acts in: the data.gouv.fr twin, MCP, front, sandbox."""
