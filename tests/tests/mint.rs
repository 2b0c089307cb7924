//! Token-2022 NFT minting on a real validator: exactly one unit to the
//! recipient, the metadata URI on the mint, supply frozen at 1, and a
//! retried mint with the same seed refused (by the builder, which sees the
//! mint, and by the chain itself when sent anyway).

use e2e::{runtime, validator};
use node::chain::{ChainError, Keypair, Pubkey, Signer};
use node::mint::account_setup::AddressState;
use node::mint::token2022::{
    mint_address, mint_nft, nft_instructions, read_nft, seed_from, NftAddresses, NftSpec,
    TOKEN_2022,
};

fn spec(name: &str) -> NftSpec {
    NftSpec {
        name: name.into(),
        symbol: "BRNDL".into(),
        uri: "ar://METADATAidMETADATAidMETADATAidMETADATA0".into(),
    }
}

/// A stranger sends `lamports` to each of `addresses` (as anyone can,
/// once an envelope names them).
fn park(v: &e2e::TestValidator, addresses: &[Pubkey], lamports: u64) {
    let stranger = v.funded_keypair(1);
    let ixs: Vec<_> = addresses
        .iter()
        .map(|a| node::chain::instructions::transfer(&stranger.pubkey(), a, lamports))
        .collect();
    runtime()
        .block_on(v.chain().send(&ixs, &[&stranger]))
        .unwrap();
}

#[test]
fn nft_mint_is_exactly_once_and_supply_is_fixed() {
    let v = validator();
    let rt = runtime();
    let chain = v.chain();
    let seller = v.funded_keypair(2);
    let buyer = Keypair::new();
    let spec = spec("brainctl bundle");
    let seed = seed_from(b"buy signature 1");
    let minted = rt
        .block_on(mint_nft(
            &chain,
            &seller,
            &seed,
            &buyer.pubkey(),
            &spec,
            vec![],
        ))
        .unwrap();
    assert_eq!(
        minted.mint,
        mint_address(&seller.pubkey(), &seed).unwrap(),
        "address known before sending"
    );

    let state = rt
        .block_on(read_nft(&chain, &minted.mint, &minted.token_account))
        .unwrap();
    assert_eq!(state.holder_amount, 1);
    assert_eq!(
        state.holder,
        buyer.pubkey(),
        "the buyer owns the token account"
    );
    assert_eq!(state.mint.supply, 1);
    assert_eq!(state.mint.decimals, 0);
    assert_eq!(state.mint.mint_authority, None, "mint authority revoked");
    assert_eq!(state.mint.uri, spec.uri);
    assert_eq!(state.mint.name, spec.name);
    assert_eq!(
        state.mint.metadata_address,
        Some(minted.mint),
        "metadata lives in the mint"
    );

    // the same seed again: the builder sees the mint and sends nothing
    let again = rt.block_on(mint_nft(
        &chain,
        &seller,
        &seed,
        &buyer.pubkey(),
        &spec,
        vec![],
    ));
    assert!(
        matches!(&again, Err(ChainError::AccountExists { address }) if *address == minted.mint.to_string()),
        "{again:?}"
    );
    // and sent anyway (a stale read of the address), the chain refuses it
    let at = NftAddresses::derive(&seller.pubkey(), &seed, &buyer.pubkey(), &spec).unwrap();
    let fresh = [AddressState::Empty, AddressState::Empty];
    let stale = nft_instructions(
        &seller.pubkey(),
        &at,
        &buyer.pubkey(),
        &spec,
        [10_000_000; 2],
        fresh,
    )
    .unwrap();
    let sent = rt.block_on(chain.send(&stale, &[&seller]));
    assert!(
        matches!(
            sent,
            Err(ChainError::Rpc { .. } | ChainError::TxFailed { .. })
        ),
        "{sent:?}"
    );
    assert_eq!(
        rt.block_on(read_nft(&chain, &minted.mint, &minted.token_account))
            .unwrap()
            .mint
            .supply,
        1
    );

    // the old authority cannot mint more
    let more = spl_token_2022_interface::instruction::mint_to(
        &TOKEN_2022,
        &minted.mint,
        &minted.token_account,
        &seller.pubkey(),
        &[],
        1,
    )
    .unwrap();
    assert!(
        rt.block_on(chain.send(&[more], &[&seller])).is_err(),
        "supply can't grow"
    );
    assert_eq!(
        rt.block_on(read_nft(&chain, &minted.mint, &minted.token_account))
            .unwrap()
            .mint
            .supply,
        1
    );
}

