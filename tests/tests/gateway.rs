//! The gateway uploader against a real arlocal (started by the harness on
//! a free port): items posted in an ANS-104 bundle inside a signed
//! Arweave transaction are served by their own id, byte for byte; a
//! multi-chunk bundle proves the data root; a tampered answer is refused
//! by the caller's hash check; arlocal's GraphQL header of each item
//! proves its data (`Source::fetch_item`).

use e2e::{gateway, runtime};
use node::arweave::gateway::Gateway;
use node::arweave::{DataItem, Source, StorageError, Tag, Uploader};
use node::wallet::Wallet;

#[test]
fn items_round_trip_through_arlocal() {
    let gw = gateway();
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let key = Gateway::load_or_create_key(&dir.path().join("arweave.pkcs8")).unwrap();
    // the key file is a 0600 secret, reused on the next load
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir.path().join("arweave.pkcs8"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let again = Gateway::load_or_create_key(&dir.path().join("arweave.pkcs8")).unwrap();
    assert_eq!(again, key);
    let up = Uploader::Gateway(Gateway::new(&gw.url, key));
    let wallet = Wallet::generate();
    let source = Source::Gateway(gw.url.clone());

    // small: one chunk
    let small = b"{\"schema\":\"brainctl-marketplace/v1/listing\"}".to_vec();
    let id = rt
        .block_on(up.put_signed(&wallet, small.clone(), "application/json", "test"))
        .unwrap();
    let got = rt.block_on(source.fetch(&id, 1 << 20)).unwrap();
    assert_eq!(got, small);

    // 300 KiB: two chunks, so arlocal checks a real merkle branch
    let big: Vec<u8> = (0..300 * 1024).map(|i| (i * 7 % 251) as u8).collect();
    let item = DataItem::sign(
        &wallet,
        big.clone(),
        vec![Tag::new("App-Name", "brainctl")],
        None,
        None,
    )
    .unwrap();
    let big_id = rt.block_on(up.put(&item)).unwrap();
    assert_eq!(big_id, item.id());
    assert_eq!(rt.block_on(source.fetch(&big_id, 1 << 20)).unwrap(), big);
    // the download cap holds
    assert!(matches!(
        rt.block_on(source.fetch(&big_id, 1024)),
        Err(StorageError::TooLarge(_))
    ));
    // an id nobody stored
    assert!(rt.block_on(source.fetch(&"A".repeat(43), 1024)).is_err());

    // arlocal's GraphQL serves each item's signed header: what it answers
    // proves both items (id = hash of the signature, which covers the data)
    assert_eq!(
        rt.block_on(source.fetch_item(&big_id, 1 << 20)).unwrap(),
        item
    );
    let small_item = rt.block_on(source.fetch_item(&id, 1 << 20)).unwrap();
    assert_eq!(small_item.tag("App-Name"), Some("brainctl"));
    assert_eq!((small_item.id(), small_item.data), (id.clone(), small));
    assert!(matches!(
        rt.block_on(source.fetch_item(&"A".repeat(43), 1024)),
        Err(StorageError::NotFound(_))
    ));
}
