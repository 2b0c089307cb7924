"""Buys a brainctl listing's key with nothing but the x402 Python SDK
(x402 2.25.0, its SVM `exact` client) and opens it.

Used by cli/tests/x402.rs against a seller's `marketplace listen --x402`
on the localnet: the node advertises devnet's CAIP-2 id (the only ids the
SDK accepts) while the client talks to the local validator.

Usage: buy.py --url BASE --listing ID --rpc URL --secret FILE [--mode M] [--tamper T]
  FILE holds the buyer's 64-byte keypair as a JSON array (solana-keygen).
  The client is given only the listing's URL (no ?buyer=), and keeps
  httpx's default timeout (5 s) in the modes that pay.
  --mode auto (default): the SDK's httpx client pays the 402 by itself; a
    202 (pending) is finished by polling its `poll` URL, as a user would.
  --mode bare: one plain GET (no payment), printing the 402's requirements
    (its header) and its body (v1's shape).
  --mode manual: the 402, then the SDK builds the payment for requirements
    changed by --tamper (none, amount: one unit less, mint: ANOTHER_MINT,
    given by --other-mint), and one paid GET; prints the header it sent.
  --mode v1: the SDK's v1 client pays the 402's body (X-PAYMENT).
Prints one JSON object on stdout.
"""

import argparse
import asyncio
import base64
import json

import httpx
import nacl.bindings
from solders.keypair import Keypair
from x402 import x402Client
from x402.http.clients.httpx import x402HttpxClient
from x402.http.utils import decode_payment_response_header
from x402.http.x402_http_client import x402HTTPClient
from x402.schemas import PaymentRequired, PaymentRequiredV1
from x402.mechanisms.svm import KeypairSigner
from x402.mechanisms.svm.exact import register_exact_svm_client

DEVNET = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"


def settlement(header):
    """A settlement header, decoded to what the tests read."""
    s = decode_payment_response_header(header)
    return {"success": s.success, "transaction": s.transaction,
            "network": s.network, "payer": s.payer}


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--listing", required=True)
    p.add_argument("--rpc", required=True)
    p.add_argument("--secret", required=True)
    p.add_argument("--mode", default="auto", choices=["auto", "bare", "manual", "v1"])
    p.add_argument("--tamper", default="none", choices=["none", "amount", "mint"])
    p.add_argument("--other-mint")
    a = p.parse_args()
    kp = Keypair.from_bytes(bytes(json.load(open(a.secret))))
    url = f"{a.url}/x402/listings/{a.listing}"
    if a.mode == "bare":
        async with httpx.AsyncClient(timeout=30) as http:
            r = await http.get(url)
        header = r.headers.get("PAYMENT-REQUIRED")
        required = json.loads(base64.b64decode(header)) if header else None
        print(json.dumps({"status": r.status_code, "required": required, "body": r.json()}))
        return
    client = x402Client()
    register_exact_svm_client(client, KeypairSigner(kp), networks=DEVNET, rpc_url=a.rpc)
    # the default controls cap a payment at one dollar of known assets
    client.set_spend_controls(False)
    sent = None
    polls = 0
    if a.mode == "v1":
        async with httpx.AsyncClient() as http:
            first = await http.get(url)
            required = PaymentRequiredV1.model_validate(first.json())
            payload = await client.create_payment_payload(required)
            sent = x402HTTPClient(client).encode_payment_signature_header(payload)
            r = await http.get(url, headers=sent)
    elif a.mode == "manual":
        async with httpx.AsyncClient(timeout=120) as http:
            first = await http.get(url)
            required = json.loads(base64.b64decode(first.headers["PAYMENT-REQUIRED"]))
            if a.tamper == "amount":
                required["accepts"][0]["amount"] = str(int(required["accepts"][0]["amount"]) - 1)
            elif a.tamper == "mint":
                required["accepts"][0]["asset"] = a.other_mint
            payload = await client.create_payment_payload(PaymentRequired.model_validate(required))
            headers = x402HTTPClient(client).encode_payment_signature_header(payload)
            sent = headers
            r = await http.get(url, headers=headers)
    else:
        async with x402HttpxClient(client) as http:
            r = await http.get(url)
    first_status = r.status_code
    out = {"status": r.status_code, "body": r.json(), "sent": sent}
    header = r.headers.get("PAYMENT-RESPONSE") or r.headers.get("X-PAYMENT-RESPONSE")
    if header:
        out["settle"] = settlement(header)
    # pending: the payment's signature came back; its poll URL answers the
    # release once `listen` made it
    if first_status == 202:
        # (a poll answers within the endpoint's window; a loaded machine
        # may add a second or two, so the poll allows more than httpx's 5 s)
        async with httpx.AsyncClient(timeout=15.0) as http:
            for _ in range(240):
                polls += 1
                p = await http.get(out["body"]["poll"])
                if p.status_code == 200 and p.json().get("status") == "released":
                    out["body"] = p.json()
                    # the release's settlement, as the paying answer's
                    final = p.headers.get("PAYMENT-RESPONSE")
                    if final:
                        out["settle"] = settlement(final)
                    break
                await asyncio.sleep(0.5)
        out["status"] = 200 if out["body"].get("status") == "released" else first_status
    out["first_status"] = first_status
    out["polls"] = polls
    envelope = (out["body"] or {}).get("envelope") or {}
    if envelope.get("sealed_key_b64"):
        # the key is sealed to the X25519 form of the payer's Ed25519 key
        secret = bytes(kp)
        curve_sk = nacl.bindings.crypto_sign_ed25519_sk_to_curve25519(secret)
        curve_pk = nacl.bindings.crypto_sign_ed25519_pk_to_curve25519(bytes(kp.pubkey()))
        key = nacl.bindings.crypto_box_seal_open(
            base64.b64decode(envelope["sealed_key_b64"]), curve_pk, curve_sk
        )
        out["key_hex"] = key.hex()
    print(json.dumps(out))


asyncio.run(main())
