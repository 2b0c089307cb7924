//! Making the Token-2022-owned account a mint (or an NFT's token account)
//! lives in, at an address a stranger may have sent lamports to first.
//!
//! Anyone can send lamports to an address once it is public (an envelope
//! names the mint before the mint lands), and `create_account` refuses an
//! address that holds lamports. So this module reads what is at the address
//! ([`AddressState`]) and gives the instructions that end with an account
//! of the right size, owner and rent either way: `create_account` when it
//! is empty; top-up + `allocate` + `assign` around parked lamports (these
//! need the address's own signature, or the base key's for a seeded
//! address, so nobody else can do them); only a top-up when an earlier
//! transaction of ours already prepared it.
//!
//! It never initializes the mint or token account: that is the token
//! program's instructions, built in `token2022` and `light`.

use crate::chain::{Chain, ChainError};
use solana_sdk::instruction::Instruction;
use solana_sdk::pubkey::Pubkey;
use solana_system_interface::instruction as system;
use spl_token_2022_interface::ID as TOKEN_2022;

/// How the address is derived, which decides who signs its creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Derivation<'a> {
    /// A keypair address: the address itself signs.
    Keypair,
    /// `create_with_seed(payer, seed, Token-2022)`: the payer signs.
    Seeded(&'a str),
}

/// What is at the address now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressState {
    /// Nothing: `create_account` works.
    Empty,
    /// An empty System account holding lamports someone sent.
    Parked(u64),
    /// Owned by Token-2022, of the expected size, all zero bytes: made by
    /// an earlier transaction of ours (only our signature can assign it),
    /// not yet initialized.
    Prepared(u64),
    /// Anything else (already initialized, another owner or size): the
    /// mint builders refuse to send ([`ChainError::AccountExists`]; a
    /// `create_account` would fail on chain anyway, so a retried mint can
    /// never mint twice).
    Taken,
}

impl AddressState {
    /// What `account` (or its absence) is, for an account of `space` bytes.
    pub fn of(account: Option<&solana_sdk::account::Account>, space: u64) -> AddressState {
        let Some(a) = account else {
            return AddressState::Empty;
        };
        let system = solana_system_interface::program::ID;
        if a.owner == system && a.data.is_empty() {
            return if a.lamports == 0 {
                AddressState::Empty
            } else {
                AddressState::Parked(a.lamports)
            };
        }
        if a.owner == TOKEN_2022 && a.data.len() as u64 == space && a.data.iter().all(|b| *b == 0) {
            return AddressState::Prepared(a.lamports);
        }
        AddressState::Taken
    }

    /// Whether the account must be prepared in a transaction of its own
    /// first (the instructions around parked lamports don't fit a release
    /// packet when both of an NFT's accounts had lamports parked).
    pub fn is_parked(self) -> bool {
        matches!(self, AddressState::Parked(_))
    }

    /// The state once [`instructions`] for it landed.
    pub fn after_setup(self, rent: u64) -> AddressState {
        match self {
            AddressState::Parked(l) | AddressState::Prepared(l) => {
                AddressState::Prepared(l.max(rent))
            }
            other => other,
        }
    }
}

/// [`ChainError::AccountExists`] when `state` is [`AddressState::Taken`]:
/// what a mint builder checks before it sends.
pub fn refuse_taken(address: &Pubkey, state: AddressState) -> Result<(), ChainError> {
    match state {
        AddressState::Taken => Err(ChainError::AccountExists {
            address: address.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Reads what is at `address` for an account of `space` bytes.
pub async fn address_state(
    chain: &Chain,
    address: &Pubkey,
    space: u64,
) -> Result<AddressState, ChainError> {
    let acct = crate::chain::retry::with_retry("getAccountInfo", || {
        chain
            .rpc()
            .get_account_with_commitment(address, chain.commitment())
    })
    .await?;
    Ok(AddressState::of(acct.value.as_ref(), space))
}

/// The instructions that leave `address` a Token-2022 account of `space`
/// bytes holding at least `rent`, given what is there (`state`).
pub fn instructions(
    payer: &Pubkey,
    address: &Pubkey,
    derivation: Derivation<'_>,
    rent: u64,
    space: u64,
    state: AddressState,
) -> Vec<Instruction> {
    let top_up = |held: u64| (rent > held).then(|| system::transfer(payer, address, rent - held));
    match (state, derivation) {
        (AddressState::Empty | AddressState::Taken, Derivation::Keypair) => {
            vec![system::create_account(
                payer,
                address,
                rent,
                space,
                &TOKEN_2022,
            )]
        }
        (AddressState::Empty | AddressState::Taken, Derivation::Seeded(seed)) => {
            vec![system::create_account_with_seed(
                payer,
                address,
                payer,
                seed,
                rent,
                space,
                &TOKEN_2022,
            )]
        }
        (AddressState::Parked(held), Derivation::Keypair) => top_up(held)
            .into_iter()
            .chain([
                system::allocate(address, space),
                system::assign(address, &TOKEN_2022),
            ])
            .collect(),
        (AddressState::Parked(held), Derivation::Seeded(seed)) => top_up(held)
            .into_iter()
            .chain([
                system::allocate_with_seed(address, payer, seed, space, &TOKEN_2022),
                system::assign_with_seed(address, payer, seed, &TOKEN_2022),
            ])
            .collect(),
        (AddressState::Prepared(held), _) => top_up(held).into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use solana_sdk::account::Account;

    fn account(owner: Pubkey, lamports: u64, data: Vec<u8>) -> Account {
        Account {
            lamports,
            data,
            owner,
            executable: false,
            rent_epoch: 0,
        }
    }

    #[test]
    fn what_is_at_an_address_decides_the_instructions() {
        let system = solana_system_interface::program::ID;
        assert_eq!(AddressState::of(None, 82), AddressState::Empty);
        assert_eq!(
            AddressState::of(Some(&account(system, 5, vec![])), 82),
            AddressState::Parked(5)
        );
        assert_eq!(
            AddressState::of(Some(&account(TOKEN_2022, 9, vec![0; 82])), 82),
            AddressState::Prepared(9)
        );
        // initialized, another size or another owner: taken
        let mut init = vec![0; 82];
        init[45] = 1;
        for a in [
            account(TOKEN_2022, 9, init),
            account(TOKEN_2022, 9, vec![0; 165]),
            account(Pubkey::new_unique(), 9, vec![0; 82]),
            account(system, 9, vec![1]),
        ] {
            assert_eq!(AddressState::of(Some(&a), 82), AddressState::Taken);
        }

        let (payer, addr) = (Pubkey::new_unique(), Pubkey::new_unique());
        let ixs = |d, s| instructions(&payer, &addr, d, 100, 82, s);
        let seeded = Derivation::Seeded("seed");
        assert_eq!(ixs(seeded, AddressState::Empty).len(), 1);
        assert_eq!(ixs(Derivation::Keypair, AddressState::Taken).len(), 1);
        // parked below rent: top-up, allocate, assign; at or above: no top-up
        assert_eq!(ixs(seeded, AddressState::Parked(1)).len(), 3);
        assert_eq!(ixs(Derivation::Keypair, AddressState::Parked(100)).len(), 2);
        // prepared: a top-up at most
        assert_eq!(ixs(seeded, AddressState::Prepared(1)).len(), 1);
        assert!(ixs(seeded, AddressState::Prepared(100)).is_empty());
        assert_eq!(
            AddressState::Parked(1).after_setup(100),
            AddressState::Prepared(100)
        );
        assert_eq!(AddressState::Empty.after_setup(100), AddressState::Empty);
    }
}
