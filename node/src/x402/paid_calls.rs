//! Paid tool calls over x402's MCP binding: a priced tool called without
//! payment answers the requirements (the price in the list's token, the
//! payee, the node as fee payer); called with `_meta["x402/payment"]` (a
//! v2 payment payload), the node checks the client's transaction as a
//! facilitator ([`super::verify`], the memo the client's nonce, which keeps
//! two payments for the same tool apart, and never a marketplace memo the
//! node's co-signature would make its own), co-signs, sends and waits for
//! it, and only then lets the call run; the answer carries
//! `_meta["x402/payment-response"]`.
//!
//! Exactly once per payment: every payment is recorded before it is sent
//! ([`super::call_ledger`]); a payment whose call has answered is refused
//! if sent again, one that landed while its call never answered (the
//! process stopped) runs its call when sent again, and one payment is
//! settled by one request at a time.
//!
//! Who pays for failures: one payment in flight per payer and per source
//! account, and failure budgets per payer, per source and in all
//! ([`super::guard`]); the mint is screened again for each payment (read
//! at most [`super::reads::MINT_TTL`] before), and what arrived at the
//! payee is read from the landed transaction: a payment that arrived
//! short runs nothing.
//!
//! Owns: the requirements of a priced tool and the settlement of a
//! payment for it. Never: runs the tool (the MCP server does, between
//! [`PaidCalls::settle`] and [`Settled::served`]), logs a payment's
//! transaction, or lets a payment make the fee payer move funds.

use super::call_ledger::{CallLedger, CallState, LedgerError};
use super::guard::{Guard, GuardConfig};
use super::prices::PriceList;
use super::reads::Reads;
use super::verify::{self, Expected, MemoRule};
use super::wire::{self, PaymentPayload, PaymentRequired, Requirements, Resource, SettleResponse};
use crate::chain::token::{associated_account, create_associated_account, MintRefusal, TokenMint};
use crate::chain::{Chain, ChainError, Pubkey, Signer};
use crate::wallet::Wallet;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The request `_meta` key carrying the payment.
pub const PAYMENT_META: &str = "x402/payment";
/// The result `_meta` key carrying the settlement.
pub const PAYMENT_RESPONSE_META: &str = "x402/payment-response";

