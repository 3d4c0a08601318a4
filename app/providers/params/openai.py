"""The documented request parameters of OpenAI's Chat Completions and Responses APIs.

Names and types mirror the official SDK's request types
(`openai.types.chat.completion_create_params`, `openai.types.responses.response_create_params`);
`tests/providers/test_params_tables.py` compares these tables with the SDK's, key by key
and type by type, so they cannot drift silently. Ranges are the documented ones. Keys the
adapter owns (messages, tools, ...) are not here: `app.providers.params` refuses them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Required

from pydantic import ConfigDict, Field, StringConstraints, with_config
from typing_extensions import TypedDict

Temperature = Annotated[float, Field(ge=0, le=2)]
TopP = Annotated[float, Field(ge=0, le=1)]
Penalty = Annotated[float, Field(ge=-2, le=2)]
TopLogprobs = Annotated[int, Field(ge=0, le=20)]
Tokens = Annotated[int, Field(ge=1)]
Metadata = Annotated[
    dict[
        Annotated[str, StringConstraints(max_length=64)],
        Annotated[str, StringConstraints(max_length=512)],
    ],
    Field(max_length=16),
]
SafetyIdentifier = Annotated[str, StringConstraints(max_length=128)]
SchemaName = Annotated[str, StringConstraints(pattern=r"^[a-zA-Z0-9_-]{1,64}$")]
Effort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
Verbosity = Literal["low", "medium", "high"]
CacheRetention = Literal["in_memory", "24h"]


class PromptCacheBreakpoint(TypedDict, total=False):
    mode: Required[Literal["explicit"]]
    ttl: Literal["30m", "12h"]


class ModerationPolicyInput(TypedDict, total=False):
    mode: Required[Literal["score", "block"]]


class ModerationPolicyOutput(TypedDict, total=False):
    mode: Required[Literal["score", "block"]]


class ModerationPolicy(TypedDict, total=False):
    input: ModerationPolicyInput | None
    output: ModerationPolicyOutput | None


class Moderation(TypedDict, total=False):
    model: Required[str]
    policy: ModerationPolicy | None


class FormatText(TypedDict, total=False):
    type: Required[Literal["text"]]


class FormatJSONObject(TypedDict, total=False):
    type: Required[Literal["json_object"]]


# --- Chat Completions ----------------------------------------------------------------------


class VoiceID(TypedDict, total=False):
    id: Required[str]


class Audio(TypedDict, total=False):
    format: Required[Literal["wav", "aac", "mp3", "flac", "opus", "pcm16"]]
    voice: Required[str | VoiceID]


class ContentPartText(TypedDict, total=False):
    text: Required[str]
    type: Required[Literal["text"]]
    prompt_cache_breakpoint: PromptCacheBreakpoint


class Prediction(TypedDict, total=False):
    content: Required[str | list[ContentPartText]]
    type: Required[Literal["content"]]


class ChatPromptCacheOptions(TypedDict, total=False):
    mode: Literal["implicit", "explicit"]
    ttl: Literal["30m"]


class JSONSchema(TypedDict, total=False):
    name: Required[SchemaName]
    description: str
    schema: dict[str, Any]
    strict: bool | None


class FormatJSONSchema(TypedDict, total=False):
    json_schema: Required[JSONSchema]
    type: Required[Literal["json_schema"]]


ChatResponseFormat = Annotated[
    FormatText | FormatJSONSchema | FormatJSONObject, Field(discriminator="type")
]


class UserLocationApproximate(TypedDict, total=False):
    city: str
    country: str
    region: str
    timezone: str


class UserLocation(TypedDict, total=False):
    approximate: Required[UserLocationApproximate]
    type: Required[Literal["approximate"]]


class WebSearchOptions(TypedDict, total=False):
    search_context_size: Literal["low", "medium", "high"]
    user_location: UserLocation | None


@with_config(ConfigDict(extra="forbid", strict=True))
class ChatParams(TypedDict, total=False):
    """`openai` (Chat Completions): every documented parameter the adapter does not own."""

    audio: Audio | None
    frequency_penalty: Penalty | None
    logit_bias: dict[str, Annotated[int, Field(ge=-100, le=100)]] | None
    logprobs: bool | None
    max_completion_tokens: Tokens | None
    max_tokens: Tokens | None
    metadata: Metadata | None
    modalities: list[Literal["text", "audio"]] | None
    moderation: Moderation | None
    parallel_tool_calls: bool
    prediction: Prediction | None
    presence_penalty: Penalty | None
    prompt_cache_key: str | None
    prompt_cache_options: ChatPromptCacheOptions
    prompt_cache_retention: CacheRetention | None
    reasoning_effort: Effort | None
    response_format: ChatResponseFormat
    safety_identifier: SafetyIdentifier | None
    seed: int | None
    service_tier: Literal["auto", "default", "flex", "scale", "priority", "fast"] | None
    stop: str | Annotated[list[str], Field(max_length=4)] | None
    temperature: Temperature | None
    top_logprobs: TopLogprobs | None
    top_p: TopP | None
    user: str
    verbosity: Verbosity | None
    web_search_options: WebSearchOptions


#: Chat Completions keys the adapter owns beyond `common.RESERVED_KEYS`, and why.
CHAT_OWNED = {
    "functions": "the adapter advertises the run's tools as `tools`",
    "function_call": "the run's `tool_choice` decides this",
    "n": "the adapter reads exactly one choice",
}


# --- Responses -----------------------------------------------------------------------------


class AccessPrograms(TypedDict, total=False):
    cyber: Literal["standard", "daybreak_blue", "daybreak_red"]


class ContextManagement(TypedDict, total=False):
    type: Required[str]
    compact_threshold: int | None


class ImageOptions(TypedDict, total=False):
    context_compression: Literal["auto", "enabled", "disabled"]


class InputText(TypedDict, total=False):
    text: Required[str]
    type: Required[Literal["input_text"]]
    prompt_cache_breakpoint: PromptCacheBreakpoint


class InputImage(TypedDict, total=False):
    detail: Required[Literal["low", "high", "auto", "original"]]
    type: Required[Literal["input_image"]]
    file_id: str | None
    image_url: str | None
    prompt_cache_breakpoint: PromptCacheBreakpoint


class InputFile(TypedDict, total=False):
    type: Required[Literal["input_file"]]
    detail: Literal["auto", "low", "high"]
    file_data: str
    file_id: str | None
    file_url: str
    filename: str
    prompt_cache_breakpoint: PromptCacheBreakpoint


PromptVariable = str | Annotated[InputText | InputImage | InputFile, Field(discriminator="type")]


class Prompt(TypedDict, total=False):
    id: Required[str]
    variables: dict[str, PromptVariable] | None
    version: str | None


class ResponsesPromptCacheOptions(TypedDict, total=False):
    comparison_response_id: str | None
    mode: Literal["implicit", "explicit"]
    prewarm: bool
    ttl: Literal["30m", "12h"]


class Reasoning(TypedDict, total=False):
    context: Literal["auto", "current_turn", "all_turns"] | None
    effort: Effort | None
    generate_summary: Literal["auto", "concise", "detailed"] | None
    mode: str
    summary: Literal["auto", "concise", "detailed"] | None


class FormatTextJSONSchema(TypedDict, total=False):
    name: Required[SchemaName]
    schema: Required[dict[str, Any]]
    type: Required[Literal["json_schema"]]
    description: str
    strict: bool | None


class TextConfig(TypedDict, total=False):
    format: Annotated[
        FormatText | FormatTextJSONSchema | FormatJSONObject, Field(discriminator="type")
    ]
    verbosity: Verbosity | None


@with_config(ConfigDict(extra="forbid", strict=True))
class ResponsesParams(TypedDict, total=False):
    """`openai_responses`: every documented parameter the adapter does not own."""

    access_programs: AccessPrograms
    context_management: list[ContextManagement] | None
    image: ImageOptions
    include: (
        list[
            Literal[
                "code_interpreter_call.outputs",
                "computer_call_output.output.image_url",
                "file_search_call.results",
                "message.input_image.image_url",
                "message.output_text.logprobs",
                "reasoning.encrypted_content",
                "web_search_call.action.sources",
                "web_search_call.results",
            ]
        ]
        | None
    )
    max_output_tokens: Tokens | None
    max_tool_calls: Annotated[int, Field(ge=0)] | None
    metadata: Metadata | None
    moderation: Moderation | None
    parallel_tool_calls: bool | None
    prompt: Prompt | None
    prompt_cache_key: str | None
    prompt_cache_options: ResponsesPromptCacheOptions
    prompt_cache_retention: CacheRetention | None
    reasoning: Reasoning | None
    safety_identifier: SafetyIdentifier | None
    service_tier: (
        Literal["auto", "default", "flex", "scale", "priority", "fast", "ultrafast"] | None
    )
    temperature: Temperature | None
    text: TextConfig
    top_logprobs: TopLogprobs | None
    top_p: TopP | None
    truncation: Literal["auto", "disabled"] | None
    user: str


#: Responses keys the adapter owns beyond `common.RESERVED_KEYS`, and why.
RESPONSES_OWNED = {
    "conversation": "the adapter is stateless: it sends the whole history with store=false",
    "previous_response_id": "the adapter is stateless: it sends the whole history with store=false",
    "background": "the adapter waits for the finished response",
    "background_options": "the adapter waits for the finished response",
}
