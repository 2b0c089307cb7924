// Buys a brainctl listing's key with nothing but the official TypeScript
// x402 client (@x402/fetch 2.27.0 with @x402/svm 2.27.0's exact scheme),
// given only the listing's URL, with fetch's default timeouts.
//
// Used by cli/tests/x402.rs against a seller's `marketplace listen --x402`
// on the localnet: the node advertises devnet's CAIP-2 id while the client
// talks to the local validator (--rpc).
//
// Usage: node buy.mjs --url BASE --listing ID --rpc URL --secret FILE [--retry]
//   FILE holds the buyer's 64-byte keypair as a JSON array (solana-keygen).
// A 202 (pending) is finished by polling its `poll` URL, as the endpoint's
// documentation says; with --retry, as a client that does not follow
// `poll` does: by asking again through the same paying fetch (each time it
// builds and signs a new payment), once a second, until it gets the key.
// `statuses` lists every answer's status. Prints one JSON object on stdout: the first status,
// the final status and body (its sealed envelope, which the test opens
// with the buyer's key), and the settlement header decoded.

import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { createKeyPairSignerFromBytes } from "@solana/kit";
import { decodePaymentResponseHeader, wrapFetchWithPaymentFromConfig } from "@x402/fetch";
import { ExactSvmScheme } from "@x402/svm";

const DEVNET = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";

const { values: a } = parseArgs({
  options: {
    url: { type: "string" },
    listing: { type: "string" },
    rpc: { type: "string" },
    secret: { type: "string" },
    retry: { type: "boolean", default: false },
  },
});
const signer = await createKeyPairSignerFromBytes(
  new Uint8Array(JSON.parse(readFileSync(a.secret, "utf8"))),
);
// the default spend controls take only well-known assets (USDC) up to a
// cap: a listing in another mint is paid once the buyer allows it
const pay = wrapFetchWithPaymentFromConfig(fetch, {
  schemes: [{ network: DEVNET, client: new ExactSvmScheme(signer, { rpcUrl: a.rpc }) }],
  spendControls: false,
});
const url = `${a.url}/x402/listings/${a.listing}`;
let r = await pay(url, { method: "GET" });
const out = { first_status: r.status, status: r.status, payer: signer.address, statuses: [r.status] };
out.body = await r.json();
const settled = (res) => {
  const header = res.headers.get("PAYMENT-RESPONSE");
  if (header) {
    out.settle = decodePaymentResponseHeader(header);
  }
};
settled(r);
out.first_settle = out.settle;
for (let i = 0; a.retry && r.status === 202 && i < 60; i += 1) {
  await new Promise((done) => setTimeout(done, 1000));
  r = await pay(url, { method: "GET" });
  out.statuses.push(r.status);
  out.status = r.status;
  out.body = await r.json();
  settled(r);
}
if (!a.retry && r.status === 202) {
  for (let i = 0; i < 240; i += 1) {
    const p = await fetch(out.body.poll);
    const body = await p.json();
    if (p.status === 200 && body.status === "released") {
      out.status = 200;
      out.body = body;
      break;
    }
    await new Promise((done) => setTimeout(done, 500));
  }
}
console.log(JSON.stringify(out));
