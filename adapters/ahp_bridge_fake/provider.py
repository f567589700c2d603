"""The fake Provider: scripted (or replayed) conversations, no account, no network.

``async with provider:`` opens the nursery where every turn runs, so cancelling a caller
never cancels a turn; leaving it closes every conversation. Conversation records live in
memory and, with ``data_dir``, on disk (``<data_dir>/<conversation id>.jsonl``), so a second
provider on the same directory reopens them after a restart.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import trio
from ahp_bridge_support import ProviderLifetime
from ahp_bridge_support.private import private_dir

from ahp_bridge.agentapi import (
    ACCOUNT_STORED,
    COMMAND_PROMPT,
    COMMAND_SKILL,
    MCP_CONNECTED,
    MCP_DISABLED,
    MCP_STDIO,
    Account,
    AgentUnavailable,
    Capabilities,
    Command,
    ConfigurationCatalog,
    ConfigurationDefinition,
    ContextSize,
    ConversationNotFound,
    History,
    HistoryWindow,
    HostTool,
    HostToolClash,
    ItemNotFound,
    MCPServer,
    MCPServerConfig,
    MCPStatus,
    MCPTool,
    Model,
    OpenRequest,
    Quota,
    ReadRequest,
    SignedOut,
    SignInRejected,
    SubagentRequest,
    SubagentWindow,
    TitleRequest,
    Unsupported,
    UtilityRequest,
    WindowRequest,
)

from .catalog import CommandSpec, DefinitionSpec, McpSpec
from .conversation import FakeConversation, TurnSource
from .files import FileRecord
from .script import Script
from .transcript import Meta, Transcript
from .turns import ScriptedTurns
from .utility import run_utility

_SAFE_ID = re.compile(r"[A-Za-z0-9_.-]+")


def _utcnow() -> datetime:
    return datetime.now(UTC)


def check_host_tools(tools: list[HostTool], own: frozenset[str]) -> None:
    """Refuse host tools named like the script's own tools, or twice (HostToolClash)."""
    names = [tool.name for tool in tools]
    clashing = sorted({n for n in names if n in own} | {n for n in names if names.count(n) > 1})
    if clashing:
        raise HostToolClash(
            f"host tools named like the fake script's own tools (or twice): {', '.join(clashing)}",
            clashing,
        )