/// Why paid calls cannot start.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The list's mint cannot be paid in.
    #[error("price list `mint`: {0}")]
    Mint(#[from] MintRefusal),
    /// Reading the cluster or creating the payee's token account failed.
    #[error(transparent)]
    Chain(#[from] ChainError),
    /// The ledger does not open.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// The price list's `network` is not the cluster's.
    #[error("price list `network`: {0}")]
    Network(#[from] wire::NetworkMismatch),
}

/// Why a payment does not pay for the call; the MCP answer is the
/// requirements again, with [`CallRefusal::reason`] as x402's error.
#[derive(Debug, Clone)]
pub struct CallRefusal {
    /// x402's reason (`invalidReason` / `errorReason`).
    pub reason: String,
    /// What happened, for a person.
    pub message: String,
    /// Set when the payment was sent and did not settle.
    pub settlement: Option<SettleResponse>,
}

impl CallRefusal {
    fn new(reason: &str, message: impl std::fmt::Display) -> CallRefusal {
        CallRefusal {
            reason: reason.into(),
            message: message.to_string(),
            settlement: None,
        }
    }
}

/// The node's paid tools.
pub struct PaidCalls {
    chain: Chain,
    wallet: Arc<Wallet>,
    mint: TokenMint,
    pay_to: Pubkey,
    network: String,
    prices: BTreeMap<String, u64>,
    max_timeout_seconds: u64,
    ledger_path: PathBuf,
    /// Payments being settled (one request each).
    in_flight: Mutex<HashSet<String>>,
    /// Who may have a payment sent now.
    guard: Arc<Guard>,
    /// The mint, screened again per payment.
    reads: Reads,
    /// This process's name on the ledger's claims.
    owner: String,
}

/// How long a claim on a payment holds when its process never releases
/// it (killed while a call ran): longer than any tool call answers in.
const CLAIM_LEASE_SECS: i64 = 600;

impl PaidCalls {
    /// Paid calls under `list`, paid to its payee (the node's wallet by
    /// default), the node's wallet paying fees, recorded at
    /// `ledger_path`. Reads the mint (refusing one whose extensions
    /// change what arrives) and creates the payee's token account if it
    /// is missing (x402 clients never do).
    pub async fn start(
        chain: Chain,
        wallet: Arc<Wallet>,
        list: PriceList,
        ledger_path: PathBuf,
    ) -> Result<PaidCalls, SetupError> {
        let mint = crate::chain::token::read_mint(&chain, &list.mint).await?;
        let fee_payer = wallet.solana_keypair();
        let pay_to = list.pay_to.unwrap_or_else(|| fee_payer.pubkey());
        let cluster = wire::cluster_network(&chain).await?;
        let network = match list.network {
            Some(n) => {
                wire::check_network(&n, &cluster)?;
                n
            }
            None => cluster,
        };
        let account = associated_account(&pay_to, &mint);
        if chain.balance(&account).await? == 0 {
            let sent = chain
                .send(
                    &[create_associated_account(
                        &fee_payer.pubkey(),
                        &pay_to,
                        &mint,
                    )],
                    &[&fee_payer],
                )
                .await?;
            tracing::info!(%account, signature = %sent.signature, "created the payee's token account for paid calls");
        }
        let path = ledger_path.clone();
        tokio::task::spawn_blocking(move || CallLedger::open(&path).map(drop))
            .await
            .map_err(|e| LedgerError::Io {
                path: ledger_path.clone(),
                source: std::io::Error::other(e),
            })??;
        Ok(PaidCalls {
            chain,
            wallet,
            mint,
            pay_to,
            network,
            prices: list.tools,
            max_timeout_seconds: list.max_timeout_seconds,
            ledger_path,
            in_flight: Default::default(),
            guard: Guard::new(GuardConfig::default()),
            reads: Reads::default(),
            // the pid names a live process on this machine (a WAL ledger is
            // shared only on one); the start time tells a reused pid apart
            owner: format!(
                "{}-{}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos())
            ),
        })
    }

    /// The tools priced (each call pays for itself).
    pub fn priced_tools(&self) -> impl Iterator<Item = String> + '_ {
        self.prices.keys().cloned()
    }

    /// `tool`'s price in base units (`None`: free).
    pub fn price(&self, tool: &str) -> Option<u64> {
        self.prices.get(tool).copied()
    }

    /// The token every priced call is paid in.
    pub fn mint(&self) -> Pubkey {
        self.mint.address
    }

    /// The CAIP-2 id advertised.
    pub fn network(&self) -> &str {
        &self.network
    }

    /// The payments recorded so far.
    pub fn ledger_path(&self) -> &std::path::Path {
        &self.ledger_path
    }

    fn requirements(&self, units: u64) -> Requirements {
        let fee_payer = self.wallet.solana_keypair().pubkey();
        Requirements {
            scheme: "exact".into(),
            network: self.network.clone(),
            amount: units.to_string(),
            asset: self.mint.address.to_string(),
            pay_to: self.pay_to.to_string(),
            max_timeout_seconds: self.max_timeout_seconds,
            extra: wire::Extra::paying(fee_payer.to_string(), None, &self.mint),
        }
    }

    /// What paying for `tool` takes (`error` says why it is asked for);
    /// `None` when the tool is free.
    pub fn payment_required(&self, tool: &str, error: &str) -> Option<PaymentRequired> {
        let units = self.price(tool)?;
        Some(PaymentRequired {
            x402_version: 2,
            error: error.into(),
            resource: Some(Resource {
                url: format!("mcp://tool/{tool}"),
                description: Some(format!(
                    "one call of the brainctl tool {tool}: {units} base units of {}",
                    self.mint.address
                )),
                mime_type: Some("application/json".into()),
            }),
            accepts: vec![self.requirements(units)],
        })
    }

    /// Checks `payment` (the request's `_meta["x402/payment"]`) for one
    /// call of `tool` and claims it, sending nothing: the call runs after
    /// this returns `Ok`, and only a call that answered without error is
    /// paid for ([`Verified::settle`]); one refused, or answering an error,
    /// moves nothing ([`Verified`] dropped: the same payment may pay for
    /// another call).
    pub async fn verify(
        &self,
        tool: &str,
        payment: &serde_json::Value,
    ) -> Result<Verified<'_>, CallRefusal> {
        let units = self
            .price(tool)
            .ok_or_else(|| CallRefusal::new("invalid_payload", format!("{tool} is free")))?;
        // the Python SDK's MCP helper sends a JSON string as well
        let payload: PaymentPayload = match payment {
            serde_json::Value::String(s) => serde_json::from_str(s),
            v => serde_json::from_value(v.clone()),
        }
        .map_err(|e| {
            CallRefusal::new(
                "invalid_payload",
                format!("_meta[\"{PAYMENT_META}\"] is not an x402 payment payload: {e}"),
            )
        })?;
        if payload.x402_version != 2 {
            return Err(CallRefusal::new(
                "invalid_x402_version",
                "paid tool calls take x402 version 2 payments",
            ));
        }
        let ours = self.requirements(units);
        wire::matches_requirements(&payload, &ours)
            .map_err(|why| CallRefusal::new("no_matching_requirements", why))?;
        let mut tx = verify::decode(&payload.payload.transaction)
            .map_err(|r| CallRefusal::new(r.reason(), &r))?;
        let fee_payer = self.wallet.solana_keypair();
        let payer = verify::payer_of(&tx).ok_or_else(|| {
            let r = verify::Refusal::Signatures(1);
            CallRefusal::new(r.reason(), r)
        })?;
        // the mint as it is now: a transfer fee, a hook or a pause added
        // since the start would make this payment arrive short or fail
        let mint = self
            .reads
            .mint(&self.chain, &self.mint.address)
            .await
            .map_err(|e| CallRefusal::new("unsupported_mint", e))?;
        verify::check(
            &tx,
            &Expected {
                fee_payer: fee_payer.pubkey(),
                payer,
                mint,
                pay_to: self.pay_to,
                amount: units,
                memo: MemoRule::Nonce,
            },
        )
        .map_err(|r| {
            tracing::info!(%tool, %payer, reason = r.reason(), error = %r, "paid call: payment refused");
            CallRefusal::new(r.reason(), &r)
        })?;
        verify::cosign(&mut tx, &fee_payer);
        let signature = tx.signatures[0].to_string();
        let claim = Claim::take(self, &signature).ok_or_else(|| {
            CallRefusal::new(
                "settlement_pending",
                "this payment is being settled by another call; retry when that one answers",
            )
        })?;
        let (tool_name, payer_s, mint_s) = (
            tool.to_string(),
            payer.to_string(),
            self.mint.address.to_string(),
        );
        let (sig, owner) = (signature.clone(), self.owner.clone());
        let (state, fresh, claimed) = self
            .ledger(move |l| {
                let (state, fresh) =
                    l.record_sending(&sig, &tool_name, &payer_s, &mint_s, units)?;
                Ok((state, fresh, l.claim(&sig, &owner, CLAIM_LEASE_SECS)?))
            })
            .await?;
        if !claimed && matches!(state, CallState::Paid | CallState::Sending) {
            return Err(CallRefusal::new(
                "settlement_pending",
                "this payment is being settled by another process; retry when that one answers",
            ));
        }
        let claim = claim.durable();
        match state {
            CallState::Served => {
                return Err(CallRefusal::new(
                    "duplicate_settlement",
                    format!("payment {signature} already paid for a call that answered; pay again for another call"),
                ))
            }
            CallState::Failed => {
                return Err(CallRefusal::new(
                    "transaction_failed",
                    format!("payment {signature} landed failed; nothing was paid"),
                ))
            }
            // a payment this ledger never recorded that is on chain already
            // (another call's, copied from the chain, or one of a lost
            // ledger): it paid for something else, never for this call
            CallState::Sending if fresh && self.landed(&tx).await? => {
                let sig = signature.clone();
                self.ledger(move |l| l.forget_unsent(&sig)).await?;
                return Err(CallRefusal::new(
                    "duplicate_settlement",
                    format!("payment {signature} is already on chain: it paid for something else; pay again for this call"),
                ));
            }
            CallState::Paid | CallState::Sending => {}
        }
        Ok(Verified {
            calls: self,
            tool: tool.to_string(),
            tx,
            signature,
            payer,
            mint,
            units,
            state,
            fresh,
            claim,
        })
    }
}

