// Produces ANS-104 test vectors with the independent `arbundles` (npm,
// 0.11.2) implementation. Run from a dir where arbundles is installed:
//   cd ~/.cache/brainctl/vector-tools && NODE_PATH=$PWD/node_modules node /path/to/tools/ans104-vectors.js > vectors.json
// The output is committed as tests/fixtures/ans104/vectors.json.
const { createData, SolanaSigner } = require("arbundles");
const crypto = require("crypto");
const bs58 = require("bs58");

function keypair(label) {
  const seed = crypto.createHash("sha256").update(label).digest();
  const kp = crypto.generateKeyPairSync("ed25519", {});
  // derive deterministically from the seed via PKCS8 wrapping
  const pkcs8 = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]);
  const priv = crypto.createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" });
  const pub = crypto.createPublicKey(priv).export({ format: "der", type: "spki" }).subarray(12);
  void kp;
  return { seed, secret: Buffer.concat([seed, pub]), pub };
}

const cases = [
  { name: "empty-tags", data: Buffer.from("hello brainctl"), tags: [] },
  {
    name: "tags-target-anchor",
    data: Buffer.from([0, 1, 2, 255, 254, 10, 13]),
    tags: [
      { name: "Content-Type", value: "application/x-brnctl-encrypted-bundle" },
      { name: "App-Name", value: "brainctl" },
      { name: "Schema", value: "brnctl/mint/v1" },
      { name: "Ünïcode", value: "😀 café" },
    ],
    target: crypto.createHash("sha256").update("target").digest(),
    anchor: Buffer.from("anchor-0123456789abcdef-0123456789").subarray(0, 32),
  },
  {
    name: "large",
    data: Buffer.alloc(5000, 7),
    tags: Array.from({ length: 20 }, (_, i) => ({ name: `k${i}`, value: "v".repeat(i * 7) })),
  },
  { name: "empty-data", data: Buffer.alloc(0), tags: [{ name: "a", value: "" }] },
];

(async () => {
  const out = [];
  for (const c of cases) {
    const k = keypair("ans104-" + c.name);
    const signer = new SolanaSigner(bs58.encode(k.secret));
    const opts = { tags: c.tags };
    if (c.target) opts.target = c.target.toString("base64url");
    if (c.anchor) opts.anchor = c.anchor.toString();
    const item = createData(c.data, signer, opts);
    await item.sign(signer);
    out.push({
      name: c.name,
      seed_hex: k.seed.toString("hex"),
      owner_b58: bs58.encode(k.pub),
      data_b64: c.data.toString("base64"),
      tags: c.tags,
      target_hex: c.target ? c.target.toString("hex") : null,
      anchor: c.anchor ? c.anchor.toString() : null,
      id: item.id,
      raw_b64: Buffer.from(item.getRaw()).toString("base64"),
      valid: await item.isValid(),
    });
  }
  process.stdout.write(JSON.stringify({ generator: "arbundles@0.11.2", vectors: out }, null, 1) + "\n");
})();
