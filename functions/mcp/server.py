"""The MCP server: the tools of functions/mcp/tools.py and a job's artifacts as resources, each call
answered by the REST route it mirrors (functions/mcp/rest.py), with the caller's own credentials.

- `tools/list`: every declaration, its `inputSchema` (the argument model) and `outputSchema` (the route's
  response model, serialization form).
- `tools/call`: the arguments validated (unknown or invalid ones: a result with `isError` naming them),
  the REST call made, and its answer turned into a result: a 2xx JSON object is `structuredContent`, with
  the declaration's summary as text; a 4xx or 5xx is `isError` with the route's own message. Nothing a
  route answers becomes a protocol error or a traceback.
- Progress: when the request carries a progressToken, a notification as the call starts and as it ends;
  a tool whose route streams (`ask`: `POST /v1/query` with `options.stream`) sends one per event.
- `resources/templates/list` and `resources/read`: `research://jobs/{job_id}/{artifact}` is
  `GET /api/agent/results/{job_id}/artifacts/{artifact}`; an error is the protocol's (a read has no
  `isError`), with the route's message.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any
from urllib.parse import quote

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from functions.common.errors import FetchError
from functions.common.observability import get_logger
from functions.mcp.rest import RestCall, RestClient, RestReply, forwarded
from functions.mcp.tools import TOOLS, TOOLS_BY_NAME, ToolSpec

logger = get_logger("mcp")

SERVER_NAME = "evidence-research"
ARTIFACT_TEMPLATE = "research://jobs/{job_id}/{artifact}"
_ARTIFACT_URI = re.compile(r"^research://jobs/(?P<job_id>[^/]+)/(?P<artifact>[^/]+)$")
_TEXT_TYPES = ("text/", "application/x-bibtex", "application/x-research-info-systems", "application/json")
_RESOURCE_NOT_FOUND = -32002  # the MCP spec's code for a resource that does not exist

RestFor = Callable[[], RestClient]  # the REST client of the serving process, looked up per call
Context = ServerRequestContext[Any, Any]


def caller_headers(ctx: Context) -> dict[str, str]:
    """What of the MCP request being served (the transport's starlette Request) its REST calls carry."""
    headers = getattr(ctx.request, "headers", None)
    client = getattr(ctx.request, "client", None)
    return forwarded(headers if headers is not None else {}, getattr(client, "host", None))


def progress_token(ctx: Context) -> str | int | None:
    meta: Mapping[str, Any] = ctx.meta or {}
    token = meta.get("progress_token", meta.get("progressToken"))
    return token if isinstance(token, (str, int)) else None


def body_message(body: Any) -> str | None:
    """The message of an error body, whatever its face's format (functions/common/faces/)."""
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    message = error.get("message") if isinstance(error, dict) else None
    message = message or body.get("message") or body.get("detail") or error
    return message if isinstance(message, str) and message else None


def rest_message(reply: RestReply) -> str:
    """`HTTP <status>: <the route's message>`."""
    try:
        body = reply.json()
    except ValueError:
        body = None
    message = body_message(body)
    if message is None:
        message = json.dumps(body) if body is not None else reply.body.decode("utf-8", "replace")[:500]
    return f"HTTP {reply.status}: {message}"


def error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def invalid_arguments(tool: ToolSpec, exc: ValidationError) -> types.CallToolResult:
    problems = [
        f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
        for error in exc.errors()
    ]
    return error_result(f"Invalid arguments for {tool.name}: " + "; ".join(problems))


def tool_result(tool: ToolSpec, status: int, body: Any) -> types.CallToolResult:
    """A 2xx route's JSON object as the tool's result."""
    if not isinstance(body, dict):
        return error_result(f"{tool.route} answered HTTP {status} without a JSON object")
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=tool.summary(body))], structured_content=body
    )


class ToolCaller:
    """One tool call: the REST call made with the caller's headers, progress sent as it goes."""

    def __init__(self, ctx: Context, tool: ToolSpec, rest: RestClient) -> None:
        self.ctx = ctx
        self.tool = tool
        self.rest = rest
        self.headers = caller_headers(ctx)
        self.token = progress_token(ctx)
        self.steps = 0

    async def progress(self, message: str) -> None:
        if self.token is None:
            return
        self.steps += 1
        await self.ctx.session.report_progress(float(self.steps), message=message)

    async def __call__(self, call: RestCall) -> types.CallToolResult:
        await self.progress(f"{self.tool.route}: started")
        try:
            if self.token is not None and self.tool.streamed is not None and isinstance(call.json, dict):
                result = await self._streamed(
                    RestCall(call.method, call.path, json=self.tool.streamed(call.json))
                )
            else:
                reply = await self.rest.send(call, self.headers)
                result = self._answer(reply)
        except FetchError as exc:
            logger.warning("mcp tool could not reach its route", tool=self.tool.name, error=str(exc))
            return error_result(f"{self.tool.route} could not be reached: {exc}")
        await self.progress(f"{self.tool.route}: done")
        return result

    def _answer(self, reply: RestReply) -> types.CallToolResult:
        if not reply.ok:
            return error_result(rest_message(reply))
        try:
            body = reply.json()
        except ValueError:
            return error_result(f"{self.tool.route} answered HTTP {reply.status} without JSON")
        return tool_result(self.tool, reply.status, body)

    async def _streamed(self, call: RestCall) -> types.CallToolResult:
        """The route's Server-Sent Events, each a progress notification; `final` is the result and
        `error` (the route's error body) an error result."""
        async with self.rest.stream(call, self.headers) as reply:
            if reply.status >= 300 or reply.content_type != "text/event-stream":
                return self._answer(RestReply(reply.status, reply.content_type, await reply.read()))
            async for event in reply.events():
                if event.event == "final":
                    return tool_result(self.tool, reply.status, event.data)
                if event.event == "error":
                    return error_result(body_message(event.data) or json.dumps(event.data))
                await self.progress(_event_message(event.event, event.data))
        return error_result(f"{self.tool.route} ended its stream without an answer")


