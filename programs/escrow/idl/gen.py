#!/usr/bin/env python3
"""Writes idl/escrow.json (Anchor IDL spec 0.1.0) for the escrow program:
the sealed escrow of `src/sealed/`, its token variants of `src/token/` and
`quote_usd` of `src/usd/`
(instructions in `src/lib.rs`, errors in `src/error.rs`).

The SBF toolchain (and so `anchor build`) is unavailable here, so the IDL is
generated from this table; `tests/idl.rs` checks it against the compiled
program: every discriminator, each instruction's accounts (order, writable,
signer) and PDA seeds, the Borsh layout of every instruction's arguments,
account and event (field names, order and types), and every error code and
message, so the file cannot drift from the code unnoticed.
Run: python3 programs/escrow/idl/gen.py > programs/escrow/idl/escrow.json
"""
import hashlib, json

ADDRESS = "GupF9eVkWTDfA9Y6o3AwS1FniLXRAsyo1ucCFTwjrFmq"
SYSTEM = "11111111111111111111111111111111"
UPGRADEABLE_LOADER = "BPFLoaderUpgradeab1e11111111111111111111111"
ATA_PROGRAM = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL"

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

def acc(path, account=None):
    """An account seed; `account` names the type of a field path (as Anchor does)."""
    seed = {"kind": "account", "path": path}
    if account:
        seed["account"] = account
    return seed

def arg(path):
    return {"kind": "arg", "path": path}

def account(name, writable=False, signer=False, pda=None, address=None, relations=None):
    """One instruction account; false flags are left out, as Anchor does."""
    a = {"name": name}
    if writable:
        a["writable"] = True
    if signer:
        a["signer"] = True
    if address:
        a["address"] = address
    if pda:
        a["pda"] = pda
    if relations:
        a["relations"] = relations
    return a

# seeds = [SETTINGS_SEED]
SETTINGS_PDA = {"seeds": [const("settings")]}
# seeds = [SEALED_LISTING_SEED, listing.seller.as_ref(), listing.listing_id.as_bytes()]
LISTING_PDA = {"seeds": [const("sealed-listing"), acc("listing.seller", "SealedListing"),
                         acc("listing.listing_id", "SealedListing")]}

def settings():
    return account("settings", pda=SETTINGS_PDA)

def listing(writable, relations=None):
    return account("listing", writable=writable, pda=LISTING_PDA, relations=relations)

def escrow(buyer_seed):
    """seeds = [SEALED_ESCROW_SEED, listing.key().as_ref(), <buyer>.as_ref()]"""
    return account("escrow", writable=True,
                   pda={"seeds": [const("sealed-escrow"), acc("listing"), buyer_seed]})

SYS = account("system_program", address=SYSTEM)

# #[event_cpi] appends these two to every instruction that emits an event
# (all but init_settings): the event authority signs the self-CPI whose
# data is the event; the program account is the self-CPI's callee
EVENT_CPI = [account("event_authority", pda={"seeds": [const("__event_authority")]}),
             account("program", address=ADDRESS)]

def t_array(n):
    return {"array": ["u8", n]}

def t_defined(name):
    return {"defined": {"name": name}}

B32 = t_array(32)
# a v3 leaf's memory tallies before and after (None against a v2 blob)
TALLIES = {"option": {"array": [t_array(4), 2]}}

