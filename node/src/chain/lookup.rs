//! Address lookup tables and v0 messages: a table names up to 256
//! accounts by one byte each, so a transaction that names the same
//! accounts every time (a release's compression trees, pools and program
//! authorities) holds more instructions in its 1,232 bytes.
//!
//! Owns the instructions that create and extend a table, reading one
//! back, and compiling a message (v0 against tables, legacy without);
//! never decides which accounts a table holds (its caller does) and never
//! sends.

use super::{Chain, ChainError};
use solana_address_lookup_table_interface::{instruction as alt, state::AddressLookupTable};
use solana_sdk::hash::Hash;
use solana_sdk::instruction::Instruction;
use solana_sdk::message::{v0, VersionedMessage};
use solana_sdk::pubkey::Pubkey;

pub use solana_sdk::message::AddressLookupTableAccount;

/// Addresses one extend instruction adds beside a create in one
/// transaction (each is 32 bytes of instruction data).
pub const ADDRESSES_PER_EXTEND: usize = 20;

/// The table `authority` creates at `recent_slot` (a slot the cluster
/// still holds among its recent slot hashes), and the instructions that
/// create it and add `addresses` (at most [`ADDRESSES_PER_EXTEND`];
/// `authority` pays). The table is usable from the slot after.
pub fn create(
    authority: &Pubkey,
    recent_slot: u64,
    addresses: Vec<Pubkey>,
) -> (Pubkey, Vec<Instruction>) {
    let (create, table) = alt::create_lookup_table(*authority, *authority, recent_slot);
    let mut ixs = vec![create];
    if !addresses.is_empty() {
        ixs.push(extend(&table, authority, addresses));
    }
    (table, ixs)
}

/// Adds `addresses` to `table` (`authority` pays the rent).
pub fn extend(table: &Pubkey, authority: &Pubkey, addresses: Vec<Pubkey>) -> Instruction {
    alt::extend_lookup_table(*table, *authority, Some(*authority), addresses)
}

/// The table at `address` as a message compiles against it, read at
/// `commitment`, or `None` when there is none, it is not a lookup table,
/// or it was deactivated. A leader loads a transaction's tables from its
/// root bank and drops one naming a table (or addresses) it does not hold
/// there yet: a table is safe to send against once read at `finalized`.
pub async fn read(
    chain: &Chain,
    address: &Pubkey,
    commitment: solana_commitment_config::CommitmentConfig,
) -> Result<Option<AddressLookupTableAccount>, ChainError> {
    let got = super::retry::with_retry("getAccountInfo", || {
        chain.rpc().get_account_with_commitment(address, commitment)
    })
    .await?;
    let Some(account) = got.value else {
        return Ok(None);
    };
    if account.owner != solana_address_lookup_table_interface::program::id() {
        return Ok(None);
    }
    // a deactivated table (being closed) takes no new lookups
    Ok(AddressLookupTable::deserialize(&account.data)
        .ok()
        .filter(|t| t.meta.deactivation_slot == u64::MAX)
        .map(|t| AddressLookupTableAccount {
            key: *address,
            addresses: t.addresses.to_vec(),
        }))
}

/// `ixs` paid by `payer` as a message: v0 against `tables` when it names
/// an account one holds (program ids and signers stay in the message
/// itself), legacy otherwise (a v0 message naming none is 2 bytes longer).
pub fn message(
    ixs: &[Instruction],
    payer: &Pubkey,
    tables: &[AddressLookupTableAccount],
    blockhash: Hash,
) -> Result<VersionedMessage, ChainError> {
    let legacy = || {
        VersionedMessage::Legacy(solana_sdk::message::Message::new_with_blockhash(
            ixs,
            Some(payer),
            &blockhash,
        ))
    };
    if tables.is_empty() {
        return Ok(legacy());
    }
    let v0 = v0::Message::try_compile(payer, ixs, tables, blockhash)
        .map_err(|e| ChainError::Config(format!("a v0 message does not compile: {e}")))?;
    // naming nothing a table holds, v0 only adds bytes: legacy then
    Ok(match v0.address_table_lookups.is_empty() {
        true => legacy(),
        false => VersionedMessage::V0(v0),
    })
}

/// The wire size of `ixs` signed by `signers` with `payer` paying, as
/// [`message`] compiles it (`usize::MAX` when it does not compile).
pub fn wire_size(
    ixs: &[Instruction],
    payer: &Pubkey,
    signers: usize,
    tables: &[AddressLookupTableAccount],
) -> usize {
    match message(ixs, payer, tables, Hash::default()) {
        Ok(m) => {
            let required = usize::from(m.header().num_required_signatures);
            1 + 64 * signers.max(required) + m.serialize().len()
        }
        Err(_) => usize::MAX,
    }
}

/// Whether `ixs` (signed by `signers`, `payer` paying) fit one packet as
/// [`message`] compiles them against `tables`.
pub fn fits(
    ixs: &[Instruction],
    payer: &Pubkey,
    signers: usize,
    tables: &[AddressLookupTableAccount],
) -> bool {
    wire_size(ixs, payer, signers, tables) <= super::priority::PACKET
}

#[cfg(test)]
mod tests {
    use super::*;
    use solana_sdk::instruction::AccountMeta;

    /// A table shortens exactly the accounts it holds, never programs or
    /// signers, and with none the message is the legacy one.
    #[test]
    fn a_table_names_its_accounts_in_one_byte() {
        let payer = Pubkey::new_unique();
        let program = Pubkey::new_unique();
        let statics: Vec<Pubkey> = (0..10).map(|_| Pubkey::new_unique()).collect();
        let ix = Instruction::new_with_bytes(
            program,
            &[1, 2, 3],
            statics
                .iter()
                .map(|k| AccountMeta::new(*k, false))
                .chain([AccountMeta::new(payer, true)])
                .collect(),
        );
        let legacy = wire_size(std::slice::from_ref(&ix), &payer, 1, &[]);
        let m = solana_sdk::message::Message::new(std::slice::from_ref(&ix), Some(&payer));
        assert_eq!(legacy, 1 + 64 + m.serialize().len());
        let table = AddressLookupTableAccount {
            key: Pubkey::new_unique(),
            // the program and the payer in the table too: they stay static
            addresses: statics.iter().copied().chain([program, payer]).collect(),
        };
        let v0 = wire_size(
            std::slice::from_ref(&ix),
            &payer,
            1,
            std::slice::from_ref(&table),
        );
        // 10 keys of 32 bytes become 10 indexes; the table's address, its
        // two index lists' lengths and the version byte are added
        assert_eq!(legacy - v0, 10 * 32 - (32 + 10 + 2 + 1 + 1));
        let VersionedMessage::V0(m) = message(&[ix], &payer, &[table], Hash::default()).unwrap()
        else {
            panic!("a v0 message")
        };
        assert!(m.account_keys.contains(&program) && m.account_keys.contains(&payer));
        // naming nothing the table holds: legacy, not 2 bytes longer
        let other = Instruction::new_with_bytes(program, &[1], vec![AccountMeta::new(payer, true)]);
        let unrelated = AddressLookupTableAccount {
            key: Pubkey::new_unique(),
            addresses: vec![Pubkey::new_unique()],
        };
        assert!(matches!(
            message(&[other], &payer, &[unrelated], Hash::default()).unwrap(),
            VersionedMessage::Legacy(_)
        ));
    }
}
