import datetime

from google.protobuf import empty_pb2 as _empty_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class InfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ProviderInfo(_message.Message):
    __slots__ = ("name", "display_name", "capabilities", "history_reader", "history_pager", "titler", "subagent_pager", "quota_reporter", "utility_runner")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    HISTORY_READER_FIELD_NUMBER: _ClassVar[int]
    HISTORY_PAGER_FIELD_NUMBER: _ClassVar[int]
    TITLER_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_PAGER_FIELD_NUMBER: _ClassVar[int]
    QUOTA_REPORTER_FIELD_NUMBER: _ClassVar[int]
    UTILITY_RUNNER_FIELD_NUMBER: _ClassVar[int]
    name: str
    display_name: str
    capabilities: Capabilities
    history_reader: bool
    history_pager: bool
    titler: bool
    subagent_pager: bool
    quota_reporter: bool
    utility_runner: bool
    def __init__(self, name: _Optional[str] = ..., display_name: _Optional[str] = ..., capabilities: _Optional[_Union[Capabilities, _Mapping]] = ..., history_reader: _Optional[bool] = ..., history_pager: _Optional[bool] = ..., titler: _Optional[bool] = ..., subagent_pager: _Optional[bool] = ..., quota_reporter: _Optional[bool] = ..., utility_runner: _Optional[bool] = ...) -> None: ...

class ModelsResponse(_message.Message):
    __slots__ = ("models",)
    MODELS_FIELD_NUMBER: _ClassVar[int]
    models: _containers.RepeatedCompositeFieldContainer[Model]
    def __init__(self, models: _Optional[_Iterable[_Union[Model, _Mapping]]] = ...) -> None: ...

class OpenResponse(_message.Message):
    __slots__ = ("handle", "conversation_id")
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    handle: str
    conversation_id: str
    def __init__(self, handle: _Optional[str] = ..., conversation_id: _Optional[str] = ...) -> None: ...

class ConversationRef(_message.Message):
    __slots__ = ("handle",)
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    handle: str
    def __init__(self, handle: _Optional[str] = ...) -> None: ...

class PromptRequest(_message.Message):
    __slots__ = ("handle", "prompt")
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    handle: str
    prompt: Prompt
    def __init__(self, handle: _Optional[str] = ..., prompt: _Optional[_Union[Prompt, _Mapping]] = ...) -> None: ...

class RunCommandRequest(_message.Message):
    __slots__ = ("handle", "name", "args")
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    handle: str
    name: str
    args: Prompt
    def __init__(self, handle: _Optional[str] = ..., name: _Optional[str] = ..., args: _Optional[_Union[Prompt, _Mapping]] = ...) -> None: ...

class SubagentRef(_message.Message):
    __slots__ = ("handle", "agent_id")
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    handle: str
    agent_id: str
    def __init__(self, handle: _Optional[str] = ..., agent_id: _Optional[str] = ...) -> None: ...

class PromptSubagentRequest(_message.Message):
    __slots__ = ("handle", "agent_id", "text")
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    handle: str
    agent_id: str
    text: str
    def __init__(self, handle: _Optional[str] = ..., agent_id: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class RespondRequest(_message.Message):
    __slots__ = ("handle", "interaction_id", "answer")
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    INTERACTION_ID_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    handle: str
    interaction_id: str
    answer: Answer
    def __init__(self, handle: _Optional[str] = ..., interaction_id: _Optional[str] = ..., answer: _Optional[_Union[Answer, _Mapping]] = ...) -> None: ...

class SetModelRequest(_message.Message):
    __slots__ = ("handle", "model", "effort", "context_size")
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    EFFORT_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_SIZE_FIELD_NUMBER: _ClassVar[int]
    handle: str
    model: str
    effort: str
    context_size: str
    def __init__(self, handle: _Optional[str] = ..., model: _Optional[str] = ..., effort: _Optional[str] = ..., context_size: _Optional[str] = ...) -> None: ...

class SetTitleRequest(_message.Message):
    __slots__ = ("handle", "title")
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    handle: str
    title: str
    def __init__(self, handle: _Optional[str] = ..., title: _Optional[str] = ...) -> None: ...

class TitleRequest(_message.Message):
    __slots__ = ("model", "workdir", "text", "images", "reply")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    WORKDIR_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    IMAGES_FIELD_NUMBER: _ClassVar[int]
    REPLY_FIELD_NUMBER: _ClassVar[int]
    model: str
    workdir: str
    text: str
    images: _containers.RepeatedCompositeFieldContainer[Blob]
    reply: str
    def __init__(self, model: _Optional[str] = ..., workdir: _Optional[str] = ..., text: _Optional[str] = ..., images: _Optional[_Iterable[_Union[Blob, _Mapping]]] = ..., reply: _Optional[str] = ...) -> None: ...

class UtilityUsage(_message.Message):
    __slots__ = ("input_tokens", "output_tokens", "credits", "tokens")
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CREDITS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    input_tokens: int
    output_tokens: int
    credits: float
    tokens: _containers.RepeatedCompositeFieldContainer[TokenUsage]
    def __init__(self, input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., credits: _Optional[float] = ..., tokens: _Optional[_Iterable[_Union[TokenUsage, _Mapping]]] = ...) -> None: ...

class UtilityRequest(_message.Message):
    __slots__ = ("model", "workdir", "purpose", "system", "prompt", "attachments", "tools", "timeout", "response_schema")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    WORKDIR_FIELD_NUMBER: _ClassVar[int]
    PURPOSE_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    ATTACHMENTS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    model: str
    workdir: str
    purpose: str
    system: str
    prompt: str
    attachments: _containers.RepeatedCompositeFieldContainer[Blob]
    tools: _containers.RepeatedCompositeFieldContainer[HostTool]
    timeout: int
    response_schema: bytes
    def __init__(self, model: _Optional[str] = ..., workdir: _Optional[str] = ..., purpose: _Optional[str] = ..., system: _Optional[str] = ..., prompt: _Optional[str] = ..., attachments: _Optional[_Iterable[_Union[Blob, _Mapping]]] = ..., tools: _Optional[_Iterable[_Union[HostTool, _Mapping]]] = ..., timeout: _Optional[int] = ..., response_schema: _Optional[bytes] = ...) -> None: ...

class UtilityUpdate(_message.Message):
    __slots__ = ("handle", "call", "done")
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    CALL_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    handle: str
    call: HostToolRequest
    done: UtilityResponse
    def __init__(self, handle: _Optional[str] = ..., call: _Optional[_Union[HostToolRequest, _Mapping]] = ..., done: _Optional[_Union[UtilityResponse, _Mapping]] = ...) -> None: ...

class UtilityResponse(_message.Message):
    __slots__ = ("text", "usage")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    text: str
    usage: UtilityUsage
    def __init__(self, text: _Optional[str] = ..., usage: _Optional[_Union[UtilityUsage, _Mapping]] = ...) -> None: ...

class TitleResponse(_message.Message):
    __slots__ = ("title", "usage")
    TITLE_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    title: str
    usage: UtilityUsage
    def __init__(self, title: _Optional[str] = ..., usage: _Optional[_Union[UtilityUsage, _Mapping]] = ...) -> None: ...

class CommandsResponse(_message.Message):
    __slots__ = ("commands",)
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    commands: _containers.RepeatedCompositeFieldContainer[Command]
    def __init__(self, commands: _Optional[_Iterable[_Union[Command, _Mapping]]] = ...) -> None: ...

class DiffResponse(_message.Message):
    __slots__ = ("files",)
    FILES_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedCompositeFieldContainer[FileDiff]
    def __init__(self, files: _Optional[_Iterable[_Union[FileDiff, _Mapping]]] = ...) -> None: ...

class ErrorInfo(_message.Message):
    __slots__ = ("reason", "message", "host_tools")
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    HOST_TOOLS_FIELD_NUMBER: _ClassVar[int]
    reason: str
    message: str
    host_tools: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, reason: _Optional[str] = ..., message: _Optional[str] = ..., host_tools: _Optional[_Iterable[str]] = ...) -> None: ...

