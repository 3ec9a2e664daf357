"""The scripted stand-in for Claude, checked through the real Anthropic SDK (its own clients and the
tool runner, sync and async) and through raw HTTP."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any

import anthropic
import pytest
from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError
from anthropic.types.beta import BetaTextBlock, BetaToolUseBlock

from s3memory.testing.script import Reply, ToolResult, last_tool_results, memory_call, reply
from s3memory.testing.scripted_claude import API_KEY, ScriptedClaude
from s3memory.tool import AsyncS3MemoryTool
from tests.conftest import memory_tool

pytestmark = [pytest.mark.takes_format]

MODEL = "claude-sonnet-4-5"


class DictMemory(BetaAbstractMemoryTool):
    """A tiny in-memory stand-in for the real tool: enough to exercise the runner's round trip."""

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[str, str] = {}
        self.calls: list[dict[str, Any]] = []

    def call(self, input: object) -> str:
        assert isinstance(input, dict)
        self.calls.append(dict(input))
        if input["command"] == "create":
            self.files[input["path"]] = input["file_text"]
            return f"File created successfully at: {input['path']}"
        if input["command"] == "view":
            if input["path"] not in self.files:
                raise ToolError(f"The path {input['path']} does not exist.")
            return f"content of {input['path']}: {self.files[input['path']]}"
        raise ToolError("unsupported")

    def view(self, command: Any) -> str:
        raise NotImplementedError

    def create(self, command: Any) -> str:
        raise NotImplementedError

    def str_replace(self, command: Any) -> str:
        raise NotImplementedError

    def insert(self, command: Any) -> str:
        raise NotImplementedError

    def delete(self, command: Any) -> str:
        raise NotImplementedError

    def rename(self, command: Any) -> str:
        raise NotImplementedError


def client_for(api: ScriptedClaude, key: str = "sk-test-key") -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key=key, base_url=api.base_url, max_retries=0, timeout=10)


def post(api: ScriptedClaude, body: object, path: str = "/v1/messages") -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        api.base_url + path,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "x-api-key": "raw-key"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_base_url_is_loopback_with_a_real_port(api: ScriptedClaude) -> None:
    assert api.base_url.startswith("http://127.0.0.1:")
    assert int(api.base_url.rsplit(":", 1)[1]) > 0


def test_text_reply_parses_as_a_message_in_the_beta_and_plain_sdk(api: ScriptedClaude) -> None:
    api.play("Hello from the script.", "Second answer.")
    client = client_for(api)

    beta = client.beta.messages.create(
        model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    )
    plain = client.messages.create(
        model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "again"}]
    )

    assert beta.type == "message" and beta.role == "assistant"
    assert beta.model == MODEL
    assert beta.stop_reason == "end_turn" and beta.stop_sequence is None
    assert isinstance(beta.content[0], BetaTextBlock)
    assert beta.content[0].text == "Hello from the script."
    assert beta.id.startswith("msg_")
    assert beta.usage.input_tokens > 0 and beta.usage.output_tokens > 0
    assert plain.content[0].type == "text" and plain.content[0].text == "Second answer."
    assert plain.id != beta.id
    assert api.remaining == 0


def test_tool_use_blocks_round_trip(api: ScriptedClaude) -> None:
    calls = [
        {"command": "view", "path": "/memories"},
        {"command": "create", "path": "/memories/a.md", "file_text": "line one\nline two\n"},
    ]
    api.play(Reply("Checking memory.", calls))

    message = client_for(api).beta.messages.create(
        model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "remember this"}]
    )

    assert message.stop_reason == "tool_use"
    assert isinstance(message.content[0], BetaTextBlock) and message.content[0].text == "Checking memory."
    uses = message.content[1:]
    assert all(isinstance(block, BetaToolUseBlock) for block in uses)
    assert [block.input for block in uses if isinstance(block, BetaToolUseBlock)] == calls
    ids = [block.id for block in uses if isinstance(block, BetaToolUseBlock)]
    assert all(tool_id.startswith("toolu_") for tool_id in ids) and len(set(ids)) == 2
    assert all(block.name == "memory" for block in uses if isinstance(block, BetaToolUseBlock))


def test_records_bodies_keys_and_headers(api: ScriptedClaude) -> None:
    api.play("ok")
    client_for(api, key="sk-recorded").beta.messages.create(
        model=MODEL,
        max_tokens=99,
        messages=[{"role": "user", "content": "record me"}],
        betas=["context-management-2025-06-27"],
    )

    assert len(api.requests) == 1
    body = api.requests[0]
    assert body["model"] == MODEL and body["max_tokens"] == 99
    assert body["messages"] == [{"role": "user", "content": "record me"}]
    assert api.api_keys == ["sk-recorded"]
    assert "context-management-2025-06-27" in api.headers[0]["anthropic-beta"]