class FakeProvider(ProviderLifetime):
    """A scripted agentapi Provider (name "fake")."""

    _lifetime_name = "the fake provider"

    def __init__(
        self,
        script: Script,
        *,
        data_dir: str | Path | None = None,
        time_scale: float = 1.0,
        clock: Callable[[], datetime] = _utcnow,
        conversation_class: type[FakeConversation] = FakeConversation,
        sign_in_token: str = "",
        cancel_latency: float = 0.0,
    ) -> None:
        if time_scale < 0:
            raise ValueError(f"time_scale must be at least 0, got {time_scale}")
        if cancel_latency < 0:
            raise ValueError(f"cancel_latency must be at least 0, got {cancel_latency}")
        #: Seconds a cancelled turn takes to end after `cancel` returned (busy meanwhile).
        self.cancel_latency = cancel_latency
        self.script = script
        self.time_scale = time_scale
        self.now = clock
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self._conversation_class = conversation_class
        self.on_open: Callable[[FakeConversation], None] | None = None
        """Called with each conversation as it opens, before it is returned (replay)."""
        self._scripted = ScriptedTurns(script)
        catalog = script.catalog
        self._disabled_skills = {s.name for s in catalog.skills if not s.enabled}
        self._mcp_enabled = {m.name: m.status != "disabled" for m in catalog.mcp_servers}
        self._mcp_added: dict[str, MCPServer] = {}
        self._records: dict[str, Transcript] = {}
        self._files: dict[str, FileRecord] = {}
        self._open: dict[str, FakeConversation] = {}
        self._opened = 0
        #: With a sign-in token the fake plays a runtime that starts signed out (AccountManager).
        self._sign_in_token = sign_in_token
        self._signed_in = not sign_in_token
        #: Why the runtime lost its sign-in (a script's `sign_out` step), "" when it never had one.
        self._lost_reason = ""

    # -- lifetime --------------------------------------------------------------------------

    async def _on_start(self) -> None:
        if self.data_dir is not None:
            private_dir(self.data_dir)  # transcripts are the user's only

    def spawn(self, fn: Callable[..., Awaitable[object]], *args: object) -> None:
        """Run fn in the provider's nursery (where turns live)."""
        self._turn_nursery().start_soon(fn, *args)

    def turn_source(self, conversation: FakeConversation) -> TurnSource:
        return self._scripted

    def files_of(self, transcript: Transcript) -> FileRecord:
        """The record of the files a conversation wrote (one per conversation, kept while the
        provider runs, so a reopen keeps its diff)."""
        record = self._files.get(transcript.meta.id)
        if record is None:
            record = self._files[transcript.meta.id] = FileRecord(transcript.meta.workdir)
        return record

    def drop_files(self, conversation_id: str) -> None:
        """Forget the file record of a conversation that can never reopen (a utility run's)."""
        self._files.pop(conversation_id, None)

    def forget(self, conversation: FakeConversation) -> None:
        if self._open.get(conversation.id()) is conversation:
            del self._open[conversation.id()]

    # -- Provider --------------------------------------------------------------------------

    def name(self) -> str:
        return "fake"

    def display_name(self) -> str:
        return self.script.display_name

    def capabilities(self) -> Capabilities:
        return Capabilities(
            cancel=True,
            permissions=True,
            questions=True,
            history=True,
            context_size=True,
            usage=True,
            titles=True,
            host_tools=True,
            account=bool(self._sign_in_token),
            session_diff=True,
            rewind=True,
            custom_agents=bool(self.script.catalog.agents),
            mcp=bool(self.script.catalog.mcp_servers),
        )

    def require_sign_in(self) -> None:
        if not self._signed_in:
            raise SignedOut(
                "the fake runtime is signed out: sign in from your client with the token "
                "configured as sign_in_token"
            )

    async def check(self) -> None:
        await trio.lowlevel.checkpoint()
        self.require_sign_in()

    # -- AccountManager (with sign_in_token) -----------------------------------------------

    def _account(self) -> Account:
        if not self._signed_in:
            return Account(signed_in=False, message=self._lost_reason or "signed out")
        return Account(signed_in=True, login="fake-user", host="github.com", source=ACCOUNT_STORED)

    async def account(self) -> Account:
        await trio.lowlevel.checkpoint()
        return self._account()

    async def sign_in(self, token: str) -> Account:
        await trio.lowlevel.checkpoint()
        if not self._sign_in_token or token != self._sign_in_token:
            raise SignInRejected("the fake runtime does not accept that token")
        self._signed_in = True
        self._lost_reason = ""
        return self._account()

    def lose_sign_in(self, reason: str) -> bool:
        """A script's `sign_out` step: the sign-in expires (``account()`` says signed out,
        ``check()`` raises SignedOut) until a client signs in again. False without
        ``sign_in_token``: such a runtime has no sign-in to lose."""
        if not self._sign_in_token:
            return False
        self._signed_in = False
        self._lost_reason = reason
        return True

    async def sign_out(self) -> Account:
        await trio.lowlevel.checkpoint()
        if self._sign_in_token:
            self._signed_in = False
        return self._account()

    async def models(self) -> list[Model]:
        await trio.lowlevel.checkpoint()
        self.require_sign_in()
        return [
            Model(
                id=m.id,
                name=m.name,
                efforts=list(m.efforts),
                context_sizes=[ContextSize(id=i, tokens=t) for i, t in m.context_sizes],
            )
            for m in self.script.models
        ]

    def check_selection(self, model: str, effort: str, context_size: str) -> None:
        """Refuse a model, effort or context tier the script does not offer (ValueError)."""
        spec = next((m for m in self.script.models if m.id == model), None)
        if spec is None:
            known = ", ".join(m.id for m in self.script.models)
            raise ValueError(f"unknown model {model!r} (models: {known})")
        if effort and effort not in spec.efforts:
            raise ValueError(f"model {model!r} has no effort {effort!r}")
        tiers = {i for i, _ in spec.context_sizes} | {"default"}
        if context_size and context_size not in tiers:
            raise ValueError(f"model {model!r} has no context size {context_size!r}")

    async def open(self, req: OpenRequest) -> FakeConversation:
        self._require_started()
        self.check_agent(req.agent)
        if req.assisted_approval_model:
            raise Unsupported("the fake provider has no assisted permission review")
        if req.tools:
            check_host_tools(req.tools, self.script.tool_names())
        if req.conversation_id:
            transcript = self._find(req.conversation_id)
            previous = self._open.get(req.conversation_id)
            if previous is not None:
                await previous.close()
        else:
            model = req.model or self.script.default_model
            self.check_selection(model, req.effort, req.context_size)
            meta = Meta(
                id=f"fake-{uuid.uuid4()}",
                title=req.title,
                workdir=req.workdir,
                model=model,
                effort=req.effort,
                context_size=req.context_size,
            )
            transcript = Transcript(meta, self._file(meta.id))
            transcript.save_meta()
            self._records[meta.id] = transcript
        self._opened += 1
        conversation = self._conversation_class(self, transcript, self._opened)
        conversation.agent = req.agent
        conversation.attach(req.events)
        conversation.host_tools = {tool.name: tool for tool in req.tools}
        conversation.call_tool = req.call_tool
        conversation.session_id = req.session_id
        if self.on_open is not None:
            self.on_open(conversation)
        self._open[transcript.meta.id] = conversation
        await trio.lowlevel.checkpoint()
        return conversation

    def _file(self, conversation_id: str) -> Path | None:
        if self.data_dir is None:
            return None
        return self.data_dir / f"{conversation_id}.jsonl"

    def _find(self, conversation_id: str) -> Transcript:
        if conversation_id in self._records:
            return self._records[conversation_id]
        file = self._file(conversation_id) if _SAFE_ID.fullmatch(conversation_id) else None
        if file is None or not file.is_file():
            raise ConversationNotFound(f"no fake conversation {conversation_id!r}")
        transcript = Transcript.load(file)
        self._records[conversation_id] = transcript
        return transcript

    async def shutdown(self) -> None:
        for conversation in list(self._open.values()):
            await conversation.close()

    # -- the script's catalog: commands, agents, skills, MCP servers ------------------------

    def commands(self) -> list[Command]:
        catalog = self.script.catalog
        out = [
            Command(
                name=c.name,
                description=c.description,
                kind=COMMAND_SKILL if c.kind == "skill" else COMMAND_PROMPT,
                input_hint=c.input_hint,
            )
            for c in catalog.commands
        ]
        for skill in catalog.skills:
            offered = skill.user_invocable and skill.name not in self._disabled_skills
            if offered and not any(c.name == skill.name for c in out):
                out.append(
                    Command(name=skill.name, description=skill.description, kind=COMMAND_SKILL)
                )
        return out

    def command(self, name: str) -> CommandSpec | None:
        """The spec a command name runs (a skill gets a prompt that names it)."""
        catalog = self.script.catalog
        spec = next((c for c in catalog.commands if c.name == name), None)
        if spec is not None:
            return spec
        skill = next((s for s in catalog.skills if s.name == name), None)
        if skill is None or not skill.user_invocable or skill.name in self._disabled_skills:
            return None
        prompt = skill.prompt or f"Use the {skill.name} skill: {{input}}"
        return CommandSpec(name=skill.name, kind="skill", prompt=prompt)

    def check_agent(self, agent_id: str) -> None:
        if agent_id and not any(a.id == agent_id for a in self.script.catalog.agents):
            raise AgentUnavailable(f"the fake provider has no custom agent {agent_id!r}")

    def mcp_spec(self, name: str) -> McpSpec | None:
        return next((m for m in self.script.catalog.mcp_servers if m.name == name), None)

    def mcp_for_conversation(self) -> dict[str, MCPStatus]:
        """The servers a conversation opens with: each in its scripted state, or disabled."""
        out: dict[str, MCPStatus] = {}
        for spec in self.script.catalog.mcp_servers:
            on = self._mcp_enabled.get(spec.name, False)
            state = (spec.status if spec.status != "disabled" else MCP_CONNECTED) if on else ""
            status = state or MCP_DISABLED
            out[spec.name] = MCPStatus(
                name=spec.name,
                status=status,
                error=spec.error if status == "failed" else "",
                source=spec.source,
                tools=[MCPTool(name=t) for t in spec.tools] if status == MCP_CONNECTED else [],
            )
        return out

    def _definitions(
        self, specs: tuple[DefinitionSpec, ...], project_paths: list[str], skills: bool = False
    ) -> ConfigurationCatalog:
        root = project_paths[0] if project_paths else ""
        definitions = []
        for spec in specs:
            path = spec.path
            if path and root and not Path(path).is_absolute():
                path = str(Path(root) / path)
            enabled = spec.name not in self._disabled_skills if skills else None
            definitions.append(
                ConfigurationDefinition(
                    id=spec.id,
                    name=spec.name,
                    description=spec.description,
                    source="project" if root else "user",
                    path=path,
                    enabled=enabled,
                    user_invocable=spec.user_invocable if skills else None,
                )
            )
        return ConfigurationCatalog(definitions=definitions)

    async def discover_skills(
        self, project_paths: list[str], skill_directories: list[str]
    ) -> ConfigurationCatalog:
        """ConfigurationDiscoverer: the script's ``[[skills]]``."""
        await trio.lowlevel.checkpoint()
        return self._definitions(self.script.catalog.skills, project_paths, skills=True)

    async def discover_agents(self, project_paths: list[str]) -> ConfigurationCatalog:
        await trio.lowlevel.checkpoint()
        return self._definitions(self.script.catalog.agents, project_paths)

    async def discover_hooks(self, project_paths: list[str]) -> ConfigurationCatalog:
        await trio.lowlevel.checkpoint()
        return self._definitions(self.script.catalog.hooks, project_paths)

    async def discover_instructions(self, project_paths: list[str]) -> ConfigurationCatalog:
        await trio.lowlevel.checkpoint()
        return self._definitions(self.script.catalog.instructions, project_paths)

    async def set_skill_globally_disabled(self, name: str, disabled: bool) -> None:
        """SkillGlobalSetter: add the name to (or take it off) the disabled-skills list."""
        await trio.lowlevel.checkpoint()
        if disabled:
            self._disabled_skills.add(name)
        else:
            self._disabled_skills.discard(name)

    # MCPConfigurer: the user-wide list, for conversations opened afterwards.

    async def mcp_servers(self) -> list[MCPServer]:
        await trio.lowlevel.checkpoint()
        scripted = [
            MCPServer(
                name=m.name, type=MCP_STDIO, enabled=self._mcp_enabled[m.name], source=m.source
            )
            for m in self.script.catalog.mcp_servers
        ]
        return scripted + list(self._mcp_added.values())

    async def add_mcp_server(self, cfg: MCPServerConfig) -> None:
        await trio.lowlevel.checkpoint()
        if cfg.name in self._mcp_enabled or cfg.name in self._mcp_added:
            raise ValueError(f"an MCP server named {cfg.name!r} exists")
        self._mcp_added[cfg.name] = MCPServer(**cfg.model_dump(), enabled=True, source="user")

    async def update_mcp_server(self, cfg: MCPServerConfig) -> None:
        await trio.lowlevel.checkpoint()
        current = self._mcp_added.get(cfg.name)
        if current is None:
            raise ValueError(f"no user MCP server {cfg.name!r} to update")
        self._mcp_added[cfg.name] = MCPServer(
            **cfg.model_dump(), enabled=current.enabled, source="user"
        )

    async def remove_mcp_server(self, name: str) -> None:
        await trio.lowlevel.checkpoint()
        if self._mcp_added.pop(name, None) is None:
            raise ValueError(f"no user MCP server {name!r} to remove")

    async def set_mcp_server_enabled(self, name: str, enabled: bool) -> None:
        await trio.lowlevel.checkpoint()
        if name in self._mcp_added:
            self._mcp_added[name] = self._mcp_added[name].model_copy(update={"enabled": enabled})
        elif name in self._mcp_enabled:
            self._mcp_enabled[name] = enabled
        else:
            raise ValueError(f"no MCP server {name!r}")

    # -- optional capabilities -------------------------------------------------------------

    async def read_history(self, req: ReadRequest) -> History:
        """HistoryReader: the record without opening the conversation."""
        await trio.lowlevel.checkpoint()
        return self._find(req.conversation_id).history()

    async def read_history_window(self, req: WindowRequest) -> HistoryWindow:
        """HistoryPager: one agent's recorded items around req.item_id (or the end)."""
        await trio.lowlevel.checkpoint()
        if req.before < 0 or req.after < 0:
            raise ValueError("before and after must be at least 0")
        history = self._find(req.conversation_id).history()
        items = [item for item in history.items if item.agent_id == req.agent_id]
        if req.item_id:
            at = next((i for i, item in enumerate(items) if item.id == req.item_id), None)
            if at is None:
                raise ItemNotFound(f"no item {req.item_id!r} of agent {req.agent_id!r}")
            high = min(len(items), at + 1 + req.after)
        else:
            at = high = len(items)
        low = max(0, at - req.before)
        return HistoryWindow(
            items=items[low:high],
            at=at - low,
            start=low == 0,
            next=items[high].id if high < len(items) else "",
        )

    async def read_subagents(self, req: SubagentRequest) -> SubagentWindow:
        """SubagentPager: the subagents recorded before req.agent_id, ending with it."""
        await trio.lowlevel.checkpoint()
        if req.before < 0:
            raise ValueError("before must be at least 0")
        subagents = self._find(req.conversation_id).history().subagents
        at = next((i for i, sa in enumerate(subagents) if sa.id == req.agent_id), None)
        if at is None:
            raise ItemNotFound(f"no subagent {req.agent_id!r}")
        low = max(0, at - req.before)
        return SubagentWindow(subagents=subagents[low : at + 1], start=low == 0)

    async def title(self, req: TitleRequest) -> str:
        """Titler: the first line of the first message, clipped; no model is involved."""
        await trio.lowlevel.checkpoint()
        first = next((line.strip() for line in req.text.splitlines() if line.strip()), "")
        return first[:60] if first else "New conversation"

    async def run_utility(self, req: UtilityRequest) -> str:
        """UtilityRunner: the rule matching req.prompt, in a throwaway conversation whose only
        tools are req.tools; permissions are rejected, questions declined."""
        self._require_started()
        return await run_utility(self, req)

    async def quota(self) -> list[Quota]:
        """QuotaReporter: the fake has no account, so one unlimited quota."""
        await trio.lowlevel.checkpoint()
        return [Quota(type="fake", unlimited=True, unit="ai_credits", plan="fake")]
