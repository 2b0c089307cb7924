"""A real MCP client (the official Python SDK) driving `brainctl mcp` over
stdio (or, given a URL, over streamable HTTP) for cli/tests/mcp.rs.

argv: <brainctl> <json: server args> <json: env> <json: steps>
  or: <http://host:port/mcp> <json: []> <json: {"token": ...}> <json: steps>
Each step is ["list_tools"], ["call", tool, {args}], or ["parallel",
[[tool, {args}], ...]]: calls sent at once on the one session, as agents
do (their answers in order, as one step's "results"). Prints one JSON
document: the server's name and instructions, then per step what came back
(tool names; or is_error + structured content). Protocol errors are
reported per step, never swallowed.
"""
import asyncio
import json
import sys

import contextlib

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


@contextlib.asynccontextmanager
async def connect(command, args, env):
    """(read, write) streams: a spawned stdio server, or an HTTP endpoint."""
    if command.startswith("http"):
        client = create_mcp_http_client(
            headers={"Authorization": "Bearer " + env["token"]})
        async with client:
            async with streamable_http_client(command, http_client=client) as streams:
                yield streams[0], streams[1]
    else:
        params = StdioServerParameters(command=command, args=args, env=env)
        async with stdio_client(params) as (read, write):
            yield read, write


async def call(session, name, arguments):
    try:
        res = await session.call_tool(name, arguments)
        return {"tool": name, "is_error": bool(res.is_error),
                "result": res.structured_content}
    except Exception as e:  # a protocol error: the test shows it
        code = getattr(getattr(e, "error", None), "code", None)
        return {"tool": name, "protocol_error": repr(e), "code": code}


async def main():
    command, args, env, steps = sys.argv[1], *map(json.loads, sys.argv[2:5])
    out = {"steps": []}
    async with connect(command, args, env) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["server"] = init.server_info.name
            out["instructions"] = init.instructions
            for step in steps:
                if step[0] == "list_tools":
                    tools = (await session.list_tools()).tools
                    out["steps"].append({
                        "tools": {t.name: {"description": t.description,
                                           "input_schema": t.input_schema}
                                  for t in tools}})
                    continue
                if step[0] == "parallel":
                    results = await asyncio.gather(
                        *(call(session, name, arguments) for name, arguments in step[1]))
                    out["steps"].append({"results": list(results)})
                    continue
                _, name, arguments = step
                out["steps"].append(await call(session, name, arguments))
    print(json.dumps(out))


asyncio.run(main())