/// A checked, claimed payment for one call, nothing sent yet: settled
/// once the call answered without error, or dropped (a payment this
/// ledger had not recorded before is forgotten: it stays the payer's, to
/// pay for another call).
pub struct Verified<'a> {
    calls: &'a PaidCalls,
    tool: String,
    tx: solana_sdk::transaction::VersionedTransaction,
    signature: String,
    payer: Pubkey,
    mint: TokenMint,
    units: u64,
    state: CallState,
    fresh: bool,
    claim: Claim<'a>,
}

impl<'a> Verified<'a> {
    /// The payment's signature.
    pub fn signature(&self) -> &str {
        &self.signature
    }

    /// The call did not answer (its arguments did not read, or it
    /// answered an error): nothing is sent, and a payment first recorded
    /// by this call is forgotten, so the same payment pays for another.
    pub async fn abandon(self) -> Result<(), CallRefusal> {
        if self.fresh && self.state == CallState::Sending {
            let sig = self.signature.clone();
            self.calls.ledger(move |l| l.forget_unsent(&sig)).await?;
        }
        tracing::info!(tool = %self.tool, payer = %self.payer, "paid call: the call did not answer; its payment was not sent");
        Ok(())
    }

    /// Sends and lands the payment (unless it landed before, for a call
    /// that never answered): the call it paid for answered.
    pub async fn settle(self) -> Result<Settled<'a>, CallRefusal> {
        let Verified {
            calls,
            tool,
            tx,
            signature,
            payer,
            mint,
            units,
            state,
            fresh,
            claim,
        } = self;
        let response = |success: bool, reason: Option<&str>| SettleResponse {
            success,
            transaction: if success {
                signature.clone()
            } else {
                String::new()
            },
            network: calls.network.clone(),
            payer: Some(payer.to_string()),
            error_reason: reason.map(String::from),
        };
        match state {
            CallState::Served | CallState::Failed | CallState::Paid => {}
            CallState::Sending => {
                let admission = calls
                    .guard
                    .admit(payer, verify::source_of(&tx).unwrap_or_default())
                    .map_err(|r| CallRefusal::new("settlement_refused", r))?;
                match calls.chain.send_cosigned(&tx).await {
                    Ok(_) => {
                        let arrived = calls.arrived(&signature, &mint).await?;
                        let sig = signature.clone();
                        if arrived < units {
                            admission.failed();
                            calls
                                .ledger(move |l| {
                                    l.advance(&sig, CallState::Sending, CallState::Failed)
                                })
                                .await?;
                            tracing::warn!(%tool, %payer, %signature, arrived, units, "paid call: the payment arrived short");
                            let mut r = CallRefusal::new(
                            "invalid_exact_svm_payload_amount_insufficient",
                            format!("payment {signature} landed, but {arrived} of {units} base units arrived at the payee (the mint withholds part of a transfer); the call does not run"),
                        );
                            r.settlement = Some(response(false, Some("amount_insufficient")));
                            return Err(r);
                        }
                        admission.landed();
                        calls
                            .ledger(move |l| l.advance(&sig, CallState::Sending, CallState::Paid))
                            .await?;
                        tracing::info!(%tool, %payer, %signature, units, "paid call: payment landed");
                    }
                    Err(e) => {
                        let landed_failed = matches!(e, ChainError::TxFailed { .. });
                        let never_sent = fresh && matches!(e, ChainError::Config(_));
                        if landed_failed {
                            admission.failed();
                        } else if never_sent {
                            admission.refused();
                        }
                        let sig = signature.clone();
                        calls
                            .ledger(move |l| {
                                if landed_failed {
                                    l.advance(&sig, CallState::Sending, CallState::Failed)
                                        .map(drop)
                                } else if never_sent {
                                    l.forget_unsent(&sig)
                                } else {
                                    Ok(())
                                }
                            })
                            .await?;
                        tracing::warn!(%tool, %payer, error = %e, "paid call: payment not settled");
                        let reason = if landed_failed || never_sent {
                            "transaction_failed"
                        } else {
                            // it may still land: the same payment sent again
                            // reconciles it
                            "settlement_pending"
                        };
                        let mut r = CallRefusal::new(reason, e);
                        r.settlement = Some(response(false, Some(reason)));
                        return Err(r);
                    }
                }
            }
        }
        Ok(Settled {
            calls,
            response: response(true, None),
            signature,
            _claim: claim,
        })
    }
}