class Capabilities(_message.Message):
    __slots__ = ("plan", "cancel", "permissions", "questions", "session_diff", "session_diff_needs_tracking", "history", "fork", "rewind", "context_size", "context_breakdown", "usage", "usage_metrics", "aside", "titles", "execution_modes", "host_tools", "account", "device_sign_in", "mcp", "cli_update", "subagent_models", "github_mcp", "assisted_permissions", "assisted_unavailable", "custom_agents")
    PLAN_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    QUESTIONS_FIELD_NUMBER: _ClassVar[int]
    SESSION_DIFF_FIELD_NUMBER: _ClassVar[int]
    SESSION_DIFF_NEEDS_TRACKING_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    FORK_FIELD_NUMBER: _ClassVar[int]
    REWIND_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_SIZE_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_BREAKDOWN_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    USAGE_METRICS_FIELD_NUMBER: _ClassVar[int]
    ASIDE_FIELD_NUMBER: _ClassVar[int]
    TITLES_FIELD_NUMBER: _ClassVar[int]
    IMPORT_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_MODES_FIELD_NUMBER: _ClassVar[int]
    HOST_TOOLS_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    DEVICE_SIGN_IN_FIELD_NUMBER: _ClassVar[int]
    MCP_FIELD_NUMBER: _ClassVar[int]
    CLI_UPDATE_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_MODELS_FIELD_NUMBER: _ClassVar[int]
    GITHUB_MCP_FIELD_NUMBER: _ClassVar[int]
    ASSISTED_PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    ASSISTED_UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_AGENTS_FIELD_NUMBER: _ClassVar[int]
    plan: bool
    cancel: bool
    permissions: bool
    questions: bool
    session_diff: bool
    session_diff_needs_tracking: bool
    history: bool
    fork: bool
    rewind: bool
    context_size: bool
    context_breakdown: bool
    usage: bool
    usage_metrics: bool
    aside: bool
    titles: bool
    execution_modes: bool
    host_tools: bool
    account: bool
    device_sign_in: bool
    mcp: bool
    cli_update: bool
    subagent_models: bool
    github_mcp: bool
    assisted_permissions: bool
    assisted_unavailable: str
    custom_agents: bool
    def __init__(self, plan: _Optional[bool] = ..., cancel: _Optional[bool] = ..., permissions: _Optional[bool] = ..., questions: _Optional[bool] = ..., session_diff: _Optional[bool] = ..., session_diff_needs_tracking: _Optional[bool] = ..., history: _Optional[bool] = ..., fork: _Optional[bool] = ..., rewind: _Optional[bool] = ..., context_size: _Optional[bool] = ..., context_breakdown: _Optional[bool] = ..., usage: _Optional[bool] = ..., usage_metrics: _Optional[bool] = ..., aside: _Optional[bool] = ..., titles: _Optional[bool] = ..., execution_modes: _Optional[bool] = ..., host_tools: _Optional[bool] = ..., account: _Optional[bool] = ..., device_sign_in: _Optional[bool] = ..., mcp: _Optional[bool] = ..., cli_update: _Optional[bool] = ..., subagent_models: _Optional[bool] = ..., github_mcp: _Optional[bool] = ..., assisted_permissions: _Optional[bool] = ..., assisted_unavailable: _Optional[str] = ..., custom_agents: _Optional[bool] = ..., **kwargs) -> None: ...

class ContextSize(_message.Message):
    __slots__ = ("id", "tokens")
    ID_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    id: str
    tokens: int
    def __init__(self, id: _Optional[str] = ..., tokens: _Optional[int] = ...) -> None: ...

class Media(_message.Message):
    __slots__ = ("images", "pdf", "max_images", "types")
    IMAGES_FIELD_NUMBER: _ClassVar[int]
    PDF_FIELD_NUMBER: _ClassVar[int]
    MAX_IMAGES_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    images: bool
    pdf: bool
    max_images: int
    types: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, images: _Optional[bool] = ..., pdf: _Optional[bool] = ..., max_images: _Optional[int] = ..., types: _Optional[_Iterable[str]] = ...) -> None: ...

class TierPrices(_message.Message):
    __slots__ = ("input", "output", "cache_read", "cache_write", "max_prompt_tokens")
    INPUT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_FIELD_NUMBER: _ClassVar[int]
    MAX_PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    input: float
    output: float
    cache_read: float
    cache_write: float
    max_prompt_tokens: int
    def __init__(self, input: _Optional[float] = ..., output: _Optional[float] = ..., cache_read: _Optional[float] = ..., cache_write: _Optional[float] = ..., max_prompt_tokens: _Optional[int] = ...) -> None: ...

class Prices(_message.Message):
    __slots__ = ("input", "output", "cache_read", "cache_write", "max_prompt_tokens", "batch_size", "long_context")
    INPUT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_FIELD_NUMBER: _ClassVar[int]
    MAX_PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    LONG_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    input: float
    output: float
    cache_read: float
    cache_write: float
    max_prompt_tokens: int
    batch_size: int
    long_context: TierPrices
    def __init__(self, input: _Optional[float] = ..., output: _Optional[float] = ..., cache_read: _Optional[float] = ..., cache_write: _Optional[float] = ..., max_prompt_tokens: _Optional[int] = ..., batch_size: _Optional[int] = ..., long_context: _Optional[_Union[TierPrices, _Mapping]] = ...) -> None: ...

