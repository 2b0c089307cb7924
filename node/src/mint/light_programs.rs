//! Light Protocol's program ids and the localnet's compression accounts:
//! constants only, shared by the instruction builders (`light`) and the
//! output-queue bookkeeping (`output_room`) without either importing the
//! other.

use solana_sdk::pubkey;
use solana_sdk::pubkey::Pubkey;

/// The compressed-token program.
pub const COMPRESSED_TOKEN: Pubkey = pubkey!("cTokenmWW8bLPjZEBAUgYy3zKxQZW6VKi7bqNFEVv3m");
/// The Light system program.
pub const LIGHT_SYSTEM: Pubkey = pubkey!("SySTEM1eSU2p4BGQfQpimFEWWSC1XDFeun3Nqzz3rT7");
/// The account-compression program.
pub const ACCOUNT_COMPRESSION: Pubkey = pubkey!("compr6CUsB5m2jS4Y3831ztGSTnDpnKJTKS95d64XVq");
/// The noop program events are logged through.
pub const NOOP: Pubkey = pubkey!("noopb9bkMVfRPU8AsbpTUg8AQkHtKwMYZiFUjNRtMmV");
/// The localnet state tree (from the zk-compression CLI's accounts).
pub const LOCALNET_STATE_TREE: Pubkey = pubkey!("oq1na8gojfdUhsfCpyjNt6h4JaDWtHf1yQj4koBWfto");
/// Where a localnet mint's compressed output goes, in the order tried:
/// the five batched output queues of the localnet accounts (the default
/// first), then the two V1 state trees. Without a forester (none runs on
/// the localnet) a batched queue takes 100 outputs and then refuses more
/// (account-compression error 14301), while a V1 tree appends on chain
/// (2^26 leaves), so a long-lived localnet never runs out of releases.
pub const LOCALNET_OUTPUT_TREES: [Pubkey; 7] = [
    LOCALNET_STATE_TREE,
    pubkey!("oq2UkeMsJLfXt2QHzim242SUi3nvjJs8Pn7Eac9H9vg"),
    pubkey!("oq3AxjekBWgo64gpauB6QtuZNesuv19xrhaC1ZM1THQ"),
    pubkey!("oq4ypwvVGzCUMoiKKHWh4S1SgZJ9vCvKpcz6RT6A8dq"),
    pubkey!("oq5oh5ZR3yGomuQgFduNDzjtGvVWfDRGLuDVjv9a96P"),
    pubkey!("smt1NamzXdq4AMqS2fS2F1i5KTYPZRhoHgWx38d8WsT"),
    pubkey!("smt2rJAFdyJJupwMKAqTNAJwvjhmiZ4JYGZmbVRw1Ho"),
];