impl PaidCalls {
    /// What payment `signature` (landed) delivered to the payee's account,
    /// by the transaction's token balances.
    async fn arrived(&self, signature: &str, mint: &TokenMint) -> Result<u64, CallRefusal> {
        let pending = |e: &dyn std::fmt::Display| {
            CallRefusal::new(
                "settlement_pending",
                format!("payment {signature} landed; reading what arrived failed ({e}): send the same payment again"),
            )
        };
        let sig = signature.parse().map_err(|e| pending(&e))?;
        let tx = self
            .chain
            .transaction(&sig)
            .await
            .map_err(|e| pending(&e))?
            .ok_or_else(|| pending(&"not found yet"))?;
        let account = associated_account(&self.pay_to, mint).to_string();
        Ok(tx
            .token_balances
            .iter()
            .find(|b| b.account == account)
            .map_or(0, |b| b.post.saturating_sub(b.pre)))
    }

    /// Whether `tx` (co-signed) is on chain already.
    async fn landed(
        &self,
        tx: &solana_sdk::transaction::VersionedTransaction,
    ) -> Result<bool, CallRefusal> {
        self.chain
            .status_landed(&tx.signatures[0])
            .await
            .map_err(|e| CallRefusal::new("unexpected_settle_error", e))
    }

    /// Runs `f` on the ledger, off the async threads.
    async fn ledger<T: Send + 'static>(
        &self,
        f: impl FnOnce(&CallLedger) -> Result<T, LedgerError> + Send + 'static,
    ) -> Result<T, CallRefusal> {
        let path = self.ledger_path.clone();
        tokio::task::spawn_blocking(move || CallLedger::open(&path).and_then(|l| f(&l)))
            .await
            .map_err(|e| CallRefusal::new("unexpected_settle_error", e))?
            .map_err(|e| {
                tracing::error!(error = %e, "paid call: ledger");
                CallRefusal::new("unexpected_settle_error", e)
            })
    }
}