class Model(_message.Message):
    __slots__ = ("id", "name", "efforts", "context_sizes", "media", "cost_tier", "discount_percent", "prices")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    EFFORTS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_SIZES_FIELD_NUMBER: _ClassVar[int]
    MEDIA_FIELD_NUMBER: _ClassVar[int]
    COST_TIER_FIELD_NUMBER: _ClassVar[int]
    DISCOUNT_PERCENT_FIELD_NUMBER: _ClassVar[int]
    PRICES_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    efforts: _containers.RepeatedScalarFieldContainer[str]
    context_sizes: _containers.RepeatedCompositeFieldContainer[ContextSize]
    media: Media
    cost_tier: str
    discount_percent: int
    prices: Prices
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., efforts: _Optional[_Iterable[str]] = ..., context_sizes: _Optional[_Iterable[_Union[ContextSize, _Mapping]]] = ..., media: _Optional[_Union[Media, _Mapping]] = ..., cost_tier: _Optional[str] = ..., discount_percent: _Optional[int] = ..., prices: _Optional[_Union[Prices, _Mapping]] = ...) -> None: ...

class OpenRequest(_message.Message):
    __slots__ = ("session_id", "conversation_id", "workdir", "title", "model", "effort", "context_size", "agent", "skill_directories", "compaction_threshold", "assisted_approval_model", "tools")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    WORKDIR_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    EFFORT_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_SIZE_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    SKILL_DIRECTORIES_FIELD_NUMBER: _ClassVar[int]
    COMPACTION_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    ASSISTED_APPROVAL_MODEL_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    conversation_id: str
    workdir: str
    title: str
    model: str
    effort: str
    context_size: str
    agent: str
    skill_directories: _containers.RepeatedScalarFieldContainer[str]
    compaction_threshold: float
    assisted_approval_model: str
    tools: _containers.RepeatedCompositeFieldContainer[HostTool]
    def __init__(self, session_id: _Optional[str] = ..., conversation_id: _Optional[str] = ..., workdir: _Optional[str] = ..., title: _Optional[str] = ..., model: _Optional[str] = ..., effort: _Optional[str] = ..., context_size: _Optional[str] = ..., agent: _Optional[str] = ..., skill_directories: _Optional[_Iterable[str]] = ..., compaction_threshold: _Optional[float] = ..., assisted_approval_model: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[HostTool, _Mapping]]] = ...) -> None: ...

class HostTool(_message.Message):
    __slots__ = ("name", "description", "parameters")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    parameters: bytes
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., parameters: _Optional[bytes] = ...) -> None: ...

class HostToolCall(_message.Message):
    __slots__ = ("name", "call_id", "task_id", "agent_id", "arguments")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    call_id: str
    task_id: str
    agent_id: str
    arguments: bytes
    def __init__(self, name: _Optional[str] = ..., call_id: _Optional[str] = ..., task_id: _Optional[str] = ..., agent_id: _Optional[str] = ..., arguments: _Optional[bytes] = ...) -> None: ...

class HostToolResult(_message.Message):
    __slots__ = ("text", "failed", "payload")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    text: str
    failed: bool
    payload: bytes
    def __init__(self, text: _Optional[str] = ..., failed: _Optional[bool] = ..., payload: _Optional[bytes] = ...) -> None: ...

class HostToolRequest(_message.Message):
    __slots__ = ("id", "call", "cancel")
    ID_FIELD_NUMBER: _ClassVar[int]
    CALL_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    id: int
    call: HostToolCall
    cancel: bool
    def __init__(self, id: _Optional[int] = ..., call: _Optional[_Union[HostToolCall, _Mapping]] = ..., cancel: _Optional[bool] = ...) -> None: ...

class HostToolReply(_message.Message):
    __slots__ = ("handle", "id", "result")
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    handle: str
    id: int
    result: HostToolResult
    def __init__(self, handle: _Optional[str] = ..., id: _Optional[int] = ..., result: _Optional[_Union[HostToolResult, _Mapping]] = ...) -> None: ...

class ReadRequest(_message.Message):
    __slots__ = ("conversation_id", "workdir")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    WORKDIR_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    workdir: str
    def __init__(self, conversation_id: _Optional[str] = ..., workdir: _Optional[str] = ...) -> None: ...

class WindowRequest(_message.Message):
    __slots__ = ("conversation_id", "workdir", "agent_id", "item_id", "before", "after")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    WORKDIR_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    workdir: str
    agent_id: str
    item_id: str
    before: int
    after: int
    def __init__(self, conversation_id: _Optional[str] = ..., workdir: _Optional[str] = ..., agent_id: _Optional[str] = ..., item_id: _Optional[str] = ..., before: _Optional[int] = ..., after: _Optional[int] = ...) -> None: ...

class SubagentRequest(_message.Message):
    __slots__ = ("conversation_id", "workdir", "agent_id", "before")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    WORKDIR_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    workdir: str
    agent_id: str
    before: int
    def __init__(self, conversation_id: _Optional[str] = ..., workdir: _Optional[str] = ..., agent_id: _Optional[str] = ..., before: _Optional[int] = ...) -> None: ...

class SubagentWindow(_message.Message):
    __slots__ = ("subagents", "start")
    SUBAGENTS_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    subagents: _containers.RepeatedCompositeFieldContainer[Subagent]
    start: bool
    def __init__(self, subagents: _Optional[_Iterable[_Union[Subagent, _Mapping]]] = ..., start: _Optional[bool] = ...) -> None: ...

class Quota(_message.Message):
    __slots__ = ("type", "used", "entitlement", "unlimited", "remaining_percent", "overage", "reset_at", "unit", "plan")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    ENTITLEMENT_FIELD_NUMBER: _ClassVar[int]
    UNLIMITED_FIELD_NUMBER: _ClassVar[int]
    REMAINING_PERCENT_FIELD_NUMBER: _ClassVar[int]
    OVERAGE_FIELD_NUMBER: _ClassVar[int]
    RESET_AT_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    type: str
    used: int
    entitlement: int
    unlimited: bool
    remaining_percent: float
    overage: float
    reset_at: _timestamp_pb2.Timestamp
    unit: str
    plan: str
    def __init__(self, type: _Optional[str] = ..., used: _Optional[int] = ..., entitlement: _Optional[int] = ..., unlimited: _Optional[bool] = ..., remaining_percent: _Optional[float] = ..., overage: _Optional[float] = ..., reset_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., unit: _Optional[str] = ..., plan: _Optional[str] = ...) -> None: ...

