#!/usr/bin/env python3
"""Writes idl/escrow.json (Anchor IDL spec 0.1.0) for the escrow program.

The SBF toolchain (and so `anchor build`) is unavailable here, so the IDL is
generated from this table; `tests/idl.rs` checks every discriminator, error
code and message, account field and instruction argument against the
compiled program, so the file cannot drift from the code unnoticed.
Run: python3 programs/escrow/idl/gen.py > programs/escrow/idl/escrow.json
"""
import hashlib, json

ADDRESS = "GupF9eVkWTDfA9Y6o3AwS1FniLXRAsyo1ucCFTwjrFmq"
SYSTEM = "11111111111111111111111111111111"
UPGRADEABLE_LOADER = "BPFLoaderUpgradeab1e11111111111111111111111"

def b58decode(s):
    alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    n = 0
    for c in s:
        n = n * 58 + alphabet.index(c)
    return list(n.to_bytes(32, "big"))

def disc(prefix, name):
    return list(hashlib.sha256(f"{prefix}:{name}".encode()).digest()[:8])

def const(s):
    return {"kind": "const", "value": list(s.encode())}

def acc(path):
    return {"kind": "account", "path": path}

CONFIG = {"name": "config", "pda": {"seeds": [const("config")]}}
LISTING_PDA = {"seeds": [const("listing"), acc("listing.seller"), acc("listing.listing_id")]}

def listing(writable=True):
    return {"name": "listing", "writable": writable, "pda": LISTING_PDA}

def escrow(buyer_path):
    return {"name": "escrow", "writable": True,
            "pda": {"seeds": [const("escrow"), acc("listing"), acc(buyer_path)]}}

SYS = {"name": "system_program", "address": SYSTEM}

INSTRUCTIONS = [
    ("initialize_config",
     [{**CONFIG, "writable": True}, {"name": "admin", "writable": True, "signer": True},
      {"name": "program_data",
       "pda": {"seeds": [{"kind": "const", "value": b58decode(ADDRESS)}],
               "program": {"kind": "const", "value": b58decode(UPGRADEABLE_LOADER)}}},
      SYS],
     [("treasury", "pubkey"), ("fee_bps", "u16"), ("slash_bps", "u16"),
      ("release_window_secs", "i64"), ("min_stake", "u64")]),
    ("create_listing",
     [CONFIG,
      {"name": "listing", "writable": True,
       "pda": {"seeds": [const("listing"), acc("seller"), {"kind": "arg", "path": "listing_id"}]}},
      {"name": "seller", "writable": True, "signer": True}, SYS],
     [("listing_id", "string"), ("bundle_hash", {"array": ["u8", 32]}),
      ("price_lamports", "u64"), ("stake", "u64"), ("expires_at", "i64")]),
    ("deposit",
     [listing(), escrow("buyer"), {"name": "buyer", "writable": True, "signer": True}, SYS],
     [("buyer_x25519", {"array": ["u8", 32]})]),
    ("release",
     [CONFIG, listing(), escrow("escrow.buyer"),
      {"name": "seller", "writable": True, "signer": True},
      {"name": "treasury", "writable": True}],
     [("envelope_id", "string"), ("bundle_hash", {"array": ["u8", 32]})]),
    ("refund",
     [CONFIG, listing(), escrow("buyer"), {"name": "buyer", "writable": True, "signer": True}],
     []),
    ("cancel_listing",
     [listing(), {"name": "seller", "writable": True, "signer": True}],
     []),
    ("slash",
     [CONFIG, listing(), escrow("buyer"), {"name": "buyer", "writable": True},
      {"name": "caller", "signer": True}],
     []),
]

def struct(fields):
    return {"kind": "struct", "fields": [{"name": n, "type": t} for n, t in fields]}

def enum(variants):
    return {"kind": "enum", "variants": [{"name": v} for v in variants]}

