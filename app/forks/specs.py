"""What a fork request says (`POST /v1/runs/{id}/fork`), checked before anything is read."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from app.service.schemas import AS_INT, Body, HistoryMessage, RunFields, Strict, ToolResultIn

#: A checkpoint's `seq` (`5` and `5.0` alike, as every integer of a body).
Checkpoint = Annotated[int, Field(ge=1, le=10**9, strict=True), AS_INT]


class ForkPatch(Strict):
    """Changes to the conversation the fork starts from (the checkpoint's)."""

    tool_results: Annotated[list[ToolResultIn], Field(max_length=1000)] = Field(
        default_factory=list,
        description="a recorded tool result to replace (in place), or the results of the "
        "calls the checkpoint waits for (all of them: the fork then starts with a model call)",
    )
    append: Annotated[list[HistoryMessage], Field(max_length=1000)] = Field(
        default_factory=list,
        description="messages added after the checkpoint's (and the results above), in the "
        "`history` shape of a create",
    )


class ForkIn(Body):
    at: Checkpoint | None = Field(
        default=None,
        description="the checkpoint's `seq` (`GET /v1/runs/{id}/checkpoints`): the fork "
        "starts from the run's first `at` messages; default: the run's start",
    )
    patch: ForkPatch | None = None
    overrides: RunFields | None = Field(
        default=None,
        description="fields of a create that replace the run's (model, preamble, tools, "
        "tool_choice, limits, max_turns, metadata, ...): only those given",
    )
    mode: Literal["fork", "replay"] = Field(
        default="fork",
        description="`replay`: each model call whose request is the recorded one is answered "
        "from the recording (and each tool round from its recorded results) until the first "
        "difference",
    )
    on_divergence: Literal["live", "fail"] = Field(
        default="live",
        description="a replay at its first difference: go on with the live model and "
        "executors (`live`), or fail (`fail`); recorded as a `replay.diverged` event",
    )