class QuotaResponse(_message.Message):
    __slots__ = ("quotas",)
    QUOTAS_FIELD_NUMBER: _ClassVar[int]
    quotas: _containers.RepeatedCompositeFieldContainer[Quota]
    def __init__(self, quotas: _Optional[_Iterable[_Union[Quota, _Mapping]]] = ...) -> None: ...

class HistoryWindow(_message.Message):
    __slots__ = ("items", "at", "start", "next")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[Item]
    at: int
    start: bool
    next: str
    def __init__(self, items: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., at: _Optional[int] = ..., start: _Optional[bool] = ..., next: _Optional[str] = ...) -> None: ...

class File(_message.Message):
    __slots__ = ("path", "rel", "dir")
    PATH_FIELD_NUMBER: _ClassVar[int]
    REL_FIELD_NUMBER: _ClassVar[int]
    DIR_FIELD_NUMBER: _ClassVar[int]
    path: str
    rel: str
    dir: bool
    def __init__(self, path: _Optional[str] = ..., rel: _Optional[str] = ..., dir: _Optional[bool] = ...) -> None: ...

class Blob(_message.Message):
    __slots__ = ("name", "mime", "data", "path")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MIME_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    name: str
    mime: str
    data: bytes
    path: str
    def __init__(self, name: _Optional[str] = ..., mime: _Optional[str] = ..., data: _Optional[bytes] = ..., path: _Optional[str] = ...) -> None: ...

class Prompt(_message.Message):
    __slots__ = ("text", "files", "attachments")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    ATTACHMENTS_FIELD_NUMBER: _ClassVar[int]
    text: str
    files: _containers.RepeatedCompositeFieldContainer[File]
    attachments: _containers.RepeatedCompositeFieldContainer[Blob]
    def __init__(self, text: _Optional[str] = ..., files: _Optional[_Iterable[_Union[File, _Mapping]]] = ..., attachments: _Optional[_Iterable[_Union[Blob, _Mapping]]] = ...) -> None: ...

class PlanAnswer(_message.Message):
    __slots__ = ("action", "feedback")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    FEEDBACK_FIELD_NUMBER: _ClassVar[int]
    action: str
    feedback: str
    def __init__(self, action: _Optional[str] = ..., feedback: _Optional[str] = ...) -> None: ...

class StringList(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, values: _Optional[_Iterable[str]] = ...) -> None: ...

class Answer(_message.Message):
    __slots__ = ("plan", "decision", "answers", "reject", "cancel", "auto")
    PLAN_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    ANSWERS_FIELD_NUMBER: _ClassVar[int]
    REJECT_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    AUTO_FIELD_NUMBER: _ClassVar[int]
    plan: PlanAnswer
    decision: str
    answers: _containers.RepeatedCompositeFieldContainer[StringList]
    reject: bool
    cancel: bool
    auto: bool
    def __init__(self, plan: _Optional[_Union[PlanAnswer, _Mapping]] = ..., decision: _Optional[str] = ..., answers: _Optional[_Iterable[_Union[StringList, _Mapping]]] = ..., reject: _Optional[bool] = ..., cancel: _Optional[bool] = ..., auto: _Optional[bool] = ...) -> None: ...

class Attachment(_message.Message):
    __slots__ = ("id", "name", "mime", "size", "not_native", "sha256")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MIME_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    NOT_NATIVE_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    mime: str
    size: int
    not_native: bool
    sha256: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., mime: _Optional[str] = ..., size: _Optional[int] = ..., not_native: _Optional[bool] = ..., sha256: _Optional[str] = ...) -> None: ...

