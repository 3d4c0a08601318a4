"""Property test: random legal driving of an AgentRun, blocking and streamed, checked
step by step against the independent reference model (`reference_model.py`).

Each step feeds the same call to the run, to a twin freshly reloaded from the run's JSON,
and to the model. The run's outcome must equal the model's (turn numbers, prompts and
histories, pending calls and their preresolved results, errors with their payloads, the
final output and usage), the twin's must equal the run's, and afterwards every query of the
run must equal the model's state. A refused call must leave the run unchanged.

The driver computes each turn's allowed tools from the run's tool choice as rig's agent
does (spec §1.1). It never feeds values a run cannot persist, nor wrongly typed actions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from app.core import (
    AgentRun,
    AssistantMessage,
    CompletionIdentity,
    Done,
    Fail,
    Feedback,
    ModelTurn,
    Reasoning,
    Repair,
    Repeat,
    Retry,
    Skip,
    Stop,
    StreamedTurn,
    SystemMessage,
    Text,
    ToolCall,
    ToolChoice,
    ToolResult,
    Usage,
    UserMessage,
    stored,
)
from app.core.midstream import PartialStreamedTurn, StreamedInvalidToolCall
from tests.core.normal_forms import n_call, n_ctx, n_done, n_hist, observe
from tests.core.reference_model import Reference

EXECUTABLE = frozenset({"add", "mul"})
OUT = "final_result"
NAMES = ["add", "mul", "bad", OUT]
WEIGHTED_NAMES = ["add", "add", "mul", "bad", "bad", OUT]

tool_calls = st.one_of(
    st.builds(
        ToolCall.from_wire,
        st.sampled_from(["c1", "c2", "c1", ""]),  # duplicates and minted ids
        st.sampled_from(WEIGHTED_NAMES),
        st.sampled_from([{"x": 1}, {"summary": "s"}, "scalar"]),
    ),
    st.builds(
        lambda i, n: ToolCall(i, n, {"x": 2}, provider_call_id=f"prov_{i}"),
        st.sampled_from(["c1", "c3"]),
        st.sampled_from(WEIGHTED_NAMES),
    ),
)
texts = st.sampled_from(
    ["", "hi", "done", '{"summary":"s"}', '{"x":1}', ' {"summary":"t"}\n', '"summary"']
)
items = st.one_of(
    st.builds(Text, texts),
    st.just(Text("", {"k": 1})),
    st.just(Reasoning.of_text("think", signature="sig")),
    tool_calls,
    tool_calls,
)
choices = st.lists(items, max_size=4).map(tuple)
# Tool output mode needs answers aimed at it: several output calls, JSON text.
output_calls = st.builds(
    ToolCall.from_wire,
    st.sampled_from(["o1", "o2", "c1"]),
    st.just(OUT),
    st.sampled_from([{"summary": "a"}, {"summary": "b"}, {"x": 1}, "scalar", {"summary": None}]),
)
output_choices = st.one_of(
    st.lists(st.one_of(output_calls, output_calls, items), min_size=1, max_size=4).map(tuple),
    st.builds(
        lambda text: (Text(text),),
        st.sampled_from(['{"x":1}', '"summary"', "[1]", '{"summary":"s"}', "plain", " {}"]),
    ),
)
usages = st.builds(
    lambda i, o, r: Usage(i, o, i + o, reasoning_tokens=r),
    st.integers(0, 20),
    st.integers(0, 20),
    st.integers(0, 3),
)
finish_reasons = st.sampled_from([None, "stop", "length", "content_filter", "tool_calls", "odd"])
message_ids = st.sampled_from([None, "m1", "m2"])
actions = st.sampled_from(
    [Fail(), Stop("halt")]
    + [Retry("fb"), Skip("skipped"), Repair("add"), Repair(OUT)] * 3
    + [Repair("mul"), Repair("bad")]
)


def allowed_for(choice: ToolChoice | None, output_tool: str | None) -> frozenset[str]:
    """rig's agent (ACMP:151-226): auto/required/unset → every executable tool; none → none;
    specific → those names; the output tool is always added."""
    if choice is None or choice.kind in ("auto", "required"):
        allowed = set(EXECUTABLE)
    elif choice.kind == "none":
        allowed = set()
    else:
        allowed = set(choice.function_names)
    if output_tool is not None:
        allowed.add(output_tool)
    return frozenset(allowed)


def strip_count(outcome: tuple[Any, ...]) -> tuple[Any, ...]:
    """A reloaded Done reports output_tool_calls 0 (never serialised, spec §9)."""
    return outcome[:-1] if outcome[0] == "Done" else outcome


@dataclass(frozen=True)
class Config:
    max_turns: int
    retry_budget: int
    tool_choice: ToolChoice | None
    output: str  # "off" | "tool" | "tool+schema"
    max_output_retries: int
    history: str  # "none" | "empty" | "some"


configs = st.builds(
    Config,
    st.sampled_from([0, 1, 2, 2, 3, 3, 4, 4, 5, 6, 8, 8]),
    st.integers(0, 2),
    st.sampled_from(
        [None, None, ToolChoice.auto(), ToolChoice.required(), ToolChoice.none()]
        + [ToolChoice.specific(["add"])]
    ),
    st.sampled_from(["off", "tool", "tool+schema"]),
    st.integers(0, 2),
    st.sampled_from(["none", "empty", "some"]),
)


class ReferenceMachine(RuleBasedStateMachine):
    @initialize(config=configs)
    def start(self, config: Config) -> None:
        history = {
            "none": None,
            "empty": [],  # behaves like none (spec §1.1)
            "some": [SystemMessage("be brief"), UserMessage("earlier"), AssistantMessage("reply")],
        }[config.history]
        output_tool = None if config.output == "off" else OUT
        schema = (
            {"type": "object", "required": ["summary"]} if config.output == "tool+schema" else None
        )
        self.run = AgentRun(
            "question",
            max_turns=config.max_turns,
            history=history,
            tool_choice=config.tool_choice,
            max_invalid_tool_call_retries=config.retry_budget,
            output_tool_name=output_tool,
            output_schema=schema,
            max_output_retries=config.max_output_retries,
        )
        self.ref = Reference(
            max_turns=config.max_turns,
            history=n_hist(history or ()),
            tool_choice=config.tool_choice,
            retry_budget=config.retry_budget,
            output_tool=output_tool,
            required=["summary"] if schema else None,
            max_output_retries=config.max_output_retries,
        )
        self.allowed = allowed_for(config.tool_choice, output_tool)
        self.wrong_calls = 0
        first = stored.initial(self.run)
        self.control = first.control
        self.log = [first.batch.body] if first.batch else []

    # --- the comparison ---------------------------------------------------------------

    def step(self, method: str, expected: Any, *args: Any) -> tuple[Any, ...]:
        """Apply `method(*args)` to the run and to a twin reloaded from its JSON; both must
        show `expected` (the model's outcome, computed first from the pre-call model)."""
        before = self.run.to_json()
        twin = AgentRun.from_json(before)
        actual = observe(getattr(self.run, method), *args)
        assert actual == expected, f"{method}: run gave {actual!r}, spec model {expected!r}"
        assert strip_count(observe(getattr(twin, method), *args)) == strip_count(actual)
        after = self.run.to_json()
        assert twin.to_json() == after, f"{method}: reloaded twin diverged"
        if actual[0] == "PV":
            assert after == before, f"{method}: a refused call changed the run"
        self.step_stored(method, before, after, *args)
        event(f"{method} -> {actual[0]}")
        self.check_queries()
        return actual

    def step_stored(self, method: str, before: str, after: str, *args: Any) -> None:
        """The same call on the run as stored (control document and appended log,
        `app.core.stored`): it loads as the run was, ends as the run is, and appends only
        what the call added. Tool results also go to a control-only load (how the service
        answers them), which must write the very same snapshot."""
        log = "[" + ",".join(self.log) + "]"
        twin = stored.load(self.control, log)
        assert twin.run.to_json() == before, f"{method}: stored twin loaded differently"
        observe(getattr(twin.run, method), *args)
        snap = stored.snapshot(twin)
        if method == "tool_results" and not self.run.is_done():
            light = stored.load(self.control, control_only=True)
            observe(light.run.tool_results, *args)
            assert stored.snapshot(light) == snap, "control-only tool_results diverged"
        self.control = snap.control
        if snap.batch is not None:
            assert snap.batch.seq == len(self.log) + 1
            self.log.append(snap.batch.body)
        reloaded = stored.load(self.control, "[" + ",".join(self.log) + "]")
        assert reloaded.run.to_json() == after, f"{method}: stored run diverged"

    def check_queries(self) -> None:
        run, ref = self.run, self.ref
        assert run.status == ref.status
        assert run.turn() == ref.turn
        assert run.usage() == ref.usage
        assert tuple(n_call(c) for c in run.completion_calls()) == tuple(ref.calls)
        assert n_hist(run.messages()) == tuple(ref.messages)
        assert n_hist(run.full_history()) == ref.full()
        assert run.is_done() == (ref.status == "Done")
        response = run.response()
        assert (None if response is None else n_done(Done(response))) == ref.done
        assert n_ctx(run.pending_invalid_tool_call()) == ref.pending_context()
        cancelled = run.cancel_error("driver stop")
        assert (cancelled.reason, n_hist(cancelled.chat_history)) == ("driver stop", ref.full())

    # --- the driver ---------------------------------------------------------------------

    @rule(data=st.data())
    def drive(self, data: st.DataObject) -> None:
        """One legal move for the current state, with random choices (a single rule, so
        hypothesis' per-case rule switching cannot leave a run stuck mid-protocol)."""
        status = self.ref.status
        if self.wrong_calls < 3 and data.draw(st.integers(0, 9)) == 0:
            self.wrong_state(data)
        elif status in ("Done", "Failed"):
            self.start(data.draw(configs))
        elif status == "PreparingRequest":
            if self.ref.rollback_pending and not self.ref.recorded and data.draw(st.booleans()):
                self.record_streamed(data)
            else:
                self.next_step()
        elif status == "AwaitingModel":
            move = data.draw(st.sampled_from(["model"] * 4 + ["stream"] * 2 + ["resolve"] * 2))
            if move == "model" and not self.ref.recorded:
                self.model_response(data)
            elif move == "resolve":
                self.resolve_streamed(data)
            else:
                if not self.ref.recorded and data.draw(st.booleans()):
                    self.record_streamed(data)
                self.streamed_turn(data)
        elif status == "ResolvingToolCalls":
            action = data.draw(actions)
            self.step("resolve_invalid_tool_call", self.ref.resolve(action), action)
        elif status == "AwaitingAdvance" and data.draw(st.integers(0, 3)) == 0:
            request = data.draw(st.sampled_from([Repeat(), Feedback("try again")]))
            self.step("retry_model_turn", self.ref.retry_model_turn(request), request)
        elif status == "ExecutingTools" and data.draw(st.integers(0, 5)):
            self.tool_results(data)
        else:
            self.next_step()

    def next_step(self) -> None:
        if self.step("next_step", self.ref.next_step())[0] == "Done":
            self.step("next_step", self.ref.next_step())  # Done is idempotent

    def model_response(self, data: st.DataObject) -> None:
        message_id = data.draw(message_ids)
        output_mode = OUT in self.allowed
        turn = ModelTurn(
            choice=data.draw(
                output_choices if output_mode and data.draw(st.booleans()) else choices
            ),
            usage=data.draw(usages),
            executable_tool_names=EXECUTABLE,
            allowed_tool_names=self.allowed,
            message_id=message_id,
            response_id="resp" if message_id else None,
            finish_reason=data.draw(finish_reasons),
            raw=data.draw(st.sampled_from([None, {"n": 1}])),
        )
        self.step("model_response", self.ref.model_response(turn), turn)

    def tool_results(self, data: st.DataObject) -> None:
        """Answer every pending call (a preresolved one with exactly its result), in a
        random order, as the driver would; sometimes misanswer (spec §7 errors)."""
        answers: list[Any] = []
        for call, pre, _ in self.ref.pending:
            if pre is not None:
                answers.append(ToolResult(pre[1], pre[2], [Text(t) for t in pre[4]], pre[3]))
            else:
                answers.append(ToolResult(call[1], call[2], [Text(f"ran {call[1]}")], call[4]))
        answers = list(data.draw(st.permutations(answers)))
        kind = data.draw(st.sampled_from(["ok"] * 8 + ["drop", "twice", "text", "empty"]))
        if kind == "drop":
            answers.pop(data.draw(st.integers(0, len(answers) - 1)))
        elif kind == "twice":
            answers.append(answers[0])
        elif kind == "text":
            answers.insert(0, Text("not a result"))
        elif kind == "empty":
            answers = []
        self.step("tool_results", self.ref.tool_results(answers), answers)

    # --- streamed path ------------------------------------------------------------------

    def record_streamed(self, data: st.DataObject) -> None:
        usage, finish, message_id = data.draw(usages), data.draw(finish_reasons), None
        if data.draw(st.booleans()):
            message_id = data.draw(message_ids)
        raw = data.draw(st.sampled_from([None, {"s": [1]}]))
        identity = CompletionIdentity(message_id, "resp", None)
        expected = self.ref.record_streamed(usage, (message_id, "resp", None), finish, raw)
        self.step("record_streamed_completion_call", expected, usage, identity, finish, raw)

    def streamed_turn(self, data: st.DataObject) -> None:
        """A finished stream: mostly valid calls (the driver resolved invalid ones mid-stream),
        with internal ids from the assembler, some of them missing."""
        valid = sorted(self.allowed)
        calls = st.builds(
            ToolCall.from_wire,
            st.sampled_from(["c1", "c2", "c1"]),
            st.sampled_from(valid if valid and data.draw(st.integers(0, 5)) else NAMES),
            st.sampled_from([{"summary": "s"}, {"x": 1}]),
        )
        stream_items = st.one_of(st.builds(Text, texts), st.just(Reasoning.of_text("r")), calls)
        choice = data.draw(st.lists(stream_items, max_size=4))
        pairs = [
            (i.id, f"internal_{k}")
            for k, i in enumerate(choice)
            if isinstance(i, ToolCall) and data.draw(st.integers(0, 4))
        ]
        turn = StreamedTurn(
            choice,
            EXECUTABLE,
            self.allowed,
            data.draw(message_ids),
            tuple(pairs),
            data.draw(finish_reasons),
        )
        self.step("streamed_turn", self.ref.streamed_turn(turn), turn)

    def draw_partial(self, data: st.DataObject) -> tuple[Any, Any]:
        """A partial turn (validated calls only) and an invalid call for this turn."""
        valid = sorted(self.allowed)
        peers: list[ToolCall] = []
        if valid:
            peer = st.builds(
                ToolCall.from_wire,
                st.sampled_from(["c1", "c2"]),
                st.sampled_from(valid),
                st.just({"x": 1}),
            )
            peers = data.draw(st.lists(peer, max_size=2))
        partial = PartialStreamedTurn(
            message_id=data.draw(message_ids),
            text=data.draw(st.sampled_from([None, "", "thinking "])),
            reasoning=data.draw(st.sampled_from([(), (Reasoning.of_text("r"),)])),
            pending_tool_calls=peers,
        )
        name = data.draw(st.sampled_from([n for n in NAMES if n not in self.allowed]))
        call = ToolCall.from_wire(data.draw(st.sampled_from(["c1", "c9", ""])), name, {"x": 1})
        invalid = StreamedInvalidToolCall(
            call,
            "internal_invalid",
            data.draw(st.sampled_from([None, '{"x":'])),
            EXECUTABLE,
            self.allowed,
        )
        return partial, invalid

    def resolve_streamed(self, data: st.DataObject) -> None:
        partial, invalid = self.draw_partial(data)
        # The driver first asks for the context (pure in every state, spec §3.5).
        before = self.run.to_json()
        context = self.run._streamed_invalid_tool_call_context(partial, invalid)
        assert n_ctx(context) == self.ref.streamed_context(partial, invalid)
        assert self.run.to_json() == before
        action = data.draw(actions)
        expected = self.ref.resolve_streamed(partial, invalid, action)
        self.step("_resolve_streamed_invalid_tool_call", expected, partial, invalid, action)

    # --- wrong-state calls (spec §3.2: refused, run unchanged) -------------------------

    def wrong_state(self, data: st.DataObject) -> None:
        """A few per run: they change nothing, so more would only dilute the driving."""
        self.wrong_calls += 1
        ref = self.ref
        status = ref.status
        partial = PartialStreamedTurn()
        bad = StreamedInvalidToolCall(ToolCall("c1", "bad", {}), "i", None, EXECUTABLE)
        turn = ModelTurn((Text("x"),), Usage(), EXECUTABLE, self.allowed)
        stream = StreamedTurn((Text("x"),), EXECUTABLE, self.allowed)
        result = ToolResult("c1", "add", [Text("x")])
        no_record = (Usage(), (None, None, None), None, None)
        candidates: list[tuple[str, Any, tuple[Any, ...]]] = []
        if status in ("AwaitingModel", "ResolvingToolCalls", "Failed"):
            candidates.append(("next_step", ref.next_step, ()))
        if status != "AwaitingModel" or ref.recorded:
            candidates.append(("model_response", ref.model_response, (turn,)))
        if status != "ResolvingToolCalls":
            candidates.append(("resolve_invalid_tool_call", ref.resolve, (Fail(),)))
        if status != "ExecutingTools":
            candidates.append(("tool_results", ref.tool_results, ([result],)))
        if status != "AwaitingAdvance":
            candidates.append(("retry_model_turn", ref.retry_model_turn, (Repeat(),)))
        if status != "AwaitingModel":
            candidates.append(("streamed_turn", ref.streamed_turn, (stream,)))
            args = (partial, bad, Fail())
            candidates.append(("_resolve_streamed_invalid_tool_call", ref.resolve_streamed, args))
        if ref.recorded or not (
            status == "AwaitingModel" or (status == "PreparingRequest" and ref.rollback_pending)
        ):
            candidates.append(("record_streamed_completion_call", ref.record_streamed, no_record))
        method, model_method, args = data.draw(st.sampled_from(candidates))
        expected = model_method(*args)
        assert expected[0] == "PV", (method, status, expected)
        if method == "record_streamed_completion_call":
            args = (Usage(), CompletionIdentity())
        self.step(method, expected, *args)

    @invariant()
    def budget(self) -> None:
        if hasattr(self, "run"):
            assert self.run.turn() <= self.ref.max_turns
            assert len(self.run.completion_calls()) <= self.run.turn()


ReferenceMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestReferenceMachine = ReferenceMachine.TestCase