/// A payment that landed; its call may run.
pub struct Settled<'a> {
    calls: &'a PaidCalls,
    /// What the result's `_meta["x402/payment-response"]` carries.
    pub response: SettleResponse,
    signature: String,
    _claim: Claim<'a>,
}

impl Settled<'_> {
    /// Records that the call answered (a later try with this payment is
    /// refused).
    pub async fn served(self) -> Result<(), CallRefusal> {
        let sig = self.signature.clone();
        self.calls
            .ledger(move |l| l.advance(&sig, CallState::Paid, CallState::Served))
            .await
            .map(drop)
    }
}

/// One request settling a payment; released when dropped (and its
/// ledger claim, once taken, with it).
struct Claim<'a> {
    calls: &'a PaidCalls,
    signature: String,
    durable: bool,
}

impl<'a> Claim<'a> {
    fn take(calls: &'a PaidCalls, signature: &str) -> Option<Claim<'a>> {
        let fresh = calls
            .in_flight
            .lock()
            .map(|mut s| s.insert(signature.to_string()))
            .unwrap_or(false);
        fresh.then(|| Claim {
            calls,
            signature: signature.to_string(),
            durable: false,
        })
    }

    /// The claim now holds the payment's ledger row too.
    fn durable(mut self) -> Self {
        self.durable = true;
        self
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if self.durable {
            // released off the async threads; if it never runs (the process
            // is killed), the claim lapses after its lease
            let (path, sig, owner) = (
                self.calls.ledger_path.clone(),
                self.signature.clone(),
                self.calls.owner.clone(),
            );
            let release = move || {
                if let Err(e) = CallLedger::open(&path).and_then(|l| l.release_claim(&sig, &owner))
                {
                    tracing::warn!(error = %e, signature = %sig, "paid call: releasing the ledger claim failed; it lapses");
                }
            };
            match tokio::runtime::Handle::try_current() {
                Ok(rt) => drop(rt.spawn_blocking(release)),
                Err(_) => release(),
            }
        }
        if let Ok(mut s) = self.calls.in_flight.lock() {
            s.remove(&self.signature);
        }
    }
}