def test_raw_http_key_header_is_recorded(api: ScriptedClaude) -> None:
    api.play("ok")
    status, body = post(
        api, {"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
    )
    assert status == 200 and body["content"] == [{"type": "text", "text": "ok"}]
    assert api.api_keys == ["raw-key"]


def test_tool_runner_plays_callable_turns_that_read_tool_results(api: ScriptedClaude) -> None:
    seen: list[list[ToolResult]] = []

    def read_back(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen.append(last_tool_results(messages))
        return [{"command": "view", "path": "/memories/fact.md"}]

    def answer(messages: list[dict[str, Any]]) -> str:
        results = last_tool_results(messages)
        seen.append(results)
        return "I recall: " + results[0].text

    api.play(
        [{"command": "create", "path": "/memories/fact.md", "file_text": "the sky is green"}],
        read_back,
        answer,
    )
    tool = DictMemory()
    runner = client_for(api).beta.messages.tool_runner(
        model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "go"}], tools=[tool]
    )
    final = runner.until_done()

    assert isinstance(final.content[0], BetaTextBlock)
    assert final.content[0].text == "I recall: content of /memories/fact.md: the sky is green"
    assert [call["command"] for call in tool.calls] == ["create", "view"]
    assert seen[0][0].text == "File created successfully at: /memories/fact.md" and not seen[0][0].is_error
    assert len(api.requests) == 3 and api.remaining == 0
    # On a server-held thread the runner sends only new messages; the stand-in rebuilds the conversation.
    assert [len(history) for history in api.histories] == [1, 3, 5]
    assert [message["role"] for message in api.histories[2]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]


def test_tool_runner_without_threads_sends_full_history(api: ScriptedClaude) -> None:
    api.play(
        [{"command": "view", "path": "/memories/none.md"}],
        lambda messages: last_tool_results(messages)[0].text,
    )
    runner = client_for(api).beta.messages.tool_runner(
        model=MODEL,
        max_tokens=64,
        messages=[{"role": "user", "content": "go"}],
        tools=[DictMemory()],
        thread=False,
    )
    final = runner.until_done()

    assert "thread" not in api.requests[1]
    assert len(api.requests[1]["messages"]) == 3
    error_result = last_tool_results(api.histories[1])[0]
    assert error_result.is_error and "does not exist" in error_result.text
    assert isinstance(final.content[0], BetaTextBlock) and "does not exist" in final.content[0].text


def test_unanswered_tool_use_is_refused_like_the_api(api: ScriptedClaude) -> None:
    api.play("never played")
    messages: list[Any] = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "memory", "input": {"command": "view"}}
            ],
        },
        {"role": "user", "content": "no tool result here"},
    ]
    with pytest.raises(anthropic.BadRequestError) as raised:
        client_for(api).beta.messages.create(model=MODEL, max_tokens=5, messages=messages)

    assert "toolu_1" in str(raised.value) and "tool_result" in str(raised.value)
    assert api.remaining == 1  # a refused request consumes no turn


def test_exhausted_script_is_a_clear_400(api: ScriptedClaude) -> None:
    status, body = post(
        api, {"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
    )
    assert status == 400
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert "no turn left" in body["error"]["message"]
    assert api.errors == [body["error"]["message"]]


def test_unknown_thread_is_thread_not_found(api: ScriptedClaude) -> None:
    api.play("unused")
    status, body = post(
        api,
        {
            "model": MODEL,
            "max_tokens": 5,
            "messages": [{"role": "user", "content": "x"}],
            "thread": {"type": "continue", "previous_message_id": "msg_unknown"},
        },
    )
    assert status == 404
    assert body["error"]["details"] == {"error_code": "thread_not_found"}


def test_a_thread_message_cannot_be_continued_twice(api: ScriptedClaude) -> None:
    api.play("first", "second", "third")
    status, first = post(
        api,
        {
            "model": MODEL,
            "max_tokens": 5,
            "messages": [{"role": "user", "content": "a"}],
            "thread": {"type": "create"},
        },
    )
    assert status == 200
    follow = {
        "model": MODEL,
        "max_tokens": 5,
        "messages": [{"role": "user", "content": "b"}],
        "thread": {"type": "continue", "previous_message_id": first["id"]},
    }
    assert post(api, follow)[0] == 200
    assert api.histories[-1] == [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": [{"type": "text", "text": "first"}]},
        {"role": "user", "content": "b"},
    ]
    status, again = post(api, follow)
    assert status == 400 and again["error"]["details"] == {"error_code": "thread_already_continued"}


def test_malformed_requests_and_other_paths(api: ScriptedClaude) -> None:
    api.play("unused")
    assert post(api, {"max_tokens": 5, "messages": [{"role": "user", "content": "x"}]})[0] == 400
    assert post(api, {"model": MODEL, "messages": [{"role": "user", "content": "x"}]})[0] == 400
    assert post(api, {"model": MODEL, "max_tokens": 5, "messages": []})[0] == 400
    assert post(api, {"model": MODEL, "max_tokens": 5, "messages": [], "stream": True})[0] == 400
    status, body = post(api, {"model": MODEL}, path="/v1/complete")
    assert status == 404 and body["error"]["type"] == "not_found_error"
    assert api.remaining == 1


def test_a_failing_scripted_callable_is_reported_not_retried(api: ScriptedClaude) -> None:
    def broken(messages: list[dict[str, Any]]) -> str:
        raise KeyError("oops")

    api.play(broken)
    with pytest.raises(anthropic.BadRequestError, match="scripted turn failed"):
        client_for(api).messages.create(
            model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )
    assert len(api.requests) == 1


def test_stop_frees_the_port_and_base_url() -> None:
    server = ScriptedClaude(["hi"]).start()
    url = server.base_url
    server.stop()
    with pytest.raises(RuntimeError):
        _ = server.base_url
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url + "/v1/messages", data=b"{}", timeout=2)