INSTRUCTIONS = [
    # InitSettings: settings (init), treasury, admin (mut signer), program_data, system_program
    ("init_settings",
     [account("settings", writable=True, pda=SETTINGS_PDA),
      account("treasury"),
      account("admin", writable=True, signer=True),
      account("program_data",
              pda={"seeds": [{"kind": "const", "value": b58decode(ADDRESS)}],
                   "program": {"kind": "const", "value": b58decode(UPGRADEABLE_LOADER)}}),
      SYS],
     [("args", t_defined("SettingsArgs"))]),
    # ListSealed: settings, listing (init, seeds of the seller and the listing_id arg),
    # seller (mut signer), system_program
    ("list_sealed",
     [settings(),
      account("listing", writable=True,
              pda={"seeds": [const("sealed-listing"), acc("seller"), arg("listing_id")]}),
      account("seller", writable=True, signer=True),
      SYS],
     [("listing_id", "string"), ("terms", t_defined("SealedTerms")), ("stake", "u64"),
      ("max_open", "u32")]),
    # DepositSealed: settings, listing (mut), escrow (init, seeds of buyer), buyer (mut signer),
    # system_program
    ("deposit_sealed",
     [settings(), listing(True), escrow(acc("buyer")),
      account("buyer", writable=True, signer=True),
      SYS],
     [("terms", t_defined("SealedTerms")), ("blind_point", B32), ("buyer_x25519", B32)]),
    # Reveal: settings, listing (has_one seller), escrow (mut, has_one listing), seller (signer)
    ("reveal",
     [settings(), listing(False, ["escrow"]), escrow(acc("escrow.buyer", "SealedEscrow")),
      account("seller", signer=True, relations=["listing"])],
     [("revealed", B32)]),
    # Decline: settings, listing (mut, has_one seller), escrow (mut, has_one listing), seller (signer)
    ("decline",
     [settings(), listing(True, ["escrow"]), escrow(acc("escrow.buyer", "SealedEscrow")),
      account("seller", signer=True, relations=["listing"])],
     []),
    # Claim: settings, listing (mut, has_one seller), escrow (mut, has_one listing),
    # seller (mut, unchecked), treasury (mut, address = settings.treasury)
    ("claim",
     [settings(), listing(True, ["escrow"]), escrow(acc("escrow.buyer", "SealedEscrow")),
      account("seller", writable=True, relations=["listing"]),
      account("treasury", writable=True)],
     []),
    # RefundSealed: settings, listing (mut), escrow (mut, has_one listing, buyer; close = buyer),
    # buyer (mut signer)
    ("refund_sealed",
     [settings(), listing(True, ["escrow"]), escrow(acc("buyer")),
      account("buyer", writable=True, signer=True, relations=["escrow"])],
     []),
    # Dispute: as RefundSealed
    ("dispute",
     [settings(), listing(True, ["escrow"]), escrow(acc("buyer")),
      account("buyer", writable=True, signer=True, relations=["escrow"])],
     [("proof", t_defined("FraudProof"))]),
    # dispute_step, dispute_link: Dispute's accounts, a v2 blob's proofs
    ("dispute_step",
     [settings(), listing(True, ["escrow"]), escrow(acc("buyer")),
      account("buyer", writable=True, signer=True, relations=["escrow"])],
     [("proof", t_defined("StepFraud"))]),
    ("dispute_link",
     [settings(), listing(True, ["escrow"]), escrow(acc("buyer")),
      account("buyer", writable=True, signer=True, relations=["escrow"])],
     [("proof", t_defined("LinkFraud"))]),
    # Expire: settings, listing (mut), escrow (mut, has_one listing); anyone sends it
    ("expire",
     [settings(), listing(True, ["escrow"]), escrow(acc("escrow.buyer", "SealedEscrow"))],
     []),
    # RetireSealed: listing (mut, has_one seller), seller (mut signer)
    ("retire_sealed",
     [listing(True), account("seller", writable=True, signer=True, relations=["listing"])],
     []),
    # src/token/: the escrow in an SPL token
    # ListSealedToken: as ListSealed, with the mint (unchecked: the handler reads it),
    # the treasury (address = settings.treasury), its associated account (mut, created
    # when missing), token_program (the mint's owner) and associated_token_program
    ("list_sealed_token",
     [settings(),
      account("listing", writable=True,
              pda={"seeds": [const("sealed-listing"), acc("seller"), arg("listing_id")]}),
      account("seller", writable=True, signer=True),
      account("mint"), account("treasury"), account("treasury_token", writable=True),
      account("token_program"), account("associated_token_program", address=ATA_PROGRAM),
      SYS],
     [("listing_id", "string"), ("terms", t_defined("SealedTerms")), ("stake", "u64"),
      ("max_open", "u32")]),
    # DepositSealedToken: settings, listing (mut), escrow (init), buyer (mut signer),
    # mint (address = listing.mint), buyer_token (mut), vault (mut, the escrow's ATA),
    # token_program (the mint's owner), associated_token_program, system_program
    ("deposit_sealed_token",
     [settings(), listing(True), escrow(acc("buyer")),
      account("buyer", writable=True, signer=True),
      account("mint"), account("buyer_token", writable=True), account("vault", writable=True),
      account("token_program"), account("associated_token_program", address=ATA_PROGRAM),
      SYS],
     [("terms", t_defined("SealedTerms")), ("blind_point", B32), ("buyer_x25519", B32)]),
    # ClaimToken: settings, listing (mut, has_one seller), escrow (mut, has_one listing),
    # seller, mint, vault (mut), seller_token (mut), treasury_token (mut, the treasury's ATA),
    # token_program
    ("claim_token",
     [settings(), listing(True, ["escrow"]), escrow(acc("escrow.buyer", "SealedEscrow")),
      account("seller", relations=["listing"]),
      account("mint"), account("vault", writable=True), account("seller_token", writable=True),
      account("treasury_token", writable=True), account("token_program")],
     []),
    # ExitToken (refund_sealed_token): as RefundSealed, with mint, vault (mut),
    # buyer_token (mut), token_program (the vault's)
    ("refund_sealed_token",
     [settings(), listing(True, ["escrow"]), escrow(acc("buyer")),
      account("buyer", writable=True, signer=True, relations=["escrow"]),
      account("mint"), account("vault", writable=True), account("buyer_token", writable=True),
      account("token_program")],
     []),
    # DisputeToken (src/token/token_dispute.rs): Dispute's accounts, the buyer only signing
    # (the conviction moves no token and pays the share into the escrow)
    ("dispute_token",
     [settings(), listing(True, ["escrow"]), escrow(acc("buyer")),
      account("buyer", signer=True, relations=["escrow"])],
     [("proof", t_defined("FraudProof"))]),
    ("dispute_step_token",
     [settings(), listing(True, ["escrow"]), escrow(acc("buyer")),
      account("buyer", signer=True, relations=["escrow"])],
     [("proof", t_defined("StepFraud"))]),
    ("dispute_link_token",
     [settings(), listing(True, ["escrow"]), escrow(acc("buyer")),
      account("buyer", signer=True, relations=["escrow"])],
     [("proof", t_defined("LinkFraud"))]),
    # QuoteUsd (src/usd/mod.rs): price_update (unchecked: owner and bytes checked by the handler)
    ("quote_usd",
     [account("price_update")],
     [("args", t_defined("UsdQuoteArgs"))]),
]