class Image(_message.Message):
    __slots__ = ("id", "mime", "size", "name", "sha256", "data")
    ID_FIELD_NUMBER: _ClassVar[int]
    MIME_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    id: str
    mime: str
    size: int
    name: str
    sha256: str
    data: bytes
    def __init__(self, id: _Optional[str] = ..., mime: _Optional[str] = ..., size: _Optional[int] = ..., name: _Optional[str] = ..., sha256: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class OutputLine(_message.Message):
    __slots__ = ("text", "err")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ERR_FIELD_NUMBER: _ClassVar[int]
    text: str
    err: bool
    def __init__(self, text: _Optional[str] = ..., err: _Optional[bool] = ...) -> None: ...

class FileDeclaration(_message.Message):
    __slots__ = ("artifact_id", "path", "title", "type_hint")
    ARTIFACT_ID_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    TYPE_HINT_FIELD_NUMBER: _ClassVar[int]
    artifact_id: str
    path: str
    title: str
    type_hint: str
    def __init__(self, artifact_id: _Optional[str] = ..., path: _Optional[str] = ..., title: _Optional[str] = ..., type_hint: _Optional[str] = ...) -> None: ...

class FileEdit(_message.Message):
    __slots__ = ("path", "kind", "additions", "deletions", "diff_status")
    PATH_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    ADDITIONS_FIELD_NUMBER: _ClassVar[int]
    DELETIONS_FIELD_NUMBER: _ClassVar[int]
    DIFF_STATUS_FIELD_NUMBER: _ClassVar[int]
    path: str
    kind: str
    additions: int
    deletions: int
    diff_status: str
    def __init__(self, path: _Optional[str] = ..., kind: _Optional[str] = ..., additions: _Optional[int] = ..., deletions: _Optional[int] = ..., diff_status: _Optional[str] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("name", "title", "status", "input", "output", "edit_event_id", "file_edits", "file_edits_truncated", "progress", "exit_code", "declaration", "tail")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    EDIT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    FILE_EDITS_FIELD_NUMBER: _ClassVar[int]
    FILE_EDITS_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    DECLARATION_FIELD_NUMBER: _ClassVar[int]
    TAIL_FIELD_NUMBER: _ClassVar[int]
    name: str
    title: str
    status: str
    input: str
    output: str
    edit_event_id: str
    file_edits: _containers.RepeatedCompositeFieldContainer[FileEdit]
    file_edits_truncated: bool
    progress: str
    exit_code: int
    declaration: FileDeclaration
    tail: _containers.RepeatedCompositeFieldContainer[OutputLine]
    def __init__(self, name: _Optional[str] = ..., title: _Optional[str] = ..., status: _Optional[str] = ..., input: _Optional[str] = ..., output: _Optional[str] = ..., edit_event_id: _Optional[str] = ..., file_edits: _Optional[_Iterable[_Union[FileEdit, _Mapping]]] = ..., file_edits_truncated: _Optional[bool] = ..., progress: _Optional[str] = ..., exit_code: _Optional[int] = ..., declaration: _Optional[_Union[FileDeclaration, _Mapping]] = ..., tail: _Optional[_Iterable[_Union[OutputLine, _Mapping]]] = ...) -> None: ...

class CompletionBlocker(_message.Message):
    __slots__ = ("kind", "reason", "resumable")
    KIND_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RESUMABLE_FIELD_NUMBER: _ClassVar[int]
    kind: str
    reason: str
    resumable: bool
    def __init__(self, kind: _Optional[str] = ..., reason: _Optional[str] = ..., resumable: _Optional[bool] = ...) -> None: ...

class TaskCompletion(_message.Message):
    __slots__ = ("decision", "user_item_id", "summary", "reason", "blocker")
    DECISION_FIELD_NUMBER: _ClassVar[int]
    USER_ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    BLOCKER_FIELD_NUMBER: _ClassVar[int]
    decision: str
    user_item_id: str
    summary: str
    reason: str
    blocker: CompletionBlocker
    def __init__(self, decision: _Optional[str] = ..., user_item_id: _Optional[str] = ..., summary: _Optional[str] = ..., reason: _Optional[str] = ..., blocker: _Optional[_Union[CompletionBlocker, _Mapping]] = ...) -> None: ...

class PlanReview(_message.Message):
    __slots__ = ("request_id", "summary", "revision", "actions", "recommended", "content", "previous", "truncated", "previous_truncated", "previous_unavailable")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    RECOMMENDED_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    summary: str
    revision: int
    actions: _containers.RepeatedScalarFieldContainer[str]
    recommended: str
    content: str
    previous: str
    truncated: bool
    previous_truncated: bool
    previous_unavailable: bool
    def __init__(self, request_id: _Optional[str] = ..., summary: _Optional[str] = ..., revision: _Optional[int] = ..., actions: _Optional[_Iterable[str]] = ..., recommended: _Optional[str] = ..., content: _Optional[str] = ..., previous: _Optional[str] = ..., truncated: _Optional[bool] = ..., previous_truncated: _Optional[bool] = ..., previous_unavailable: _Optional[bool] = ...) -> None: ...

class Item(_message.Message):
    __slots__ = ("id", "kind", "text", "tool", "completion", "plan", "time", "ended_at", "agent_id", "delivery", "steer_status", "attachments", "images", "images_note", "clipped")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_FIELD_NUMBER: _ClassVar[int]
    STEER_STATUS_FIELD_NUMBER: _ClassVar[int]
    ATTACHMENTS_FIELD_NUMBER: _ClassVar[int]
    IMAGES_FIELD_NUMBER: _ClassVar[int]
    IMAGES_NOTE_FIELD_NUMBER: _ClassVar[int]
    CLIPPED_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: str
    text: str
    tool: ToolCall
    completion: TaskCompletion
    plan: PlanReview
    time: _timestamp_pb2.Timestamp
    ended_at: _timestamp_pb2.Timestamp
    agent_id: str
    delivery: str
    steer_status: str
    attachments: _containers.RepeatedCompositeFieldContainer[Attachment]
    images: _containers.RepeatedCompositeFieldContainer[Image]
    images_note: str
    clipped: bool
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[str] = ..., text: _Optional[str] = ..., tool: _Optional[_Union[ToolCall, _Mapping]] = ..., completion: _Optional[_Union[TaskCompletion, _Mapping]] = ..., plan: _Optional[_Union[PlanReview, _Mapping]] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., agent_id: _Optional[str] = ..., delivery: _Optional[str] = ..., steer_status: _Optional[str] = ..., attachments: _Optional[_Iterable[_Union[Attachment, _Mapping]]] = ..., images: _Optional[_Iterable[_Union[Image, _Mapping]]] = ..., images_note: _Optional[str] = ..., clipped: _Optional[bool] = ...) -> None: ...

class Delta(_message.Message):
    __slots__ = ("item_id", "kind", "text", "agent_id")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    kind: str
    text: str
    agent_id: str
    def __init__(self, item_id: _Optional[str] = ..., kind: _Optional[str] = ..., text: _Optional[str] = ..., agent_id: _Optional[str] = ...) -> None: ...

class Turn(_message.Message):
    __slots__ = ("completion", "state", "error", "model", "reason", "read_once_hits", "stall_gave_up")
    COMPLETION_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    READ_ONCE_HITS_FIELD_NUMBER: _ClassVar[int]
    STALL_GAVE_UP_FIELD_NUMBER: _ClassVar[int]
    completion: TaskCompletion
    state: str
    error: str
    model: str
    reason: str
    read_once_hits: int
    stall_gave_up: bool
    def __init__(self, completion: _Optional[_Union[TaskCompletion, _Mapping]] = ..., state: _Optional[str] = ..., error: _Optional[str] = ..., model: _Optional[str] = ..., reason: _Optional[str] = ..., read_once_hits: _Optional[int] = ..., stall_gave_up: _Optional[bool] = ...) -> None: ...

class Option(_message.Message):
    __slots__ = ("id", "label", "reject", "allow_once")
    ID_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    REJECT_FIELD_NUMBER: _ClassVar[int]
    ALLOW_ONCE_FIELD_NUMBER: _ClassVar[int]
    id: str
    label: str
    reject: bool
    allow_once: bool
    def __init__(self, id: _Optional[str] = ..., label: _Optional[str] = ..., reject: _Optional[bool] = ..., allow_once: _Optional[bool] = ...) -> None: ...

class Field(_message.Message):
    __slots__ = ("name", "type", "required", "values", "format", "minimum", "maximum", "min_length", "max_length", "min_items", "max_items")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    MIN_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MAX_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MIN_ITEMS_FIELD_NUMBER: _ClassVar[int]
    MAX_ITEMS_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    required: bool
    values: _containers.RepeatedScalarFieldContainer[str]
    format: str
    minimum: float
    maximum: float
    min_length: int
    max_length: int
    min_items: int
    max_items: int
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., required: _Optional[bool] = ..., values: _Optional[_Iterable[str]] = ..., format: _Optional[str] = ..., minimum: _Optional[float] = ..., maximum: _Optional[float] = ..., min_length: _Optional[int] = ..., max_length: _Optional[int] = ..., min_items: _Optional[int] = ..., max_items: _Optional[int] = ...) -> None: ...

