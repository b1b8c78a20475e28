"""A small benchmark configuration whose cross-product is worked out by hand in the tests."""

from __future__ import annotations

from pathlib import Path

MODELS = """\
currency: EUR
providers:
  - name: offline
    kind: offline
    models:
      - {name: m1, active: true, input_price_per_mtok: 0, output_price_per_mtok: 0}
      - {name: m2, active: true, input_price_per_mtok: 0, output_price_per_mtok: 0}
      - {name: m3, active: false, input_price_per_mtok: 0, output_price_per_mtok: 0}
  - name: albert
    base_url: https://albert.example/v1
    api_key_env: ALBERT_API_KEY
    models:
      - name: openai/gpt-oss-120b
        active: true
        input_price_per_mtok: 2.0
        output_price_per_mtok: 8.0
"""

MCP_VERSIONS = """\
mcp_versions:
  - {version: "0.2.19", url: "http://127.0.0.1:{twin_port}/mcp/v0.2.19/mcp", active: true}
  - {version: "0.2.26", url: "http://127.0.0.1:{twin_port}/mcp/v0.2.26/mcp", active: true}
  - {version: "0.2.5", url: "https://mcp.example/mcp", active: false}
"""

SKILLS_VERSIONS = """\
skills_versions:
  - {version: "0.0.1", file: skills/s1.md, active: true}
"""

SYSTEM_PROMPTS = """\
system_prompts:
  - {name: a, active: true, text: "You help."}
  - {name: b, active: false, text: ""}
"""

EVALUATION_TYPES = """\
evaluation_types:
  - name: t1
    description: d1
    active: true
    capability_sets: [[], [mcp]]
    metrics: [result_accuracy]
    compares: [capability]
  - name: t2
    description: d2
    active: true
    capability_sets: [[skills, mcp]]
    system_prompts: all
    mcp_versions: ["0.2.26"]
    metrics: [result_accuracy, action_usage]
    compares: [system_prompt]
  - name: t3
    description: d3
    active: true
    capability_sets: [[mcp]]
    mcp_versions: ["0.2.26"]
    metrics: [action_usage, efficiency]
    compares: [model]
  - name: t4
    description: d4
    active: false
    capability_sets: [[code]]
    system_prompts: [b]
    metrics: [efficiency]
    compares: [model]
"""

FILES = {
    "models.yml": MODELS,
    "mcp_versions.yml": MCP_VERSIONS,
    "skills_versions.yml": SKILLS_VERSIONS,
    "system_prompts.yml": SYSTEM_PROMPTS,
    "evaluation_types.yml": EVALUATION_TYPES,
}
SKILLS_TEXT = "# Skills\nUse the tabular API.\n"


def write_config(directory: Path) -> Path:
    """Write the small configuration into a directory and return it."""
    (directory / "skills").mkdir(parents=True)
    (directory / "skills" / "s1.md").write_text(SKILLS_TEXT, encoding="utf-8")
    for name, text in FILES.items():
        (directory / name).write_text(text, encoding="utf-8")
    return directory