ACCOUNTS = {
    "Config": [("admin", "pubkey"), ("treasury", "pubkey"), ("fee_bps", "u16"), ("slash_bps", "u16"),
               ("release_window_secs", "i64"), ("min_stake", "u64"), ("bump", "u8")],
    "Escrow": [("listing", "pubkey"), ("buyer", "pubkey"), ("buyer_x25519", {"array": ["u8", 32]}),
               ("amount", "u64"), ("deposited_at", "i64"), ("status", {"defined": {"name": "EscrowStatus"}}),
               ("envelope_id", "string"), ("slashed", "bool"), ("bump", "u8")],
    "Listing": [("seller", "pubkey"), ("listing_id", "string"), ("bundle_hash", {"array": ["u8", 32]}),
                ("price_lamports", "u64"), ("stake", "u64"), ("expires_at", "i64"),
                ("status", {"defined": {"name": "ListingStatus"}}), ("open_escrows", "u32"),
                ("unslashed_refunds", "u32"), ("bump", "u8")],
}
EVENTS = {
    "Deposited": [("listing", "pubkey"), ("escrow", "pubkey"), ("buyer", "pubkey"), ("amount", "u64")],
    "ListingCancelled": [("listing", "pubkey"), ("stake_returned", "u64")],
    "ListingCreated": [("listing", "pubkey"), ("seller", "pubkey"), ("listing_id", "string"),
                       ("price_lamports", "u64"), ("stake", "u64")],
    "Refunded": [("escrow", "pubkey"), ("amount", "u64")],
    "Released": [("escrow", "pubkey"), ("envelope_id", "string"), ("to_seller", "u64"), ("fee", "u64")],
    "Slashed": [("escrow", "pubkey"), ("amount", "u64")],
}
ENUMS = {"EscrowStatus": ["Deposited", "Released", "Refunded"], "ListingStatus": ["Live", "Cancelled"]}
ERRORS = [
    ("FeeTooHigh", "fee_bps is above the 1000 bps cap"),
    ("SlashTooHigh", "slash_bps is above 10000"),
    ("ZeroWindow", "the release window must be positive"),
    ("BadListingId", "listing id must be YYYYMMDD-<12 hex>"),
    ("ZeroPrice", "price_lamports must be positive"),
    ("StakeTooLow", "stake is below the configured minimum"),
    ("ExpiryInPast", "expires_at must be in the future"),
    ("ListingCancelled", "the listing is cancelled"),
    ("ListingExpired", "the listing has expired"),
    ("NotSeller", "only the listing's seller may do this"),
    ("NotBuyer", "only the escrow's buyer may do this"),
    ("AlreadySettled", "the escrow is already settled"),
    ("BundleHashMismatch", "bundle hash differs from the listing's"),
    ("BadEnvelopeId", "envelope id must be 1 to 64 characters"),
    ("ReleaseWindowOpen", "the release window is still open"),
    ("OpenEscrows", "the listing has open escrows or unslashed refunds"),
    ("NoCause", "nothing to slash: the escrow was not refunded"),
    ("AlreadySlashed", "the escrow was already slashed"),
    ("Overflow", "arithmetic overflow"),
    ("WrongTreasury", "treasury account differs from the config's"),
    ("WrongListing", "escrow belongs to another listing"),
    ("NotUpgradeAuthority", "only the program's upgrade authority may initialize the config"),
]

idl = {
    "address": ADDRESS,
    "metadata": {"name": "escrow", "version": "0.1.0", "spec": "0.1.0",
                 "description": "brainctl marketplace escrow prototype"},
    "instructions": [
        {"name": n, "discriminator": disc("global", n), "accounts": a,
         "args": [{"name": an, "type": at} for an, at in args]}
        for n, a, args in INSTRUCTIONS
    ],
    "accounts": [{"name": n, "discriminator": disc("account", n)} for n in sorted(ACCOUNTS)],
    "events": [{"name": n, "discriminator": disc("event", n)} for n in sorted(EVENTS)],
    "errors": [{"code": 6000 + i, "name": n, "msg": m} for i, (n, m) in enumerate(ERRORS)],
    "types": sorted(
        [{"name": n, "type": struct(f)} for n, f in {**ACCOUNTS, **EVENTS}.items()]
        + [{"name": n, "type": enum(v)} for n, v in ENUMS.items()],
        key=lambda t: t["name"]),
}
print(json.dumps(idl, indent=2))
