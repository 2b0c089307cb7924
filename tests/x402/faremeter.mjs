// Buys a brainctl listing's key with Faremeter's x402 client
// (@faremeter/fetch with @faremeter/payment-solana's exact scheme and a
// local @faremeter/wallet-solana wallet), given only the listing's URL.
//
// Used by cli/tests/x402.rs against a seller's `marketplace listen --x402`
// on the localnet (devnet's CAIP-2 id advertised, the client talking to
// the local validator with --rpc).
//
// Usage: node faremeter.mjs --url BASE --listing ID --mint MINT --rpc URL --secret FILE
//   FILE holds the buyer's 64-byte keypair as a JSON array (solana-keygen).
// A 202 (pending) is finished by polling its `poll` URL. Prints one JSON
// object on stdout: the first status, the final status and body.

import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { wrap } from "@faremeter/fetch";
import { createPaymentHandler } from "@faremeter/payment-solana/exact";
import { createLocalWallet } from "@faremeter/wallet-solana";

const { values: a } = parseArgs({
  options: {
    url: { type: "string" },
    listing: { type: "string" },
    mint: { type: "string" },
    rpc: { type: "string" },
    secret: { type: "string" },
  },
});
const secret = new Uint8Array(JSON.parse(readFileSync(a.secret, "utf8")));
const wallet = await createLocalWallet("devnet", secret);
const pay = wrap(fetch, {
  handlers: [createPaymentHandler(wallet, a.mint, a.rpc)],
  returnPaymentFailure: true,
});
const r = await pay(`${a.url}/x402/listings/${a.listing}`, { method: "GET" });
const out = { first_status: r.status, status: r.status, payer: wallet.publicKey };
out.body = await r.json().catch(() => null);
if (r.status === 202) {
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