class Question(_message.Message):
    __slots__ = ("text", "header", "choices", "multiple", "custom", "field")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    CHOICES_FIELD_NUMBER: _ClassVar[int]
    MULTIPLE_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    text: str
    header: str
    choices: _containers.RepeatedScalarFieldContainer[str]
    multiple: bool
    custom: bool
    field: Field
    def __init__(self, text: _Optional[str] = ..., header: _Optional[str] = ..., choices: _Optional[_Iterable[str]] = ..., multiple: _Optional[bool] = ..., custom: _Optional[bool] = ..., field: _Optional[_Union[Field, _Mapping]] = ...) -> None: ...

class Elicitation(_message.Message):
    __slots__ = ("mode", "source", "url")
    MODE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    mode: str
    source: str
    url: str
    def __init__(self, mode: _Optional[str] = ..., source: _Optional[str] = ..., url: _Optional[str] = ...) -> None: ...

class AssistedReview(_message.Message):
    __slots__ = ("recommendation", "model", "reason")
    RECOMMENDATION_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    recommendation: str
    model: str
    reason: str
    def __init__(self, recommendation: _Optional[str] = ..., model: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class Interaction(_message.Message):
    __slots__ = ("id", "kind", "title", "detail", "intention", "plan", "options", "questions", "state", "resolution", "time", "agent_id", "tool_call_id", "auto", "assisted", "elicitation")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    INTENTION_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    QUESTIONS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    RESOLUTION_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    AUTO_FIELD_NUMBER: _ClassVar[int]
    ASSISTED_FIELD_NUMBER: _ClassVar[int]
    ELICITATION_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: str
    title: str
    detail: str
    intention: str
    plan: PlanReview
    options: _containers.RepeatedCompositeFieldContainer[Option]
    questions: _containers.RepeatedCompositeFieldContainer[Question]
    state: str
    resolution: str
    time: _timestamp_pb2.Timestamp
    agent_id: str
    tool_call_id: str
    auto: bool
    assisted: AssistedReview
    elicitation: Elicitation
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[str] = ..., title: _Optional[str] = ..., detail: _Optional[str] = ..., intention: _Optional[str] = ..., plan: _Optional[_Union[PlanReview, _Mapping]] = ..., options: _Optional[_Iterable[_Union[Option, _Mapping]]] = ..., questions: _Optional[_Iterable[_Union[Question, _Mapping]]] = ..., state: _Optional[str] = ..., resolution: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., agent_id: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., auto: _Optional[bool] = ..., assisted: _Optional[_Union[AssistedReview, _Mapping]] = ..., elicitation: _Optional[_Union[Elicitation, _Mapping]] = ...) -> None: ...

