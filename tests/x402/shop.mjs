// A person buying from a seller's shop page: headless Chromium (driven by
// playwright-core) opens `listen --x402`'s page at `/`, with a test wallet
// registered through Wallet Standard that signs like Phantom except for
// Lighthouse (no registry carries the Lighthouse program, so the localnet
// cannot run its guards): it connects, signs the transaction the page hands
// it with the buyer's key, and returns it. The script presses the listing's
// Buy button, waits until the page says the bundle is verified (or failed),
// and saves the file the page offers.
//
// Used by cli/tests/x402.rs on the localnet.
//
// Usage: node shop.mjs --url BASE --listing ID --secret FILE --chromium BIN --out DIR [--again]
//   FILE holds the buyer's 64-byte keypair as a JSON array (solana-keygen).
//   --again: then reload the page and buy the same listing a second time
//   (a person pressing Buy again: answered with the first payment).
// Prints one JSON object: the page's state and status line per attempt, the
// card's bundle hash and buy signature, the saved file, and what the wallet
// signed (each transaction's programs and compute-unit limit).

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";

const { values: a } = parseArgs({
  options: {
    url: { type: "string" },
    listing: { type: "string" },
    secret: { type: "string" },
    chromium: { type: "string" },
    out: { type: "string" },
    again: { type: "boolean", default: false },
  },
});
const keypair = JSON.parse(readFileSync(a.secret, "utf8"));

// The test wallet, injected before the page's own scripts run.
function testWallet({ keypair }) {
  const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
  const b58 = (bytes) => {
    let n = 0n;
    for (const b of bytes) n = n * 256n + BigInt(b);
    let s = "";
    while (n > 0n) {
      s = ALPHABET[Number(n % 58n)] + s;
      n /= 58n;
    }
    for (const b of bytes) {
      if (b !== 0) break;
      s = `1${s}`;
    }
    return s;
  };
  const seed = new Uint8Array(keypair.slice(0, 32));
  const publicKey = new Uint8Array(keypair.slice(32, 64));
  const chains = ["solana:devnet", "solana:mainnet", "solana:testnet", "solana:localnet"];
  const account = {
    address: b58(publicKey),
    publicKey,
    chains,
    features: ["solana:signTransaction"],
  };
  const pkcs8 = new Uint8Array([0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20, ...seed]);
  const key = crypto.subtle.importKey("pkcs8", pkcs8, { name: "Ed25519" }, false, ["sign"]);
  const shortvec = (bytes, at) => {
    let n = 0;
    let shift = 0;
    for (;;) {
      const b = bytes[at];
      at += 1;
      n |= (b & 0x7f) << shift;
      if ((b & 0x80) === 0) return [n, at];
      shift += 7;
    }
  };
  window.__testWallet = { signed: [] };
  async function signOne({ transaction }) {
    const tx = new Uint8Array(transaction);
    const [sigs, sigAt] = shortvec(tx, 0);
    const message = tx.subarray(sigAt + 64 * sigs);
    let at = message[0] & 0x80 ? 1 : 0;
    at += 3;
    const [keys, keysAt] = shortvec(message, at);
    at = keysAt;
    const accounts = [];
    for (let i = 0; i < keys; i += 1) accounts.push(b58(message.subarray(at + 32 * i, at + 32 * (i + 1))));
    at += 32 * keys + 32;
    const [ixs, ixAt] = shortvec(message, at);
    at = ixAt;
    const programs = [];
    let computeUnitLimit = null;
    for (let i = 0; i < ixs; i += 1) {
      const program = accounts[message[at]];
      at += 1;
      const [n, accAt] = shortvec(message, at);
      at = accAt + n;
      const [len, dataAt] = shortvec(message, at);
      const data = message.subarray(dataAt, dataAt + len);
      at = dataAt + len;
      programs.push(program);
      if (program === "ComputeBudget111111111111111111111111111111" && data[0] === 2) {
        computeUnitLimit = new DataView(data.buffer, data.byteOffset + 1, 4).getUint32(0, true);
      }
    }
    const me = accounts.indexOf(account.address);
    if (me < 0 || me >= sigs) throw new Error("the transaction asks no signature of this wallet");
    const signature = new Uint8Array(await crypto.subtle.sign("Ed25519", await key, message));
    const signedTransaction = new Uint8Array(tx);
    signedTransaction.set(signature, sigAt + 64 * me);
    window.__testWallet.signed.push({ programs, computeUnitLimit, feePayer: accounts[0] });
    return { signedTransaction };
  }
  const wallet = {
    version: "1.0.0",
    name: "Test Wallet",
    icon: "data:image/svg+xml;base64,PHN2ZyB4bWxucz0naHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmcnLz4=",
    chains,
    get accounts() {
      return connected ? [account] : [];
    },
    features: {
      "standard:connect": {
        version: "1.0.0",
        connect: async () => {
          connected = true;
          return { accounts: [account] };
        },
      },
      "standard:events": { version: "1.0.0", on: () => () => {} },
      "solana:signTransaction": {
        version: "1.0.0",
        supportedTransactionVersions: ["legacy", 0],
        signTransaction: async (...inputs) => Promise.all(inputs.map(signOne)),
      },
    },
  };
  let connected = false;
  const register = ({ register }) => register(wallet);
  try {
    window.dispatchEvent(new CustomEvent("wallet-standard:register-wallet", { detail: register }));
  } catch {}
  window.addEventListener("wallet-standard:app-ready", ({ detail }) => register(detail));
}

const browser = await chromium.launch({
  executablePath: a.chromium,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const out = { attempts: [] };
try {
  const context = await browser.newContext({ acceptDownloads: true });
  await context.addInitScript(testWallet, { keypair });
  const page = await context.newPage();
  const logs = [];
  page.on("console", (m) => logs.push(m.text()));
  page.on("pageerror", (e) => logs.push(`pageerror: ${e.message}`));
  const card = `#listing-${a.listing}`;
  const attempt = async () => {
    // generous: the suite runs beside other tests on two cores
    await page.goto(`${a.url}/`, { waitUntil: "domcontentloaded", timeout: 120_000 });
    await page.waitForSelector("body[data-state=ready], body[data-state=error]", { timeout: 120_000 });
    await page.click(`${card} button.buy`);
    await page.waitForSelector(`${card}[data-state=verified], ${card}[data-state=error]`, { timeout: 150_000 });
    const seen = await page.evaluate((sel) => {
      const el = document.querySelector(sel);
      return {
        state: el.dataset.state,
        result: el.querySelector(".result").textContent,
        status: document.getElementById("status").textContent,
        bundle_hash: el.dataset.bundleHash ?? null,
        buy_signature: el.dataset.buySignature ?? null,
        signed: window.__testWallet.signed,
      };
    }, card);
    if (seen.state === "verified") {
      const [download] = await Promise.all([page.waitForEvent("download"), page.click(`${card} a.download`)]);
      seen.file = join(a.out, download.suggestedFilename());
      await download.saveAs(seen.file);
    }
    out.attempts.push(seen);
  };
  await attempt();
  if (a.again) await attempt();
  out.logs = logs;
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
