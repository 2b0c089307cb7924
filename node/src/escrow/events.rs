//! The escrow program's events, decoded from the self-CPIs it emits them
//! by (Anchor's `emit_cpi!`): inner instructions of a transaction, never
//! its logs.

use super::{discriminator, PROGRAM_ID};
use crate::chain::anchor::Reader;
use crate::chain::ParsedTx;
use solana_sdk::pubkey::Pubkey;

/// An event the program emitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EscrowEvent {
    /// A buyer deposited.
    Deposited {
        /// Listing account.
        listing: Pubkey,
        /// Escrow account.
        escrow: Pubkey,
        /// Buyer.
        buyer: Pubkey,
        /// Held: lamports, or base units of `mint`.
        amount: u64,
        /// The listing's token (the default key: SOL).
        mint: Pubkey,
        /// Unix seconds of the deposit.
        deposited_at: i64,
    },
    /// The seller revealed s.
    Revealed {
        /// Escrow account.
        escrow: Pubkey,
    },
    /// The seller declined the deposit.
    Declined {
        /// Escrow account.
        escrow: Pubkey,
    },
    /// The seller was paid.
    Claimed {
        /// Escrow account.
        escrow: Pubkey,
        /// Paid to the seller.
        to_seller: u64,
        /// Paid to the treasury.
        fee: u64,
    },
    /// The buyer closed its escrow (deposit and slash, when owed).
    Refunded {
        /// Escrow account.
        escrow: Pubkey,
        /// Deposit returned.
        amount: u64,
        /// Stake paid.
        slashed: u64,
    },
    /// A fraud proof held.
    FraudProven {
        /// Escrow account.
        escrow: Pubkey,
        /// The lying chunk.
        index: u32,
        /// Deposit returned.
        amount: u64,
        /// Stake paid.
        slashed: u64,
    },
    /// Anyone expired a deposit left past its window (or a reveal on a
    /// convicted listing): the share moved into the escrow for the buyer.
    Expired {
        /// Escrow account.
        escrow: Pubkey,
        /// Stake moved into the escrow.
        slashed: u64,
    },
    /// A buy's conversion of a listing's USD at its slot (`quote_usd`).
    UsdQuoted(UsdQuote),
    /// Another event of the program (listing created or retired).
    Other(&'static str),
}

/// What `quote_usd` converted, with the price and the rule it applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct UsdQuote {
    /// The price account read.
    pub price_update: Pubkey,
    /// Its feed.
    #[serde(serialize_with = "crate::crypto::hex32::serialize")]
    pub feed_id: [u8; 32],
    /// Its price (× 10^exponent USD per whole unit).
    pub price: i64,
    /// Its confidence.
    pub conf: u64,
    /// Its exponent.
    pub exponent: i32,
    /// When it was published (unix seconds).
    pub publish_time: i64,
    /// The micro-dollars converted.
    pub usd_micros: u64,
    /// The currency's decimals.
    pub decimals: u8,
    /// The oldest price the quote took.
    pub max_age_secs: u32,
    /// The widest confidence it took (bps).
    pub max_conf_bps: u16,
    /// Base units owed.
    pub units: u64,
}

impl EscrowEvent {
    /// The inner instruction by which the program emits this event (the
    /// inverse of [`events_in`]; for tests and synthetic logs).
    pub fn emitted(&self) -> crate::chain::ProgramCall {
        let mut b: Vec<u8> = Vec::new();
        let name = match self {
            EscrowEvent::Deposited {
                listing,
                escrow,
                buyer,
                amount,
                mint,
                deposited_at,
            } => {
                for k in [listing, escrow, buyer] {
                    b.extend_from_slice(k.as_ref());
                }
                b.extend_from_slice(&amount.to_le_bytes());
                b.extend_from_slice(mint.as_ref());
                b.extend_from_slice(&deposited_at.to_le_bytes());
                "SealedDeposited"
            }
            EscrowEvent::Revealed { escrow } => {
                b.extend_from_slice(escrow.as_ref());
                b.extend_from_slice(&[0; 32]);
                "KeyRevealed"
            }
            EscrowEvent::Declined { escrow } => {
                b.extend_from_slice(escrow.as_ref());
                "DepositDeclined"
            }
            EscrowEvent::Claimed {
                escrow,
                to_seller,
                fee,
            } => {
                b.extend_from_slice(escrow.as_ref());
                b.extend_from_slice(&to_seller.to_le_bytes());
                b.extend_from_slice(&fee.to_le_bytes());
                "PaymentClaimed"
            }
            EscrowEvent::Refunded {
                escrow,
                amount,
                slashed,
            } => {
                b.extend_from_slice(escrow.as_ref());
                b.extend_from_slice(&amount.to_le_bytes());
                b.extend_from_slice(&slashed.to_le_bytes());
                "SealedRefunded"
            }
            EscrowEvent::FraudProven {
                escrow,
                index,
                amount,
                slashed,
            } => {
                b.extend_from_slice(escrow.as_ref());
                b.extend_from_slice(&index.to_le_bytes());
                b.extend_from_slice(&amount.to_le_bytes());
                b.extend_from_slice(&slashed.to_le_bytes());
                "FraudProven"
            }
            EscrowEvent::Expired { escrow, slashed } => {
                b.extend_from_slice(escrow.as_ref());
                b.extend_from_slice(&slashed.to_le_bytes());
                "EscrowExpired"
            }
            EscrowEvent::UsdQuoted(q) => {
                b.extend_from_slice(q.price_update.as_ref());
                b.extend_from_slice(&q.feed_id);
                b.extend_from_slice(&q.price.to_le_bytes());
                b.extend_from_slice(&q.conf.to_le_bytes());
                b.extend_from_slice(&q.exponent.to_le_bytes());
                b.extend_from_slice(&q.publish_time.to_le_bytes());
                b.extend_from_slice(&q.usd_micros.to_le_bytes());
                b.push(q.decimals);
                b.extend_from_slice(&q.max_age_secs.to_le_bytes());
                b.extend_from_slice(&q.max_conf_bps.to_le_bytes());
                b.extend_from_slice(&q.units.to_le_bytes());
                "UsdQuoted"
            }
            EscrowEvent::Other(name) => name,
        };
        emitted(name, &b)
    }
}

