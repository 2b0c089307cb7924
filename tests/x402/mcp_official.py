"""Pays for brainctl MCP tool calls with the official x402 MCP client
(`x402.mcp.x402MCPClient`, x402 2.25.0, auto-payment with its SVM `exact`
scheme) over the MCP SDK's streamable HTTP transport (mcp 2.3.0).

x402MCPClient drives the binding itself: it calls the tool, reads the
payment requirements from the error result, pays and calls again with the
payment in `_meta`. It takes "an MCP client" whose `call_tool` receives the
request's params (`{name, arguments, _meta}`, as the TypeScript MCP SDK's
`Client.callTool` does); mcp's Python `ClientSession.call_tool` takes a name
and arguments instead, so `Session` below forwards one to the other (and
reads the result's fields under the names x402MCPClient reads). Nothing in
the payment flow is ours.

Usage: mcp_official.py --url URL [--token T] --rpc RPC --secret FILE
                       --tool NAME --args JSON [--bad-args JSON]
                       [--free-tool NAME]
Without --token, no Authorization header is sent (a stranger at the
public paid endpoint). Prints one JSON object: `tools` (the names the
server lists), `paid` (the call with --args), with --bad-args `bad` (the
same tool with arguments that do not read), and with --free-tool `free`
(a call of that tool, unpaid).
"""

import argparse
import asyncio
import datetime
import json
import types

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from solders.keypair import Keypair
from x402 import x402Client
from x402.mcp import x402MCPClient
from x402.mechanisms.svm import KeypairSigner
from x402.mechanisms.svm.exact import register_exact_svm_client

DEVNET = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"


class Session:
    """An MCP client as x402MCPClient calls one, over a ClientSession."""

    def __init__(self, session):
        self.session = session

    async def call_tool(self, params, read_timeout_seconds=None, **_):
        # x402MCPClient gives a timedelta; this ClientSession takes seconds
        timeout = read_timeout_seconds
        if isinstance(timeout, datetime.timedelta):
            timeout = timeout.total_seconds()
        r = await self.session.call_tool(
            params["name"], params.get("arguments"),
            read_timeout_seconds=timeout, meta=params.get("_meta"))
        result = types.SimpleNamespace(
            content=[c.model_dump(by_alias=True, exclude_none=True) for c in r.content],
            isError=bool(r.is_error),
            structuredContent=r.structured_content,
        )
        setattr(result, "_meta", r.meta or {})
        return result


def report(r):
    """What a call through x402MCPClient answered."""
    out = {"is_error": bool(getattr(r, "is_error", False))}
    content = getattr(r, "content", None) or []
    out["text"] = content[0].get("text") if content and isinstance(content[0], dict) else None
    response = getattr(r, "payment_response", None)
    out["payment_response"] = (response.model_dump(by_alias=True, exclude_none=True)
                               if response is not None else None)
    out["payment_made"] = bool(getattr(r, "payment_made", False))
    return out


async def main():
    p = argparse.ArgumentParser()
    for flag in ["--url", "--token", "--rpc", "--secret", "--tool", "--args", "--bad-args", "--free-tool"]:
        p.add_argument(flag, required=flag not in ("--bad-args", "--token", "--free-tool"))
    a = p.parse_args()
    kp = Keypair.from_bytes(bytes(json.load(open(a.secret))))
    pay = x402Client()
    register_exact_svm_client(pay, KeypairSigner(kp), networks=DEVNET, rpc_url=a.rpc)
    pay.set_spend_controls(False)
    out = {"payer": str(kp.pubkey())}
    headers = {"Authorization": "Bearer " + a.token} if a.token else {}
    http = create_mcp_http_client(headers=headers)
    async with http:
        async with streamable_http_client(a.url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
                if a.free_tool:
                    try:
                        r = await session.call_tool(a.free_tool, {})
                        text = r.content[0].text if r.content and hasattr(r.content[0], "text") else None
                        out["free"] = {"is_error": bool(r.is_error), "text": text}
                    except Exception as e:  # refused as a protocol error
                        out["free"] = {"raised": type(e).__name__, "message": str(e)}
                client = x402MCPClient(Session(session), pay, auto_payment=True)
                out["paid"] = report(await client.call_tool(a.tool, json.loads(a.args)))
                if a.bad_args:
                    try:
                        out["bad"] = report(await client.call_tool(a.tool, json.loads(a.bad_args)))
                    except Exception as e:  # the client's own refusal
                        out["bad"] = {"raised": type(e).__name__, "message": str(e)}
    print(json.dumps(out, default=str))


asyncio.run(main())
