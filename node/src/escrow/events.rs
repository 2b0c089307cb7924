//! The escrow program's events, decoded from `Program data:` log lines
//! emitted while the program itself runs.

use super::{discriminator, PROGRAM_ID};
use crate::chain::anchor::Reader;
use base64::Engine;
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
        /// Lamports.
        amount: u64,
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

/// Decodes one `Program data: <base64>` log line of the program (`None`
/// for other lines, other programs' events or malformed data).
pub fn decode_event(log_line: &str) -> Option<EscrowEvent> {
    let b64 = log_line.strip_prefix("Program data: ")?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    let (disc, body) = bytes.split_at_checked(8)?;
    let mut r = Reader(body);
    let is = |name: &str| disc == discriminator("event", name);
    if is("SealedDeposited") {
        Some(EscrowEvent::Deposited {
            listing: r.key().ok()?,
            escrow: r.key().ok()?,
            buyer: r.key().ok()?,
            amount: r.u64().ok()?,
        })
    } else if is("KeyRevealed") {
        Some(EscrowEvent::Revealed {
            escrow: r.key().ok()?,
        })
    } else if is("DepositDeclined") {
        Some(EscrowEvent::Declined {
            escrow: r.key().ok()?,
        })
    } else if is("PaymentClaimed") {
        Some(EscrowEvent::Claimed {
            escrow: r.key().ok()?,
            to_seller: r.u64().ok()?,
            fee: r.u64().ok()?,
        })
    } else if is("SealedRefunded") {
        Some(EscrowEvent::Refunded {
            escrow: r.key().ok()?,
            amount: r.u64().ok()?,
            slashed: r.u64().ok()?,
        })
    } else if is("FraudProven") {
        Some(EscrowEvent::FraudProven {
            escrow: r.key().ok()?,
            index: r.u32().ok()?,
            amount: r.u64().ok()?,
            slashed: r.u64().ok()?,
        })
    } else if is("EscrowExpired") {
        Some(EscrowEvent::Expired {
            escrow: r.key().ok()?,
            slashed: r.u64().ok()?,
        })
    } else if is("UsdQuoted") {
        usd_quote(&mut r).map(EscrowEvent::UsdQuoted)
    } else {
        ["SealedListed", "SealedRetired"]
            .into_iter()
            .find(|n| is(n))
            .map(EscrowEvent::Other)
    }
}

/// The program's events in a transaction's logs, in order: only `Program
/// data:` lines emitted while the escrow program is the innermost running
/// program count (another program logging the same bytes is ignored).
pub fn events_in_logs(logs: &[String]) -> Vec<EscrowEvent> {
    let mut stack: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for line in logs {
        if let Some(rest) = line.strip_prefix("Program ") {
            let mut words = rest.split(' ');
            let (id, verb) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
            match verb {
                "invoke" => {
                    stack.push(id);
                    continue;
                }
                "success" | "failed:" => {
                    if stack.last() == Some(&id) {
                        stack.pop();
                    }
                    continue;
                }
                _ => {}
            }
        }
        if stack.last() == Some(&PROGRAM_ID) {
            out.extend(decode_event(line));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn data_line(name: &str, body: &[u8]) -> String {
        let mut b = discriminator("event", name).to_vec();
        b.extend_from_slice(body);
        format!(
            "Program data: {}",
            base64::engine::general_purpose::STANDARD.encode(b)
        )
    }

    #[test]
    fn only_the_escrow_programs_own_data_lines_count() {
        let escrow = Pubkey::new_unique();
        let mut body = escrow.to_bytes().to_vec();
        body.extend_from_slice(&9u64.to_le_bytes());
        body.extend_from_slice(&4u64.to_le_bytes());
        let refunded = data_line("SealedRefunded", &body);
        let other = "Evi1111111111111111111111111111111111111111";
        let logs: Vec<String> = [
            format!("Program {other} invoke [1]"),
            refunded.clone(),
            format!("Program {other} success"),
            format!("Program {PROGRAM_ID} invoke [1]"),
            "Program 11111111111111111111111111111111 invoke [2]".to_string(),
            refunded.clone(),
            "Program 11111111111111111111111111111111 success".to_string(),
            refunded.clone(),
            format!("Program {PROGRAM_ID} success"),
            refunded,
        ]
        .into();
        assert_eq!(
            events_in_logs(&logs),
            vec![EscrowEvent::Refunded {
                escrow,
                amount: 9,
                slashed: 4
            }],
            "forged by another program, inside a CPI, or after return: ignored"
        );
    }

    #[test]
    fn hostile_event_data_decodes_to_none() {
        assert_eq!(decode_event("Program log: hi"), None);
        assert_eq!(decode_event("Program data: !!!"), None);
        let mut short = discriminator("event", "PaymentClaimed").to_vec();
        short.extend_from_slice(&[0; 32]);
        short.extend_from_slice(&[1; 7]);
        let line = format!(
            "Program data: {}",
            base64::engine::general_purpose::STANDARD.encode(&short)
        );
        assert_eq!(decode_event(&line), None, "truncated amounts refused");
    }
}