class Retry(_message.Message):
    __slots__ = ("count", "reason", "status", "network", "at")
    COUNT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    NETWORK_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    count: int
    reason: str
    status: int
    network: bool
    at: _timestamp_pb2.Timestamp
    def __init__(self, count: _Optional[int] = ..., reason: _Optional[str] = ..., status: _Optional[int] = ..., network: _Optional[bool] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class SubagentRun(_message.Message):
    __slots__ = ("started_at", "ended_at", "status", "trigger")
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    started_at: _timestamp_pb2.Timestamp
    ended_at: _timestamp_pb2.Timestamp
    status: str
    trigger: str
    def __init__(self, started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., status: _Optional[str] = ..., trigger: _Optional[str] = ...) -> None: ...

class Subagent(_message.Message):
    __slots__ = ("id", "model", "effort", "parent_tool_call_id", "parent_agent_id", "name", "description", "background", "status", "error", "started_at", "ended_at", "runs", "tokens", "tool_calls", "retry", "result")
    ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    EFFORT_FIELD_NUMBER: _ClassVar[int]
    PARENT_TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    RUNS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    RETRY_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    id: str
    model: str
    effort: str
    parent_tool_call_id: str
    parent_agent_id: str
    name: str
    description: str
    background: bool
    status: str
    error: str
    started_at: _timestamp_pb2.Timestamp
    ended_at: _timestamp_pb2.Timestamp
    runs: _containers.RepeatedCompositeFieldContainer[SubagentRun]
    tokens: int
    tool_calls: int
    retry: Retry
    result: str
    def __init__(self, id: _Optional[str] = ..., model: _Optional[str] = ..., effort: _Optional[str] = ..., parent_tool_call_id: _Optional[str] = ..., parent_agent_id: _Optional[str] = ..., name: _Optional[str] = ..., description: _Optional[str] = ..., background: _Optional[bool] = ..., status: _Optional[str] = ..., error: _Optional[str] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., runs: _Optional[_Iterable[_Union[SubagentRun, _Mapping]]] = ..., tokens: _Optional[int] = ..., tool_calls: _Optional[int] = ..., retry: _Optional[_Union[Retry, _Mapping]] = ..., result: _Optional[str] = ...) -> None: ...

class BackgroundTask(_message.Message):
    __slots__ = ("id", "description", "command", "status", "started_at", "ended_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    description: str
    command: str
    status: str
    started_at: _timestamp_pb2.Timestamp
    ended_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., description: _Optional[str] = ..., command: _Optional[str] = ..., status: _Optional[str] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class BackgroundTasks(_message.Message):
    __slots__ = ("known", "tasks")
    KNOWN_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    known: bool
    tasks: _containers.RepeatedCompositeFieldContainer[BackgroundTask]
    def __init__(self, known: _Optional[bool] = ..., tasks: _Optional[_Iterable[_Union[BackgroundTask, _Mapping]]] = ...) -> None: ...

class ScheduleEntry(_message.Message):
    __slots__ = ("id", "recurring", "self_paced", "interval_ms", "cron", "timezone", "next_run_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    RECURRING_FIELD_NUMBER: _ClassVar[int]
    SELF_PACED_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    CRON_FIELD_NUMBER: _ClassVar[int]
    TIMEZONE_FIELD_NUMBER: _ClassVar[int]
    NEXT_RUN_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    recurring: bool
    self_paced: bool
    interval_ms: int
    cron: str
    timezone: str
    next_run_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., recurring: _Optional[bool] = ..., self_paced: _Optional[bool] = ..., interval_ms: _Optional[int] = ..., cron: _Optional[str] = ..., timezone: _Optional[str] = ..., next_run_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ScheduleSnapshot(_message.Message):
    __slots__ = ("supported", "known", "entries", "truncated", "reason")
    SUPPORTED_FIELD_NUMBER: _ClassVar[int]
    KNOWN_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    supported: bool
    known: bool
    entries: _containers.RepeatedCompositeFieldContainer[ScheduleEntry]
    truncated: bool
    reason: str
    def __init__(self, supported: _Optional[bool] = ..., known: _Optional[bool] = ..., entries: _Optional[_Iterable[_Union[ScheduleEntry, _Mapping]]] = ..., truncated: _Optional[bool] = ..., reason: _Optional[str] = ...) -> None: ...

class Context(_message.Message):
    __slots__ = ("used", "limit", "prompt", "cached")
    USED_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    used: int
    limit: int
    prompt: int
    cached: int
    def __init__(self, used: _Optional[int] = ..., limit: _Optional[int] = ..., prompt: _Optional[int] = ..., cached: _Optional[int] = ...) -> None: ...

class Usage(_message.Message):
    __slots__ = ("ai_units",)
    AI_UNITS_FIELD_NUMBER: _ClassVar[int]
    ai_units: float
    def __init__(self, ai_units: _Optional[float] = ...) -> None: ...

class TokenUsage(_message.Message):
    __slots__ = ("model", "time", "input", "output", "cache_read", "cache_write", "duration_ms", "nano_aiu", "cost")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    NANO_AIU_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    model: str
    time: _timestamp_pb2.Timestamp
    input: int
    output: int
    cache_read: int
    cache_write: int
    duration_ms: int
    nano_aiu: int
    cost: float
    def __init__(self, model: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., input: _Optional[int] = ..., output: _Optional[int] = ..., cache_read: _Optional[int] = ..., cache_write: _Optional[int] = ..., duration_ms: _Optional[int] = ..., nano_aiu: _Optional[int] = ..., cost: _Optional[float] = ...) -> None: ...

class AutopilotObjective(_message.Message):
    __slots__ = ("id", "objective", "status", "turn_count", "pause_reason", "completion_summary", "credits_used", "credit_limit")
    ID_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TURN_COUNT_FIELD_NUMBER: _ClassVar[int]
    PAUSE_REASON_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    CREDITS_USED_FIELD_NUMBER: _ClassVar[int]
    CREDIT_LIMIT_FIELD_NUMBER: _ClassVar[int]
    id: int
    objective: str
    status: str
    turn_count: int
    pause_reason: str
    completion_summary: str
    credits_used: float
    credit_limit: float
    def __init__(self, id: _Optional[int] = ..., objective: _Optional[str] = ..., status: _Optional[str] = ..., turn_count: _Optional[int] = ..., pause_reason: _Optional[str] = ..., completion_summary: _Optional[str] = ..., credits_used: _Optional[float] = ..., credit_limit: _Optional[float] = ...) -> None: ...

class ExecutionState(_message.Message):
    __slots__ = ("known", "mode", "objective")
    KNOWN_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    known: bool
    mode: str
    objective: AutopilotObjective
    def __init__(self, known: _Optional[bool] = ..., mode: _Optional[str] = ..., objective: _Optional[_Union[AutopilotObjective, _Mapping]] = ...) -> None: ...

class Phase(_message.Message):
    __slots__ = ("calls", "subagents", "model", "calls_since", "compacting", "agent", "tool", "detail", "tool_since", "tool_subagent")
    CALLS_FIELD_NUMBER: _ClassVar[int]
    SUBAGENTS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    CALLS_SINCE_FIELD_NUMBER: _ClassVar[int]
    COMPACTING_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    TOOL_SINCE_FIELD_NUMBER: _ClassVar[int]
    TOOL_SUBAGENT_FIELD_NUMBER: _ClassVar[int]
    calls: int
    subagents: int
    model: str
    calls_since: _timestamp_pb2.Timestamp
    compacting: bool
    agent: str
    tool: str
    detail: str
    tool_since: _timestamp_pb2.Timestamp
    tool_subagent: bool
    def __init__(self, calls: _Optional[int] = ..., subagents: _Optional[int] = ..., model: _Optional[str] = ..., calls_since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., compacting: _Optional[bool] = ..., agent: _Optional[str] = ..., tool: _Optional[str] = ..., detail: _Optional[str] = ..., tool_since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., tool_subagent: _Optional[bool] = ...) -> None: ...

class Activity(_message.Message):
    __slots__ = ("plan", "intent", "retry", "phase")
    PLAN_FIELD_NUMBER: _ClassVar[int]
    INTENT_FIELD_NUMBER: _ClassVar[int]
    RETRY_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    plan: bool
    intent: str
    retry: Retry
    phase: Phase
    def __init__(self, plan: _Optional[bool] = ..., intent: _Optional[str] = ..., retry: _Optional[_Union[Retry, _Mapping]] = ..., phase: _Optional[_Union[Phase, _Mapping]] = ...) -> None: ...

class Todo(_message.Message):
    __slots__ = ("id", "title", "status", "note", "agent_id", "changed_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    CHANGED_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    title: str
    status: str
    note: str
    agent_id: str
    changed_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., title: _Optional[str] = ..., status: _Optional[str] = ..., note: _Optional[str] = ..., agent_id: _Optional[str] = ..., changed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class TodoList(_message.Message):
    __slots__ = ("known", "todos")
    KNOWN_FIELD_NUMBER: _ClassVar[int]
    TODOS_FIELD_NUMBER: _ClassVar[int]
    known: bool
    todos: _containers.RepeatedCompositeFieldContainer[Todo]
    def __init__(self, known: _Optional[bool] = ..., todos: _Optional[_Iterable[_Union[Todo, _Mapping]]] = ...) -> None: ...

class ModelSelection(_message.Message):
    __slots__ = ("model", "effort", "context_size")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    EFFORT_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_SIZE_FIELD_NUMBER: _ClassVar[int]
    model: str
    effort: str
    context_size: str
    def __init__(self, model: _Optional[str] = ..., effort: _Optional[str] = ..., context_size: _Optional[str] = ...) -> None: ...

class MCPServerStatus(_message.Message):
    __slots__ = ("name", "status", "error", "source", "remote", "sign_in", "needs_reconnect")
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    REMOTE_FIELD_NUMBER: _ClassVar[int]
    SIGN_IN_FIELD_NUMBER: _ClassVar[int]
    NEEDS_RECONNECT_FIELD_NUMBER: _ClassVar[int]
    name: str
    status: str
    error: str
    source: str
    remote: bool
    sign_in: bool
    needs_reconnect: bool
    def __init__(self, name: _Optional[str] = ..., status: _Optional[str] = ..., error: _Optional[str] = ..., source: _Optional[str] = ..., remote: _Optional[bool] = ..., sign_in: _Optional[bool] = ..., needs_reconnect: _Optional[bool] = ...) -> None: ...

class MCPStatusSnapshot(_message.Message):
    __slots__ = ("supported", "ready", "servers", "truncated")
    SUPPORTED_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    supported: bool
    ready: bool
    servers: _containers.RepeatedCompositeFieldContainer[MCPServerStatus]
    truncated: bool
    def __init__(self, supported: _Optional[bool] = ..., ready: _Optional[bool] = ..., servers: _Optional[_Iterable[_Union[MCPServerStatus, _Mapping]]] = ..., truncated: _Optional[bool] = ...) -> None: ...

class SkillLoad(_message.Message):
    __slots__ = ("id", "agent_id", "name", "description", "at")
    ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    agent_id: str
    name: str
    description: str
    at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., agent_id: _Optional[str] = ..., name: _Optional[str] = ..., description: _Optional[str] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("kind", "item", "delta", "turn", "interaction", "plan_path", "plan_version", "subagent", "background_tasks", "schedules", "context", "usage", "tokens", "execution", "error", "detached", "title", "compacting", "compacting_background", "activity", "todos", "model_selection", "mcp_status", "skill")
    KIND_FIELD_NUMBER: _ClassVar[int]
    ITEM_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    INTERACTION_FIELD_NUMBER: _ClassVar[int]
    PLAN_PATH_FIELD_NUMBER: _ClassVar[int]
    PLAN_VERSION_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_TASKS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULES_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DETACHED_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    COMPACTING_FIELD_NUMBER: _ClassVar[int]
    COMPACTING_BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_FIELD_NUMBER: _ClassVar[int]
    TODOS_FIELD_NUMBER: _ClassVar[int]
    MODEL_SELECTION_FIELD_NUMBER: _ClassVar[int]
    MCP_STATUS_FIELD_NUMBER: _ClassVar[int]
    SKILL_FIELD_NUMBER: _ClassVar[int]
    kind: str
    item: Item
    delta: Delta
    turn: Turn
    interaction: Interaction
    plan_path: str
    plan_version: int
    subagent: Subagent
    background_tasks: BackgroundTasks
    schedules: ScheduleSnapshot
    context: Context
    usage: Usage
    tokens: TokenUsage
    execution: ExecutionState
    error: str
    detached: bool
    title: str
    compacting: bool
    compacting_background: bool
    activity: Activity
    todos: TodoList
    model_selection: ModelSelection
    mcp_status: MCPStatusSnapshot
    skill: SkillLoad
    def __init__(self, kind: _Optional[str] = ..., item: _Optional[_Union[Item, _Mapping]] = ..., delta: _Optional[_Union[Delta, _Mapping]] = ..., turn: _Optional[_Union[Turn, _Mapping]] = ..., interaction: _Optional[_Union[Interaction, _Mapping]] = ..., plan_path: _Optional[str] = ..., plan_version: _Optional[int] = ..., subagent: _Optional[_Union[Subagent, _Mapping]] = ..., background_tasks: _Optional[_Union[BackgroundTasks, _Mapping]] = ..., schedules: _Optional[_Union[ScheduleSnapshot, _Mapping]] = ..., context: _Optional[_Union[Context, _Mapping]] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ..., tokens: _Optional[_Union[TokenUsage, _Mapping]] = ..., execution: _Optional[_Union[ExecutionState, _Mapping]] = ..., error: _Optional[str] = ..., detached: _Optional[bool] = ..., title: _Optional[str] = ..., compacting: _Optional[bool] = ..., compacting_background: _Optional[bool] = ..., activity: _Optional[_Union[Activity, _Mapping]] = ..., todos: _Optional[_Union[TodoList, _Mapping]] = ..., model_selection: _Optional[_Union[ModelSelection, _Mapping]] = ..., mcp_status: _Optional[_Union[MCPStatusSnapshot, _Mapping]] = ..., skill: _Optional[_Union[SkillLoad, _Mapping]] = ...) -> None: ...

class EventBatch(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[Event]
    def __init__(self, events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ...) -> None: ...

class History(_message.Message):
    __slots__ = ("items", "subagents", "usage", "model", "skills", "truncated")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    SUBAGENTS_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    SKILLS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[Item]
    subagents: _containers.RepeatedCompositeFieldContainer[Subagent]
    usage: Usage
    model: str
    skills: _containers.RepeatedCompositeFieldContainer[SkillLoad]
    truncated: bool
    def __init__(self, items: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., subagents: _Optional[_Iterable[_Union[Subagent, _Mapping]]] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ..., model: _Optional[str] = ..., skills: _Optional[_Iterable[_Union[SkillLoad, _Mapping]]] = ..., truncated: _Optional[bool] = ...) -> None: ...

class CommandOption(_message.Message):
    __slots__ = ("name", "description", "group")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    group: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., group: _Optional[str] = ...) -> None: ...

class Command(_message.Message):
    __slots__ = ("name", "description", "kind", "input_hint", "aliases", "allow_during_turn", "disabled_reason", "input_choices", "input_required")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    INPUT_HINT_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    ALLOW_DURING_TURN_FIELD_NUMBER: _ClassVar[int]
    DISABLED_REASON_FIELD_NUMBER: _ClassVar[int]
    INPUT_CHOICES_FIELD_NUMBER: _ClassVar[int]
    INPUT_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    kind: str
    input_hint: str
    aliases: _containers.RepeatedScalarFieldContainer[str]
    allow_during_turn: bool
    disabled_reason: str
    input_choices: _containers.RepeatedCompositeFieldContainer[CommandOption]
    input_required: bool
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., kind: _Optional[str] = ..., input_hint: _Optional[str] = ..., aliases: _Optional[_Iterable[str]] = ..., allow_during_turn: _Optional[bool] = ..., disabled_reason: _Optional[str] = ..., input_choices: _Optional[_Iterable[_Union[CommandOption, _Mapping]]] = ..., input_required: _Optional[bool] = ...) -> None: ...

class FileDiff(_message.Message):
    __slots__ = ("counts_unknown", "binary", "truncated", "old_path", "path", "status", "additions", "deletions", "before", "after", "patch")
    COUNTS_UNKNOWN_FIELD_NUMBER: _ClassVar[int]
    BINARY_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    OLD_PATH_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ADDITIONS_FIELD_NUMBER: _ClassVar[int]
    DELETIONS_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    PATCH_FIELD_NUMBER: _ClassVar[int]
    counts_unknown: bool
    binary: bool
    truncated: bool
    old_path: str
    path: str
    status: str
    additions: int
    deletions: int
    before: str
    after: str
    patch: str
    def __init__(self, counts_unknown: _Optional[bool] = ..., binary: _Optional[bool] = ..., truncated: _Optional[bool] = ..., old_path: _Optional[str] = ..., path: _Optional[str] = ..., status: _Optional[str] = ..., additions: _Optional[int] = ..., deletions: _Optional[int] = ..., before: _Optional[str] = ..., after: _Optional[str] = ..., patch: _Optional[str] = ...) -> None: ...