fn usd_quote(r: &mut Reader<'_>) -> Option<UsdQuote> {
    let i64_of = |b: &[u8]| i64::from_le_bytes(b.try_into().expect("8 bytes"));
    Some(UsdQuote {
        price_update: r.key().ok()?,
        feed_id: r.take(32).ok()?.try_into().ok()?,
        price: i64_of(r.take(8).ok()?),
        conf: r.u64().ok()?,
        exponent: i32::from_le_bytes(r.take(4).ok()?.try_into().ok()?),
        publish_time: i64_of(r.take(8).ok()?),
        usd_micros: r.u64().ok()?,
        decimals: r.u8().ok()?,
        max_age_secs: r.u32().ok()?,
        max_conf_bps: u16::from_le_bytes(r.take(2).ok()?.try_into().ok()?),
        units: r.u64().ok()?,
    })
}

/// Anchor's tag of an event self-CPI's data (`EVENT_IX_TAG`, little
/// endian): the event's discriminator and body follow it.
pub const EVENT_IX_TAG: [u8; 8] = 0x1d9a_cb51_2ea5_45e4u64.to_le_bytes();

/// Decodes one event: its discriminator and Borsh body (`None` for
/// another program's event or malformed data).
pub fn decode_event(bytes: &[u8]) -> Option<EscrowEvent> {
    let (disc, body) = bytes.split_at_checked(8)?;
    let mut r = Reader(body);
    let is = |name: &str| disc == discriminator("event", name);
    let event = if is("SealedDeposited") {
        EscrowEvent::Deposited {
            listing: r.key().ok()?,
            escrow: r.key().ok()?,
            buyer: r.key().ok()?,
            amount: r.u64().ok()?,
            mint: r.key().ok()?,
            deposited_at: i64::from_le_bytes(r.take(8).ok()?.try_into().ok()?),
        }
    } else if is("KeyRevealed") {
        EscrowEvent::Revealed {
            escrow: r.key().ok()?,
        }
    } else if is("DepositDeclined") {
        EscrowEvent::Declined {
            escrow: r.key().ok()?,
        }
    } else if is("PaymentClaimed") {
        EscrowEvent::Claimed {
            escrow: r.key().ok()?,
            to_seller: r.u64().ok()?,
            fee: r.u64().ok()?,
        }
    } else if is("SealedRefunded") {
        EscrowEvent::Refunded {
            escrow: r.key().ok()?,
            amount: r.u64().ok()?,
            slashed: r.u64().ok()?,
        }
    } else if is("FraudProven") {
        EscrowEvent::FraudProven {
            escrow: r.key().ok()?,
            index: r.u32().ok()?,
            amount: r.u64().ok()?,
            slashed: r.u64().ok()?,
        }
    } else if is("EscrowExpired") {
        EscrowEvent::Expired {
            escrow: r.key().ok()?,
            slashed: r.u64().ok()?,
        }
    } else if is("UsdQuoted") {
        EscrowEvent::UsdQuoted(usd_quote(&mut r)?)
    } else {
        return ["SealedListed", "SealedRetired"]
            .into_iter()
            .find(|n| is(n))
            .map(EscrowEvent::Other);
    };
    Some(event)
}