def _event_message(name: str, data: Any) -> str:
    if name == "trace_event" and isinstance(data, dict):
        what = data.get("stage") or data.get("event") or data.get("type") or "trace"
        return f"{what}"
    if name == "answer_delta" and isinstance(data, dict):
        return f"writing: {str(data.get('text', ''))[:80]}"
    if name == "citation" and isinstance(data, dict):
        return f"{len(data.get('citations', []))} citations verified"
    return name


@cache
def tool_listing() -> types.ListToolsResult:
    """Every tool with its schemas, built once: generating the schemas takes longer than most calls."""
    return types.ListToolsResult(
        tools=[
            types.Tool(
                name=tool.name,
                description=tool.description,
                input_schema=tool.input_schema(),
                output_schema=tool.output_schema(),
                annotations=types.ToolAnnotations(read_only_hint=tool.method == "GET"),
            )
            for tool in TOOLS
        ]
    )


@cache
def tool_input_schemas() -> dict[str, dict[str, Any]]:
    return {tool.name: tool.input_schema for tool in tool_listing().tools}


def artifact_call(uri: str) -> RestCall:
    match = _ARTIFACT_URI.match(uri)
    if match is None:
        raise MCPError(
            _RESOURCE_NOT_FOUND, f"not an artifact: {uri} (expected {ARTIFACT_TEMPLATE})", {"uri": uri}
        )
    job_id, artifact = (quote(match[name], safe="") for name in ("job_id", "artifact"))
    return RestCall("GET", f"/api/agent/results/{job_id}/artifacts/{artifact}")


def artifact_contents(uri: str, reply: RestReply) -> types.ReadResourceResult:
    if not reply.ok:
        code = _RESOURCE_NOT_FOUND if reply.status == 404 else types.INVALID_PARAMS
        raise MCPError(code, rest_message(reply), {"uri": uri})
    mime = reply.content_type or "application/octet-stream"
    if mime.startswith(_TEXT_TYPES) or mime.endswith("+json"):
        text = types.TextResourceContents(uri=uri, mime_type=mime, text=reply.body.decode("utf-8", "replace"))
        return types.ReadResourceResult(contents=[text])
    blob = types.BlobResourceContents(uri=uri, mime_type=mime, blob=base64.b64encode(reply.body).decode())
    return types.ReadResourceResult(contents=[blob])


def build_server(rest_for: RestFor) -> Server[Any]:
    """The MCP server whose calls go through `rest_for()`'s REST client."""

    async def list_tools(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return tool_listing()

    async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = TOOLS_BY_NAME.get(params.name)
        if tool is None:
            return error_result(f"Unknown tool {params.name!r}; the tools are {', '.join(TOOLS_BY_NAME)}")
        try:
            arguments = tool.arguments.model_validate(params.arguments or {})
        except ValidationError as exc:
            return invalid_arguments(tool, exc)
        return await ToolCaller(ctx, tool, rest_for())(tool.call(arguments))

    async def list_templates(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(
            uri_template=ARTIFACT_TEMPLATE,
            name="job-artifact",
            description="A research job's artifact: report.md, bibliography.bib, references.ris, "
            "references.csl.json, annotated_bibliography.md, ...",
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def list_resources(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])  # a job's artifacts are read by their URI

    async def read_resource(
        ctx: Context, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            reply = await rest_for().send(artifact_call(uri), caller_headers(ctx))
        except FetchError as exc:
            raise MCPError(
                types.INTERNAL_ERROR, f"the artifact route could not be reached: {exc}", {"uri": uri}
            ) from None
        return artifact_contents(uri, reply)

    return Server(
        SERVER_NAME,
        version="1",
        instructions="Evidence-grounded research: every answer cites page-located, verified quotes. "
        "Search papers, read one, ask a question, or run a research job and read its artifacts.",
        # the current revision checks a call's Mcp-Param headers against the tool's input schema
        get_tool_input_schema=lambda name: tool_input_schemas().get(name),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resource_templates=list_templates,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )
