// The shop page's script: lists what the seller's x402 endpoint sells and
// buys a listing's key with a browser wallet (Wallet Standard), through the
// official x402 client (@x402/fetch with @x402/svm's exact scheme).
//
// A browser wallet never hands out its secret key, so the key is not sealed
// to the payer: the page makes an X25519 key for the purchase (kept in this
// browser's storage, so a reload or a second try opens the one payment)
// and asks for the listing with `?buyer_x25519_pubkey=`; the payment then
// carries the protocol's full buy memo naming that key, signed by the payer,
// and `listen` seals the key to it. The full memo costs more compute than
// the client's default limit allows, so the page sets the limit it needs
// before the wallet signs (a wallet may raise it further, as Phantom does
// for its guards).
//
// The page trusts neither the seller's server nor storage for the bytes:
// it opens the sealed key itself, decrypts the blob (AES-256-GCM), and
// checks the plaintext's SHA-256 against the bundle hash the seller's list
// memo states on chain (read from the public RPC) before offering the file.
//
// Bundled for the browser by localnet/install (esbuild, versions pinned by
// package-lock.json).

import {
  address,
  getBase58Decoder,
  getBase58Encoder,
  getCompiledTransactionMessageDecoder,
  getCompiledTransactionMessageEncoder,
  getTransactionDecoder,
  getTransactionEncoder,
} from "@solana/kit";
import { getWallets } from "@wallet-standard/app";
import { decodePaymentResponseHeader, wrapFetchWithPaymentFromConfig } from "@x402/fetch";
import { ExactSvmScheme } from "@x402/svm";
import { blake2b } from "@noble/hashes/blake2b";
import nacl from "tweetnacl";

const COMPUTE_BUDGET = "ComputeBudget111111111111111111111111111111";
const SET_COMPUTE_UNIT_LIMIT = 2;
// the transfer and the compute budget's own instructions (Token-2022's
// checked transfer is the dearest), and SPL Memo's cost per byte
const BASE_UNITS = 40_000;
const UNITS_PER_MEMO_BYTE = 400;
const MEMO_PREFIX = "brainctl-marketplace/v1";
// Wallet Standard's chain names for the CAIP-2 networks x402 advertises
const CHAINS = {
  "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1": "solana:devnet",
  "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp": "solana:mainnet",
  "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z": "solana:testnet",
};

const b58 = { encode: (bytes) => getBase58Decoder().decode(bytes), decode: (s) => getBase58Encoder().encode(s) };
const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
const b64decode = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
const b64encode = (bytes) => btoa(String.fromCharCode(...bytes));
const $ = (id) => document.getElementById(id);

function say(text, state) {
  $("status").textContent = text;
  if (state) document.body.dataset.state = state;
}

class ShopError extends Error {}

// --- the wallet -----------------------------------------------------------

let wallet = null;
let account = null;

function usable(w) {
  return "standard:connect" in w.features && "solana:signTransaction" in w.features;
}

function watchWallets() {
  const { get, on } = getWallets();
  const pick = () => {
    if (wallet) return;
    wallet = get().find(usable) ?? null;
    if (wallet) {
      $("wallet").textContent = wallet.name;
      $("connect").disabled = false;
    }
  };
  on("register", pick);
  pick();
}

async function connect() {
  if (!wallet) throw new ShopError("no wallet found: install a Solana wallet (Phantom, Solflare, Backpack) and reload");
  if (account) return account;
  const { accounts } = await wallet.features["standard:connect"].connect();
  account = accounts[0];
  if (!account) throw new ShopError(`${wallet.name} shared no account`);
  $("wallet").textContent = `${wallet.name}: ${account.address}`;
  $("connect").textContent = "Connected";
  $("connect").disabled = true;
  return account;
}

// The compiled message `tx` with its compute-unit limit set to `units`.
function withComputeLimit(tx, units) {
  const compiled = getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
  const program = compiled.staticAccounts.indexOf(COMPUTE_BUDGET);
  const data = new Uint8Array(5);
  data[0] = SET_COMPUTE_UNIT_LIMIT;
  new DataView(data.buffer).setUint32(1, units, true);
  let found = false;
  const instructions = compiled.instructions.map((ix) => {
    if (ix.programAddressIndex === program && ix.data?.[0] === SET_COMPUTE_UNIT_LIMIT) {
      found = true;
      return { ...ix, data };
    }
    return ix;
  });
  if (!found) return tx;
  const messageBytes = getCompiledTransactionMessageEncoder().encode({ ...compiled, instructions });
  const signatures = Object.fromEntries(Object.keys(tx.signatures).map((k) => [k, null]));
  return { ...tx, messageBytes, signatures };
}

