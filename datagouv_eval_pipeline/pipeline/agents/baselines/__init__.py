"""Offline baseline agents: deterministic policies driven through pydantic-ai's ``FunctionModel``.

They are **not LLMs**. Each reads the question, the tool schemas the agent really offers
(``AgentInfo.function_tools``) and the instructions it is given (``AgentInfo.instructions``),
makes real tool calls through the real toolsets, and builds its final answer only from what the
tools returned. Their scores therefore differ for real reasons (how far they follow the catalog
chain, which tool surface the MCP version offers, what the skills document tells them) and give
a floor that LLM agents should beat.

* ``baseline-oneshot`` (:mod:`.oneshot`): one search (MCP, web search, or one request from
  code; through MCP, of the APIs when the question asks for one and the toolset can), answers
  with the most related result.
* ``baseline-thorough`` (:mod:`.thorough`): search → dataset info → resources → resource info →
  data, with a filter derived from the question; dataservices (the API's record and OpenAPI
  spec) and metrics when the question asks for them. Through MCP, web search, or code (one
  request per program).
* ``baseline-coder`` (:mod:`.coder`): writes Python against the REST and Tabular APIs, several
  requests per program, and uses ``datagouv`` commands when ``datagouv-cli`` is there.

Without any tool (``data_contamination``) every baseline runs and declines, saying it has no
knowledge of its own. Advice the policies act on is read from the instructions
(:mod:`.guidance`): with ``skills`` the document's text changes some steps. ``unsupported``
names the capability sets a policy cannot use (``baseline-coder`` without code).
"""

from __future__ import annotations

from datagouv_eval_pipeline.pipeline.agents.baselines.code import ApiBases
from datagouv_eval_pipeline.pipeline.agents.baselines.coder import CoderPolicy
from datagouv_eval_pipeline.pipeline.agents.baselines.guidance import NO_GUIDANCE, Guidance
from datagouv_eval_pipeline.pipeline.agents.baselines.model import (
    POLICIES,
    get_policy,
    policy_model,
)
from datagouv_eval_pipeline.pipeline.agents.baselines.oneshot import OneShotPolicy
from datagouv_eval_pipeline.pipeline.agents.baselines.parsing import (
    DerivedFilter,
    Listed,
    derive_filter,
    field_value,
    metrics_line,
    numbered_items,
    preview_rows,
    total_rows,
)
from datagouv_eval_pipeline.pipeline.agents.baselines.policy import (
    NO_TOOLS,
    NOT_AN_LLM,
    NOTHING_FOUND,
    BaselinePolicy,
    Call,
    Findings,
    Observation,
    Parallel,
    Step,
    ToolSurface,
    observations_of,
    question_of,
)
from datagouv_eval_pipeline.pipeline.agents.baselines.text import (
    DateBound,
    Place,
    asks_for_api,
    asks_for_metrics,
    date_bound,
    is_quantitative,
    keywords,
    month_asked,
    place,
)
from datagouv_eval_pipeline.pipeline.agents.baselines.thorough import ThoroughPolicy

__all__ = [
    "NOTHING_FOUND",
    "NOT_AN_LLM",
    "NO_GUIDANCE",
    "NO_TOOLS",
    "POLICIES",
    "ApiBases",
    "BaselinePolicy",
    "Call",
    "CoderPolicy",
    "DateBound",
    "DerivedFilter",
    "Findings",
    "Guidance",
    "Listed",
    "Observation",
    "OneShotPolicy",
    "Parallel",
    "Place",
    "Step",
    "ThoroughPolicy",
    "ToolSurface",
    "asks_for_api",
    "asks_for_metrics",
    "date_bound",
    "derive_filter",
    "field_value",
    "get_policy",
    "is_quantitative",
    "keywords",
    "metrics_line",
    "month_asked",
    "numbered_items",
    "observations_of",
    "place",
    "policy_model",
    "preview_rows",
    "question_of",
    "total_rows",
]
