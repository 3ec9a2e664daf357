"""The agent function: one Claude conversation turn with the memory tool, for one user.

Handler string: ``s3memory.aws_lambda.agent_handler``. The event is

- ``{"user_id": "alice", "prompt": "..."}``, or ``{"user_id": "alice", "messages": [...]}`` (Messages
  API message params, ending with the user's turn);
- optionally ``"model"``, ``"max_tokens"``, ``"max_iterations"``, and the request parameters of
  ``event.PASS_THROUGH`` (``"system"``, ``"context_management"``, ``"betas"``, ``"temperature"``, ...).
  The same parameters can be set for every invocation in ``S3MEMORY_AGENT_PARAMS`` (a JSON object);
  the event's value of a parameter replaces the variable's. Any other key is refused.

The SDK's tool runner (``client.beta.messages.tool_runner``) drives ``S3MemoryTool`` over the user's
memory object of the container's runtime (``runtime``), the one the memory function uses, so a warm
container makes no KMS request and remembers the user's directories and quota usage. The event names
its user: invoking this function is trusted like the key (docs/deploy.md). The answer::

    {"content": [...final assistant content blocks...], "text": "<their text, joined>",
     "stop_reason": "end_turn", "usage": {"input_tokens": <sum>, "output_tokens": <sum>},
     "iterations": <model turns>, "stopped_early": null | "max_iterations" | "deadline"}

or ``{"error": "<clear message>"}`` for a malformed event, a misconfigured function, or a Messages API
failure; the handler never raises.

**Bounds.** At most ``max_iterations`` model turns (event, ``S3MEMORY_MAX_ITERATIONS``, default 10).
No Messages API request, retries included, is started with less than the safety margin left before
the Lambda deadline (``S3MEMORY_DEADLINE_MARGIN_SECONDS``, default 10), and each request's timeout
ends a second before the deadline. Either way the memory tool calls of the last turn have run (as
the SDK does at ``max_iterations``) and the answer says ``stopped_early``.

**Configuration.** ``ANTHROPIC_API_KEY``, or ``ANTHROPIC_API_KEY_SECRET_ARN`` naming a Secrets
Manager secret whose string is the key or ``{"ANTHROPIC_API_KEY": "..."}`` (read once per container);
``S3MEMORY_MODEL`` (default ``claude-sonnet-4-5``), ``S3MEMORY_MAX_TOKENS`` (default 4096);
``ANTHROPIC_BASE_URL``; the ``S3MEMORY_*`` storage and limit settings of ``s3memory.settings``.

The invocation record (``record``) adds the model, turns, tool calls, tokens and ``stopped_early``,
never content, user ids or keys; its metrics add ``Iterations``, ``InputTokens`` and ``OutputTokens``
(``command`` is ``agent``; ``outcome`` is ``ok``, ``max_iterations``, ``deadline`` or ``error``).

**Modules.** ``event``: the event's schema and checks (``parse_event``, ``PASS_THROUGH``);
``config``: the variables, their defaults and ``AgentConfig``; ``credentials``: the API key and the
container's Anthropic client; ``deadline``: the Lambda deadline and the client middleware that keeps
requests inside it; ``conversation``: the tool runner's turns and the answer; ``handler``: ``handle``
and ``agent_handler``, the error answers and what the record notes.
"""

from __future__ import annotations

from s3memory.aws_lambda.agent.handler import agent_handler, handle

__all__ = ["agent_handler", "handle"]
