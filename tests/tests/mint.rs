//! Token-2022 NFT minting on a real validator: exactly one unit to the
//! recipient, the metadata URI on the mint, supply frozen at 1, and a
//! retried mint with the same seed refused by the chain itself.

use e2e::{runtime, validator};
use node::chain::{ChainError, Keypair, Signer};
use node::mint::token2022::{mint_address, mint_nft, read_nft, seed_from, NftSpec, TOKEN_2022};

#[test]
fn nft_mint_is_exactly_once_and_supply_is_fixed() {
    let v = validator();
    let rt = runtime();
    let chain = v.chain();
    let seller = v.funded_keypair(2);
    let buyer = Keypair::new();
    let spec = NftSpec {
        name: "brainctl bundle".into(),
        symbol: "BRNDL".into(),
        uri: "ar://METADATAidMETADATAidMETADATAidMETADATA0".into(),
    };
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

    // the same seed again: the chain refuses (account exists), nothing minted twice
    let again = rt.block_on(mint_nft(
        &chain,
        &seller,
        &seed,
        &buyer.pubkey(),
        &spec,
        vec![],
    ));
    assert!(
        matches!(
            again,
            Err(ChainError::Rpc { .. } | ChainError::TxFailed { .. })
        ),
        "{again:?}"
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

/// Lamports a stranger parks at the mint and token-account addresses
/// (public once an envelope names the mint) do not block the mint: it is
/// built around them (top-up + allocate/assign with seed), and a second
/// mint with the same seed is still refused.
#[test]
fn parked_lamports_do_not_block_an_nft_mint() {
    use node::mint::token2022::token_account_address;
    let v = validator();
    let rt = runtime();
    let chain = v.chain();
    let seller = v.funded_keypair(2);
    let stranger = v.funded_keypair(1);
    let buyer = Keypair::new();
    let spec = NftSpec {
        name: "brainctl bundle".into(),
        symbol: "BRNDL".into(),
        uri: "ar://METADATAidMETADATAidMETADATAidMETADATA0".into(),
    };
    let seed = seed_from(b"buy signature parked");
    let mint = mint_address(&seller.pubkey(), &seed).unwrap();
    let (account, _) = token_account_address(&seller.pubkey(), &seed, &buyer.pubkey()).unwrap();
    let park = vec![
        node::chain::instructions::transfer(&stranger.pubkey(), &mint, 1_000_000),
        node::chain::instructions::transfer(&stranger.pubkey(), &account, 5_000_000),
    ];
    rt.block_on(chain.send(&park, &[&stranger])).unwrap();
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
    let again = rt.block_on(mint_nft(
        &chain,
        &seller,
        &seed,
        &buyer.pubkey(),
        &spec,
        vec![],
    ));
    assert!(again.is_err(), "{again:?}");
}