def test_memory_call_and_reply_are_the_turns_they_name() -> None:
    assert memory_call("view", path="/memories") == Reply(
        tool_calls=[{"command": "view", "path": "/memories"}]
    )
    assert memory_call("delete", path="/memories/a.md", saying="Cleaning up.") == Reply(
        "Cleaning up.", [{"command": "delete", "path": "/memories/a.md"}]
    )
    assert reply("Done.") == Reply("Done.")


def test_its_clients_drive_the_real_tool_runner_sync_and_async(s3: Any) -> None:
    """``client()`` and ``async_client()`` are the SDK's own clients of the stand-in: each runner
    plays its turns through the real tool, and ``tool_results`` are what the tool answered."""
    create = memory_call("create", path="/memories/fact.md", file_text="the sky is green\n")
    read = memory_call("view", path="/memories/fact.md")
    messages: list[Any] = [{"role": "user", "content": "remember"}]
    with ScriptedClaude([create, read, reply("Stored.")]) as claude:
        runner = claude.client().beta.messages.tool_runner(
            model=MODEL, max_tokens=64, messages=messages, tools=[memory_tool(s3, "alice")]
        )
        assert isinstance(runner.until_done().content[0], BetaTextBlock)
        assert [result.text for result in claude.tool_results] == [
            "File created successfully at: /memories/fact.md",
            "Here's the content of /memories/fact.md with line numbers:\n     1\tthe sky is green",
        ]

    async def run_async(claude: ScriptedClaude) -> Any:
        runner = claude.async_client().beta.messages.tool_runner(
            model=MODEL,
            max_tokens=64,
            messages=messages,
            tools=[memory_tool(s3, "bob", kind=AsyncS3MemoryTool)],
        )
        return await runner.until_done()

    with ScriptedClaude([create, reply("Stored too.")]) as claude:
        final = asyncio.run(run_async(claude))
        assert isinstance(final.content[0], BetaTextBlock) and final.content[0].text == "Stored too."
        assert [result.text for result in claude.tool_results] == [
            "File created successfully at: /memories/fact.md"
        ]
        assert claude.api_keys == [API_KEY, API_KEY] and claude.remaining == 0


def test_its_clients_never_go_through_a_proxy(api: ScriptedClaude, monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy the environment names (a developer's, a CI runner's) would carry the requests to
    loopback elsewhere: the stand-in's clients ignore it."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    api.play("sync", "async")
    plain = api.client().messages.create(
        model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "x"}]
    )

    async def create() -> Any:
        return await api.async_client().messages.create(
            model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )

    assert plain.content[0].type == "text" and plain.content[0].text == "sync"
    answer = asyncio.run(create())
    assert answer.content[0].type == "text" and answer.content[0].text == "async"


def test_its_environment_points_a_default_client_at_it_with_nothing_of_the_users(
    api: ScriptedClaude, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-users-own")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "users-own-token")
    monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Team: users-own")
    for name, value in api.environment().items():
        if value is None:
            monkeypatch.delenv(name)
        else:
            monkeypatch.setenv(name, value)
    api.play("hi")
    anthropic.Anthropic(max_retries=0).messages.create(
        model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "x"}]
    )
    assert api.api_keys == [API_KEY]
    assert [value for value in api.headers[0].values() if "users-own" in value] == []
