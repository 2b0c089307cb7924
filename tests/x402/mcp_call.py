"""Pays for brainctl MCP tool calls with the x402 Python SDK (x402 2.25.0,
its SVM `exact` client and its MCP binding's meta keys) over the MCP SDK's
streamable HTTP transport (mcp 2.3.0: the x402 package's own MCP session
helpers do not run against it, so the binding is driven by hand, as its
docs describe).

Used by cli/tests/x402.rs against `brainctl mcp --http` with a price list
on the localnet (the node advertises devnet's CAIP-2 id, the only ids the
SDK accepts, while the client talks to the local validator).

Usage: mcp_call.py --url URL --token T --rpc RPC --secret FILE
                   --tool NAME --args JSON --free-tool NAME --free-args JSON
Steps, each reported in one JSON object on stdout:
  tools:    the tools listed, with their descriptions (a priced one says so);
  unpaid:   the priced tool without payment (the requirements come back);
  paid:     the SDK pays the requirements, the call runs;
  replayed: the same payment again (refused: the call ran once);
  tampered: a payment of one unit less than asked (refused);
  wrong_mint: a payment in another mint (--other-mint; refused);
  free:     the free tool, no payment.
With --replay-meta JSON: one call of the priced tool with that payment
meta (from an earlier run's "payment_meta"), reported as "replayed".
"""

import argparse
import asyncio
import json

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from solders.keypair import Keypair
from x402 import x402Client
from x402.mechanisms.svm import KeypairSigner
from x402.mechanisms.svm.exact import register_exact_svm_client
from x402.schemas import PaymentRequired

DEVNET = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
PAYMENT = "x402/payment"
RESPONSE = "x402/payment-response"


def report(r):
    """What a tool call answered."""
    text = r.content[0].text if r.content else None
    return {
        "is_error": bool(r.is_error),
        "structured": r.structured_content,
        "text": text,
        "meta": r.meta,
    }


def required_of(r):
    """The PaymentRequired a refused call carries (structured, else text)."""
    return PaymentRequired.model_validate(
        r.structured_content or json.loads(r.content[0].text))


async def main():
    p = argparse.ArgumentParser()
    for flag in ["--url", "--token", "--rpc", "--secret", "--tool", "--args",
                 "--free-tool", "--free-args", "--other-mint", "--replay-meta"]:
        p.add_argument(flag, required=flag not in ("--other-mint", "--replay-meta"))
    a = p.parse_args()
    kp = Keypair.from_bytes(bytes(json.load(open(a.secret))))
    pay = x402Client()
    register_exact_svm_client(pay, KeypairSigner(kp), networks=DEVNET, rpc_url=a.rpc)
    pay.set_spend_controls(False)
    args = json.loads(a.args)
    out = {"payer": str(kp.pubkey())}
    http = create_mcp_http_client(headers={"Authorization": "Bearer " + a.token})
    async with http:
        async with streamable_http_client(a.url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                if a.replay_meta:
                    out["replayed"] = report(await session.call_tool(
                        a.tool, args, meta=json.loads(a.replay_meta)))
                    print(json.dumps(out, default=str))
                    return
                listed = (await session.list_tools()).tools
                out["tools"] = {t.name: t.description for t in listed}
                unpaid = await session.call_tool(a.tool, args)
                out["unpaid"] = report(unpaid)
                required = required_of(unpaid)
                payload = await pay.create_payment_payload(required)
                meta = {PAYMENT: payload.model_dump(by_alias=True, exclude_none=True)}
                out["payment_meta"] = meta
                out["paid"] = report(await session.call_tool(a.tool, args, meta=meta))
                out["replayed"] = report(await session.call_tool(a.tool, args, meta=meta))
                # the SDK builds what it is asked to: requirements changed
                # after the 402, then sent as if they were the node's
                for name, change in [("tampered", {"amount": str(int(required.accepts[0].amount) - 1)}),
                                     ("wrong_mint", {"asset": a.other_mint})]:
                    if name == "wrong_mint" and not a.other_mint:
                        continue
                    changed = required.model_copy(deep=True)
                    changed.accepts[0] = changed.accepts[0].model_copy(update=change)
                    forged = await pay.create_payment_payload(changed)
                    forged_meta = forged.model_dump(by_alias=True, exclude_none=True)
                    # claimed as the node's own requirements
                    forged_meta["accepted"] = payload.model_dump(
                        by_alias=True, exclude_none=True)["accepted"]
                    out[name] = report(await session.call_tool(
                        a.tool, args, meta={PAYMENT: forged_meta}))
                out["free"] = report(await session.call_tool(
                    a.free_tool, json.loads(a.free_args)))
    print(json.dumps(out, default=str))


asyncio.run(main())
