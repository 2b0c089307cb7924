//! x402 (HTTP 402 Payment Required) for a seller's node: the `exact`
//! scheme on Solana, the node as its own facilitator.
//!
//! - [`wire`]: the protocol's shapes and headers (v2; v1 where clients
//!   still send it).
//! - [`verify`]: the facilitator's check of a client's transaction
//!   (pure), and co-signing as fee payer.
//! - [`serve`]: the endpoint selling a listing's key, beside `listen`.
//! - [`shop`]: its page, where a person pays with a browser wallet.
//! - [`endpoint`]: both as one HTTP service (routes, CORS, shutdown).
//! - [`reads`]: the clock and mints, cached briefly.
//! - [`guard`]: who may have a payment settled (one in flight per payer
//!   and source account, failure budgets, requests per client).
//! - [`prices`], [`paid_calls`], [`call_ledger`]: paid MCP tool calls
//!   (x402's MCP binding): the operator's price list, the settlement of a
//!   payment for one call, and the durable record that runs each paid call
//!   once.
//!
//! A listing's payment is an ordinary buy on chain (buy memo, the
//! seller's token account), so `listen` and the indexer count it with the
//! settlement rules every buy meets (`crate::settle`), the seller's node
//! as its co-signing fee payer. A tool call's payment is a transfer to the
//! payee, recorded in the node's own ledger.

pub mod call_ledger;
pub mod endpoint;
pub mod guard;
pub mod paid_calls;
pub mod prices;
pub mod reads;
pub mod serve;
pub mod shop;
pub mod verify;
pub mod wire;
