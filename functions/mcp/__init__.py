"""The MCP server at `/mcp`: the service's REST routes as tools for assistants (docs/mcp.md).

Each tool mirrors one REST route and calls it with the caller's own bearer token (functions/mcp/rest.py),
so that its metering, budget, rate limit, team isolation and error messages are the route's own:
`structuredContent` is the route's JSON body, the text content a one-line summary, and a 4xx or 5xx
answer a result with `isError` and the route's message.

Adding a tool is one declaration in `TOOLS` (functions/mcp/tools.py), nothing else:

    class VerifyClaim(Arguments):                  # the tool's arguments: its inputSchema
        claim: StrictStr = Field(min_length=1, max_length=2000)
        sources: list[StrictStr] | None = None

    ToolSpec(
        "verify_claim",                            # the tool's name
        "Is a claim supported by the literature?", # its description
        VerifyClaim,                               # the argument model
        "POST /v1/claims/verify",                  # the REST route it mirrors
        ClaimVerdictResponse,                      # the route's response model: the outputSchema
        lambda body: f"{body['verdict']} ({body['confidence']:.2f})",  # the summary line
    )

The call is built from the validated arguments: `{name}` parameters of the route fill its path, the
other arguments that are set are a POST's JSON body (`body=` shapes it when the names differ, as
`search_papers` does). `streamed=` names the body of the same route answering as Server-Sent Events,
used when the client asks for progress (`ask`). The route must answer a JSON object (a list goes in an
object: `{"references": [...]}`). tests/unit/mcp/test_tools.py pins the names; tests/e2e/test_mcp_server.py has a happy path per tool.
"""
