"""A real MCP client (the official Python SDK) driving `brainctl mcp` over
stdio for cli/tests/mcp.rs.

argv: <brainctl> <json: server args> <json: env> <json: steps>
Each step is ["list_tools"] or ["call", tool, {args}]. Prints one JSON
document: the server's name and instructions, then per step what came back
(tool names; or is_error + structured content). Protocol errors are
reported per step, never swallowed.
"""
import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main():
    command, args, env, steps = sys.argv[1], *map(json.loads, sys.argv[2:5])
    params = StdioServerParameters(command=command, args=args, env=env)
    out = {"steps": []}
    async with stdio_client(params) as (read, write):
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
                _, name, arguments = step
                try:
                    res = await session.call_tool(name, arguments)
                    out["steps"].append({"tool": name, "is_error": bool(res.is_error),
                                         "result": res.structured_content})
                except Exception as e:  # a protocol error: the test shows it
                    out["steps"].append({"tool": name, "protocol_error": repr(e)})
    print(json.dumps(out))


asyncio.run(main())