// A @solana/kit signer over the connected Wallet Standard account: it sets
// the compute limit the memo needs, then the wallet signs (and may modify)
// the transaction.
function walletSigner(chain, units) {
  return {
    address: address(account.address),
    async modifyAndSignTransactions(transactions) {
      const signed = [];
      for (const tx of transactions) {
        const ready = withComputeLimit(tx, units);
        const wire = new Uint8Array(getTransactionEncoder().encode(ready));
        const [out] = await wallet.features["solana:signTransaction"].signTransaction({
          account,
          transaction: wire,
          chain,
        });
        const back = getTransactionDecoder().decode(out.signedTransaction);
        signed.push({ ...back, lifetimeConstraint: tx.lifetimeConstraint });
      }
      return signed;
    },
  };
}

// --- opening what was bought ----------------------------------------------

// libsodium's crypto_box_seal_open: ephemeral key ‖ box, the nonce
// BLAKE2b-192(ephemeral ‖ recipient).
function sealOpen(sealed, keyPair) {
  const ephemeral = sealed.subarray(0, 32);
  const nonceInput = new Uint8Array(64);
  nonceInput.set(ephemeral, 0);
  nonceInput.set(keyPair.publicKey, 32);
  const nonce = blake2b(nonceInput, { dkLen: 24 });
  return nacl.box.open(sealed.subarray(32), nonce, ephemeral, keyPair.secretKey);
}