/// A release's trailing instructions at their longest (the `release`
/// memo and the discovery reference), so the mint is tested at the size
/// `listen` sends.
fn release_extra(seller: &Keypair) -> Vec<solana_sdk::instruction::Instruction> {
    use node::chain::instructions::{default_registry, discovery, memo};
    let text = format!(
        "brainctl-marketplace/v1:release:20261123-0123456789ab:{}:{}",
        "e".repeat(43),
        Pubkey::new_unique()
    );
    vec![
        memo(&text, &seller.pubkey()),
        discovery(&default_registry(), 200_000),
    ]
}

/// Lamports a stranger parks at the mint and token-account addresses
/// (public once an envelope names the mint) do not block a release: the
/// accounts are prepared around them (top-up + allocate/assign with seed,
/// a transaction of their own: with both parked the release would not fit
/// a packet), then minted; a second mint with the same seed is refused.
#[test]
fn parked_lamports_do_not_block_an_nft_mint() {
    use node::mint::token2022::token_account_address;
    let v = validator();
    let rt = runtime();
    let chain = v.chain();
    let seller = v.funded_keypair(2);
    let buyer = Keypair::new();
    let spec = spec("brainctl bundle 0123456789ab");
    let seed = seed_from(b"buy signature parked");
    let mint = mint_address(&seller.pubkey(), &seed).unwrap();
    let (account, _) = token_account_address(&seller.pubkey(), &seed, &buyer.pubkey()).unwrap();
    park(v, &[mint, account], 1_000_000);
    let mint_it = || {
        rt.block_on(mint_nft(
            &chain,
            &seller,
            &seed,
            &buyer.pubkey(),
            &spec,
            release_extra(&seller),
        ))
    };
    let minted = mint_it().unwrap();
    let state = rt
        .block_on(read_nft(&chain, &minted.mint, &minted.token_account))
        .unwrap();
    assert_eq!(
        (
            state.holder_amount,
            state.mint.supply,
            state.mint.mint_authority
        ),
        (1, 1, None)
    );
    assert_eq!(state.holder, buyer.pubkey());
    let again = mint_it();
    assert!(again.is_err(), "{again:?}");
}

/// A crash after the accounts were prepared and before the mint landed:
/// the next attempt finds them prepared (Token-2022-owned, zeroed), tops
/// up what lacks rent and mints, once.
#[test]
fn a_mint_resumes_from_accounts_prepared_before_a_crash() {
    use node::mint::account_setup::AddressState;
    use node::mint::token2022::NftAddresses;
    let v = validator();
    let rt = runtime();
    let chain = v.chain();
    let seller = v.funded_keypair(2);
    let buyer = Keypair::new();
    let spec = spec("brainctl bundle resumed");
    let seed = seed_from(b"buy signature prepared");
    let at = NftAddresses::derive(&seller.pubkey(), &seed, &buyer.pubkey(), &spec).unwrap();
    // a stranger parked lamports at both; the preparing transaction of an
    // earlier, crashed attempt landed: both accounts assigned, the mint
    // short of the rent its metadata needs
    park(v, &[at.mint, at.token_account], 1_000_000);
    let parked = [AddressState::Parked(1_000_000); 2];
    let rent = |n: u64| {
        rt.block_on(
            chain
                .rpc()
                .get_minimum_balance_for_rent_exemption(n as usize),
        )
        .unwrap()
    };
    let rents = [rent(at.mint_space), rent(165)];
    let prepare = at.setup(&seller.pubkey(), rents, parked);
    rt.block_on(chain.send(&prepare.concat(), &[&seller]))
        .unwrap();
    let minted = rt
        .block_on(mint_nft(
            &chain,
            &seller,
            &seed,
            &buyer.pubkey(),
            &spec,
            release_extra(&seller),
        ))
        .unwrap();
    assert_eq!(minted.mint, at.mint);
    let state = rt
        .block_on(read_nft(&chain, &minted.mint, &minted.token_account))
        .unwrap();
    assert_eq!((state.holder_amount, state.mint.supply), (1, 1));
    assert_eq!(state.holder, buyer.pubkey());
}