/// The inner instruction by which the program emits event `name` with
/// Borsh `body`, as a transaction records it (what [`events_in`] reads;
/// for tests and synthetic logs).
pub fn emitted(name: &str, body: &[u8]) -> crate::chain::ProgramCall {
    let mut data = EVENT_IX_TAG.to_vec();
    data.extend_from_slice(&discriminator("event", name));
    data.extend_from_slice(body);
    crate::chain::ProgramCall {
        program_id: PROGRAM_ID.into(),
        accounts: vec![super::event_authority_address().to_string()],
        data,
    }
}

/// The program's events in a transaction, in order: its self-CPIs
/// (inner instructions to the program, signed by its event authority,
/// data opening with [`EVENT_IX_TAG`]). The program refuses such a call
/// unless its event authority signed, which only the program itself can
/// do, so in a successful transaction each one is an event it emitted;
/// inner instructions are recorded whole, so no log flood hides one.
/// The caller reads only successful transactions.
pub fn events_in(tx: &ParsedTx) -> Vec<EscrowEvent> {
    let authority = super::event_authority_address().to_string();
    tx.inner_calls
        .iter()
        .filter(|c| c.program_id == PROGRAM_ID && c.accounts == [authority.as_str()])
        .filter_map(|c| decode_event(c.data.strip_prefix(&EVENT_IX_TAG)?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::ProgramCall;

    fn call(program: &str, accounts: &[String], data: Vec<u8>) -> ProgramCall {
        ProgramCall {
            program_id: program.into(),
            accounts: accounts.to_vec(),
            data,
        }
    }

    #[test]
    fn only_the_programs_own_self_cpis_count() {
        let escrow = Pubkey::new_unique();
        let mut body = escrow.to_bytes().to_vec();
        body.extend_from_slice(&9u64.to_le_bytes());
        body.extend_from_slice(&4u64.to_le_bytes());
        let refunded = emitted("SealedRefunded", &body).data;
        let authority = vec![super::super::event_authority_address().to_string()];
        let someone = vec![Pubkey::new_unique().to_string()];
        let other = "Evi1111111111111111111111111111111111111111";
        let tx = ParsedTx {
            inner_calls: vec![
                call(other, &authority, refunded.clone()),
                call(PROGRAM_ID, &someone, refunded.clone()),
                call(PROGRAM_ID, &authority, refunded[8..].to_vec()),
                call(PROGRAM_ID, &authority, refunded),
            ],
            ..ParsedTx::default()
        };
        assert_eq!(
            events_in(&tx),
            vec![EscrowEvent::Refunded {
                escrow,
                amount: 9,
                slashed: 4
            }],
            "another program's, another signer's, or untagged: ignored"
        );
    }

    #[test]
    fn every_event_round_trips_through_its_self_cpi() {
        let k = Pubkey::new_unique;
        let events = vec![
            EscrowEvent::Deposited {
                listing: k(),
                escrow: k(),
                buyer: k(),
                amount: u64::MAX - 1,
                mint: k(),
                deposited_at: -3,
            },
            EscrowEvent::Revealed { escrow: k() },
            EscrowEvent::Declined { escrow: k() },
            EscrowEvent::Claimed {
                escrow: k(),
                to_seller: 4,
                fee: 5,
            },
            EscrowEvent::Refunded {
                escrow: k(),
                amount: 6,
                slashed: 7,
            },
            EscrowEvent::FraudProven {
                escrow: k(),
                index: 8,
                amount: 9,
                slashed: 10,
            },
            EscrowEvent::Expired {
                escrow: k(),
                slashed: 11,
            },
            EscrowEvent::UsdQuoted(UsdQuote {
                price_update: k(),
                feed_id: [12; 32],
                price: -13,
                conf: 14,
                exponent: -8,
                publish_time: 15,
                usd_micros: 16,
                decimals: 6,
                max_age_secs: 17,
                max_conf_bps: 18,
                units: 19,
            }),
            EscrowEvent::Other("SealedRetired"),
        ];
        let tx = ParsedTx {
            inner_calls: events.iter().map(EscrowEvent::emitted).collect(),
            ..ParsedTx::default()
        };
        assert_eq!(events_in(&tx), events);
    }

    #[test]
    fn hostile_event_data_decodes_to_none() {
        assert_eq!(decode_event(b"hi"), None);
        let mut short = discriminator("event", "PaymentClaimed").to_vec();
        short.extend_from_slice(&[0; 32]);
        short.extend_from_slice(&[1; 7]);
        assert_eq!(decode_event(&short), None, "truncated amounts refused");
        let mut deposit = discriminator("event", "SealedDeposited").to_vec();
        deposit.extend_from_slice(&[7; 3 * 32 + 8]);
        assert_eq!(
            decode_event(&deposit),
            None,
            "a deposit that does not say its mint and time is refused"
        );
    }
}