async function rpcCall(rpc, method, params) {
  const r = await fetch(rpc, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = await r.json();
  if (body.error) throw new ShopError(`RPC ${method}: ${body.error.message}`);
  return body.result;
}

// The bundle hash the seller's list memo states on chain for `listing`.
async function listedHash(rpc, listing) {
  const tx = await rpcCall(rpc, "getTransaction", [
    listing.list_signature,
    { encoding: "jsonParsed", maxSupportedTransactionVersion: 0, commitment: "confirmed" },
  ]);
  if (!tx || tx.meta?.err) throw new ShopError(`the listing's list transaction ${listing.list_signature} is not on chain`);
  const signers = tx.transaction.message.accountKeys.filter((k) => k.signer).map((k) => k.pubkey);
  if (!signers.includes(listing.seller)) throw new ShopError("the list transaction is not signed by the seller");
  const want = `${MEMO_PREFIX}:list:${listing.manifest_id}:`;
  for (const ix of tx.transaction.message.instructions) {
    if (ix.program === "spl-memo" && typeof ix.parsed === "string" && ix.parsed.startsWith(want)) {
      return ix.parsed.slice(want.length);
    }
  }
  throw new ShopError("the list transaction carries no list memo for this listing");
}

async function openBundle(catalog, listing, release, keyPair) {
  const envelope = release.envelope;
  if (envelope?.listing_id !== listing.listing_id) throw new ShopError("the release names another listing");
  const key = sealOpen(b64decode(envelope.sealed_key_b64), keyPair);
  if (!key) throw new ShopError("the sealed key does not open with this purchase's key");
  const blob = new Uint8Array(await (await fetch(listing.blob)).arrayBuffer());
  const aes = await crypto.subtle.importKey("raw", key, "AES-GCM", false, ["decrypt"]);
  let plain;
  try {
    plain = new Uint8Array(
      await crypto.subtle.decrypt({ name: "AES-GCM", iv: blob.subarray(0, 12) }, aes, blob.subarray(12)),
    );
  } catch {
    throw new ShopError("the key does not decrypt the listed blob");
  }
  const digest = hex(new Uint8Array(await crypto.subtle.digest("SHA-256", plain)));
  const listed = await listedHash(catalog.rpc, listing);
  if (digest !== listed) throw new ShopError(`the bundle's hash ${digest} is not the one listed on chain (${listed})`);
  return { plain, digest };
}

// --- buying ---------------------------------------------------------------

// The key this purchase's key is sealed to: made once per listing and
// payer, and kept in this browser's storage (it opens only this purchase,
// whose bundle the buyer holds anyway), so a reload, or asking again after
// paying, opens the release of the one payment.
function purchaseKey(listing) {
  const slot = `brainctl-shop:${listing.listing_id}:${account.address}`;
  const kept = localStorage.getItem(slot);
  if (kept) return nacl.box.keyPair.fromSecretKey(b64decode(kept));
  const keyPair = nacl.box.keyPair();
  localStorage.setItem(slot, b64encode(keyPair.secretKey));
  return keyPair;
}

async function untilReleased(body) {
  for (let i = 0; i < 240; i += 1) {
    const r = await fetch(body.poll);
    const polled = await r.json();
    if (r.status === 200 && polled.status === "released") return polled;
    if (r.status !== 202) throw new ShopError(polled.error ?? `the payment's status: HTTP ${r.status}`);
    await new Promise((done) => setTimeout(done, 500));
  }
  throw new ShopError("not released within two minutes: reload to finish (the purchase's key is kept)");
}

async function buy(catalog, listing, card) {
  const result = card.querySelector(".result");
  const button = card.querySelector("button");
  button.disabled = true;
  try {
    await connect();
    if (!catalog.rpc) throw new ShopError("this shop names no RPC for the page (the seller's --x402-shop-rpc)");
    const chain = CHAINS[catalog.network] ?? catalog.network;
    const keyPair = purchaseKey(listing);
    const sealTo = b58.encode(keyPair.publicKey);
    const memo = `${MEMO_PREFIX}:buy:${listing.listing_id}:${sealTo}`;
    const units = BASE_UNITS + UNITS_PER_MEMO_BYTE * new TextEncoder().encode(memo).length;
    const pay = wrapFetchWithPaymentFromConfig(window.fetch.bind(window), {
      schemes: [
        { network: catalog.network, client: new ExactSvmScheme(walletSigner(chain, units), { rpcUrl: catalog.rpc }) },
      ],
      // the person confirms the price in the wallet; the page shows it
      spendControls: false,
    });
    say(`Paying for ${listing.listing_id}: confirm in ${wallet.name}…`, "paying");
    const url = `${listing.url}?buyer=${account.address}&buyer_x25519_pubkey=${sealTo}`;
    const r = await pay(url, { method: "GET" });
    let body = await r.json();
    const settled = r.headers.get("PAYMENT-RESPONSE");
    const signature = settled ? decodePaymentResponseHeader(settled).transaction : body.buy_signature;
    if (r.status === 202) {
      say(`Paid (${signature}); waiting for the seller's release…`, "pending");
      body = await untilReleased(body);
    } else if (r.status !== 200) {
      throw new ShopError(body.error ?? `HTTP ${r.status}`);
    }
    say("Released: opening and checking the bundle…", "opening");
    const { plain, digest } = await openBundle(catalog, listing, body, keyPair);
    const file = URL.createObjectURL(new Blob([plain], { type: "application/json" }));
    result.innerHTML = "";
    const link = document.createElement("a");
    link.href = file;
    link.download = `${listing.listing_id}.bundle.json`;
    link.textContent = `Save ${link.download}`;
    link.className = "download";
    result.append(link, document.createTextNode(` (bundle ${digest}, checked against the listing on chain; payment ${body.buy_signature})`));
    card.dataset.state = "verified";
    card.dataset.bundleHash = digest;
    card.dataset.buySignature = body.buy_signature;
    say(`Bought ${listing.listing_id}: the bundle is verified.`, "verified");
  } catch (e) {
    result.textContent = e instanceof ShopError ? e.message : `failed: ${e?.message ?? e}`;
    card.dataset.state = "error";
    say(result.textContent, "error");
    button.disabled = false;
  }
}

// --- the page -------------------------------------------------------------

function price(listing) {
  const units = BigInt(listing.amount);
  const scale = 10n ** BigInt(listing.decimals);
  const whole = units / scale;
  const frac = (units % scale).toString().padStart(listing.decimals, "0").replace(/0+$/, "");
  return `${whole}${frac ? `.${frac}` : ""}`;
}

function card(catalog, listing) {
  const el = document.createElement("section");
  el.className = "listing";
  el.id = `listing-${listing.listing_id}`;
  el.dataset.state = "offered";
  const p = listing.preview ?? {};
  const h = document.createElement("h2");
  h.textContent = p.description || listing.listing_id;
  const meta = document.createElement("div");
  meta.className = "meta";
  const count = p.memories_count != null ? `${p.memories_count} memories` : "memories";
  const cats = (p.categories_summary ?? []).join(", ");
  meta.textContent = `${count}${cats ? ` · ${cats}` : ""} · listing ${listing.listing_id} · expires ${new Date(listing.expires_at * 1000).toISOString().slice(0, 16).replace("T", " ")}`;
  const row = document.createElement("p");
  const cost = document.createElement("span");
  cost.className = "price";
  cost.textContent = `${price(listing)} of ${listing.asset.slice(0, 4)}…${listing.asset.slice(-4)} `;
  const button = document.createElement("button");
  button.textContent = "Buy";
  button.className = "buy";
  button.addEventListener("click", () => buy(catalog, listing, el));
  row.append(cost, button);
  const result = document.createElement("div");
  result.className = "result";
  el.append(h, meta, row, result);
  return el;
}

async function main() {
  watchWallets();
  $("connect").addEventListener("click", () => connect().catch((e) => say(e.message, "error")));
  const r = await fetch("/x402/listings");
  const catalog = await r.json();
  if (!r.ok) throw new ShopError(catalog.error ?? `HTTP ${r.status}`);
  const list = $("listings");
  for (const listing of catalog.listings) list.append(card(catalog, listing));
  say(
    catalog.listings.length ? `${catalog.listings.length} for sale. Connect a wallet and press Buy.` : "Nothing for sale right now.",
    "ready",
  );
}

main().catch((e) => say(`The shop did not load: ${e.message}`, "error"));