# instructions with a return value (Anchor sets it as the return data)
RETURNS = {"quote_usd": "u64"}

def struct(fields):
    return {"kind": "struct", "fields": [{"name": n, "type": t} for n, t in fields]}

def enum(variants):
    return {"kind": "enum", "variants": [{"name": v} for v in variants]}

# src/sealed/state.rs (#[account])
ACCOUNTS = {
    "Settings": [("admin", "pubkey"), ("treasury", "pubkey"), ("fee_bps", "u16"),
                 ("slash_bps", "u16"), ("release_window_secs", "i64"),
                 ("dispute_window_secs", "i64"), ("min_stake", "u64"), ("bump", "u8")],
    "SealedListing": [("seller", "pubkey"), ("listing_id", "string"),
                      ("terms", t_defined("SealedTerms")), ("stake", "u64"),
                      ("status", t_defined("SealedListingStatus")), ("open_escrows", "u32"),
                      ("bump", "u8"), ("mint", "pubkey"), ("reserved", "u64"),
                      ("max_open", "u32")],
    "SealedEscrow": [("listing", "pubkey"), ("buyer", "pubkey"), ("buyer_x25519", B32),
                     ("blind_point", B32), ("amount", "u64"), ("deposited_at", "i64"),
                     ("status", t_defined("SealedEscrowStatus")), ("revealed", B32),
                     ("revealed_at", "i64"), ("bump", "u8"), ("share", "u64")],
}
# src/sealed/events.rs (#[event])
EVENTS = {
    "SealedListed": [("listing", "pubkey"), ("seller", "pubkey"), ("price_lamports", "u64"),
                     ("stake", "u64")],
    "SealedDeposited": [("listing", "pubkey"), ("escrow", "pubkey"), ("buyer", "pubkey"),
                        ("amount", "u64"), ("mint", "pubkey"), ("deposited_at", "i64")],
    "KeyRevealed": [("escrow", "pubkey"), ("revealed", B32)],
    "DepositDeclined": [("escrow", "pubkey")],
    "PaymentClaimed": [("escrow", "pubkey"), ("to_seller", "u64"), ("fee", "u64")],
    "SealedRefunded": [("escrow", "pubkey"), ("amount", "u64"), ("slashed", "u64")],
    "FraudProven": [("escrow", "pubkey"), ("index", "u32"), ("amount", "u64"), ("slashed", "u64")],
    "EscrowExpired": [("escrow", "pubkey"), ("slashed", "u64")],
    "SealedRetired": [("listing", "pubkey"), ("stake_returned", "u64")],
    # src/usd/mod.rs
    "UsdQuoted": [("price_update", "pubkey"), ("feed_id", B32), ("price", "i64"), ("conf", "u64"),
                  ("exponent", "i32"), ("publish_time", "i64"), ("usd_micros", "u64"),
                  ("decimals", "u8"), ("max_age_secs", "u32"), ("max_conf_bps", "u16"),
                  ("units", "u64")],
}
# argument types: SettingsArgs (settings.rs), SealedTerms (state.rs), FraudProof, StepFraud,
# LeafFields, LinkFraud (dispute.rs)
STRUCTS = {
    "SettingsArgs": [("fee_bps", "u16"), ("slash_bps", "u16"), ("release_window_secs", "i64"),
                     ("dispute_window_secs", "i64"), ("min_stake", "u64")],
    "SealedTerms": [("price_lamports", "u64"), ("key_point", B32), ("blob_root", B32),
                    ("plain_len", "u64"), ("bundle_hash", B32), ("seller_x25519", B32),
                    ("expires_at", "i64")],
    "FraudProof": [("k", B32), ("index", "u32"), ("cipher", "bytes"), ("plain_hash", B32),
                   ("path", {"vec": B32})],
    "StepFraud": [("k", B32), ("index", "u32"), ("cipher", "bytes"), ("plain_hash", B32),
                  ("before", B32), ("after", B32), ("path", {"vec": B32}),
                  ("tallies", TALLIES)],
    "LeafFields": [("before", B32), ("after", B32), ("body", B32), ("tallies", TALLIES)],
    "LinkFraud": [("k", B32), ("index", "u32"), ("left", t_defined("LeafFields")),
                  ("right", t_defined("LeafFields")), ("path", {"vec": B32}),
                  ("next", {"vec": B32})],
    "UsdQuoteArgs": [("feed_id", B32), ("usd_micros", "u64"), ("decimals", "u8"),
                     ("max_age_secs", "u32"), ("max_conf_bps", "u16"), ("max_units", "u64")],
}
ENUMS = {
    "SealedListingStatus": ["Live", "Retired", "Convicted"],
    "SealedEscrowStatus": ["Deposited", "Revealed", "Declined", "Claimed", "Expired"],
}
# src/error.rs, in order (codes 6000 + index)
ERRORS = [
    ("FeeTooHigh", "fee_bps is above the 1000 bps cap"),
    ("SlashTooHigh", "slash_bps is above 10000"),
    ("BadListingId", "listing id must be YYYYMMDD-<12 hex>"),
    ("ZeroPrice", "price_lamports must be positive"),
    ("StakeTooLow", "stake is below the configured minimum"),
    ("ExpiryInPast", "expires_at must be in the future"),
    ("ListingClosed", "the listing takes no deposits: retired, or convicted of fraud"),
    ("ListingExpired", "the listing has expired"),
    ("NotSeller", "only the listing's seller may do this"),
    ("NotBuyer", "only the escrow's buyer may do this"),
    ("ReleaseWindowOpen", "the release window is still open"),
    ("OpenEscrows", "the listing has open escrows"),
    ("Overflow", "arithmetic overflow"),
    ("WrongTreasury", "treasury account differs from the settings'"),
    ("WrongListing", "escrow belongs to another listing"),
    ("NotUpgradeAuthority", "only the program's upgrade authority may initialize the settings"),
    ("WindowOutOfRange",
     "the release window must be 120 s to 30 days, the dispute window 10 s to 30 days"),
    ("ZeroMinStake", "min_stake must be positive"),
    ("ZeroSlash", "slash_bps must be 1 to 10000"),
    ("BadPoint", "a committed point does not decode or is of small order"),
    ("LowOrderKey", "an X25519 key is of low order"),
    ("BadPlainLen", "plain_len must be 1 byte to 32 MiB"),
    ("TermsMismatch", "the listing's terms differ from those the buyer checked"),
    ("StakeBelowFloor", "the listing's stake is below the floor: no deposits"),
    ("ReleaseWindowClosed", "the release window has closed"),
    ("WrongReveal", "the revealed scalar does not satisfy s·G = K + B"),
    ("WrongEscrowState", "the escrow is not in a state that allows this"),
    ("DisputeWindowOpen", "the dispute window is still open"),
    ("DisputeWindowClosed", "the dispute window has closed"),
    ("ProofWrongKey", "the fraud proof's scalar does not open the key commitment"),
    ("ProofBadChunk", "the fraud proof's chunk is out of range or of the wrong length"),
    ("ProofBadPath", "the fraud proof's Merkle path does not reach the committed root"),
    ("NoFraud", "the chunk decrypts to its committed plaintext: no fraud"),
    ("ListingConvicted", "the listing was convicted of fraud: nothing of it is claimed"),
    ("PriceNotPyth", "the price account is not a Pyth PriceUpdateV2 account"),
    ("PriceStale", "the price is older than the listing's maximum age"),
    ("PriceUncertain", "the price's confidence is wider than the listing's bound"),
    ("PriceOtherFeed", "the price account carries another feed than the listing's"),
    ("PriceUnusable", "the price cannot convert the listing's USD"),
    ("PriceMoved", "the price moved: the quote is above what the buy pays"),
    ("ListingInToken", "the listing settles in a token: use the instruction's _token variant"),
    ("ListingInLamports", "the listing settles in lamports: use the instruction without _token"),
    ("WrongMint", "the mint differs from the listing's"),
    ("NotAMint", "the mint is not an initialized SPL Token or Token-2022 mint"),
    ("WrongTokenProgram", "the token program is not the mint's owner"),
    ("WrongVault", "the vault is not the escrow's associated token account of the mint"),
    ("DepositShort", "the vault received other than the price: the mint takes a fee on transfers"),
    ("WrongSellerAccount",
     "the seller's token account is not an account of the seller for the listing's mint"),
    ("MintExtension",
     "the mint has a Token-2022 extension that could move, freeze, tax or block a held vault "
     "(permanent delegate, pause, transfer hook or fee, non-transferable, default account state, "
     "confidential transfers)"),
    ("TooManyOpen",
     "the listing has as many open escrows as its seller allows; try again when one settles"),
    ("StakeReserved",
     "the listing's unreserved stake cannot cover another deposit's slash share; "
     "try again when an escrow settles"),
    ("ZeroMaxOpen", "max_open must be at least 1"),
    ("TreasuryNotRentExempt", "the treasury must hold at least the rent-exempt minimum"),
    ("NotExpirable",
     "only a deposit past its release window and grace, or a reveal on a convicted listing, "
     "can be expired"),
    ("ZeroShare", "min_stake and slash_bps give a slash share of 0 lamports: raise either"),
    ("TreasuryFrozen",
     "the treasury's token account of the mint is frozen; the claim pays once it is thawed"),
]

idl = {
    "address": ADDRESS,
    "metadata": {"name": "escrow", "version": "0.1.0", "spec": "0.1.0",
                 "description": "brainctl marketplace escrow prototype"},
    "instructions": [
        {"name": n, "discriminator": disc("global", n),
         "accounts": a if n == "init_settings" else a + EVENT_CPI,
         "args": [{"name": an, "type": at} for an, at in args],
         **({"returns": RETURNS[n]} if n in RETURNS else {})}
        for n, a, args in INSTRUCTIONS
    ],
    "accounts": [{"name": n, "discriminator": disc("account", n)} for n in sorted(ACCOUNTS)],
    "events": [{"name": n, "discriminator": disc("event", n)} for n in sorted(EVENTS)],
    "errors": [{"code": 6000 + i, "name": n, "msg": m} for i, (n, m) in enumerate(ERRORS)],
    "types": sorted(
        [{"name": n, "type": struct(f)} for n, f in {**ACCOUNTS, **EVENTS, **STRUCTS}.items()]
        + [{"name": n, "type": enum(v)} for n, v in ENUMS.items()],
        key=lambda t: t["name"]),
}
print(json.dumps(idl, indent=2))
