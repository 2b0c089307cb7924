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
    /// Another event of the program (listing created or retired).
    Other(&'static str),
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
