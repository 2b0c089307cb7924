//! Storage backends: the fs store, and the bundler/gateway client against a
//! local HTTP server that checks the exact bytes it receives verify as a
//! data item.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;
use node::arweave::http::{download, download_expecting_sha256, Bundler};
use node::arweave::{DataItem, FsStore, StorageError, Tag};
use node::wallet::Wallet;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

type Items = Arc<Mutex<HashMap<String, Vec<u8>>>>;

async fn upload(State(items): State<Items>, body: Bytes) -> (StatusCode, String) {
    match DataItem::from_bytes(&body) {
        Ok(item) => {
            let id = item.id();
            items.lock().unwrap().insert(id.clone(), item.data);
            (
                StatusCode::OK,
                format!("{{\"id\":\"{id}\",\"timestamp\":1}}"),
            )
        }
        Err(e) => (StatusCode::BAD_REQUEST, e.to_string()),
    }
}

async fn serve(State(items): State<Items>, Path(id): Path<String>) -> (StatusCode, Vec<u8>) {
    match items.lock().unwrap().get(&id) {
        Some(d) => (StatusCode::OK, d.clone()),
        None => (StatusCode::NOT_FOUND, Vec::new()),
    }
}

async fn start() -> (String, Items) {
    let items: Items = Arc::default();
    let app = Router::new()
        .route("/tx/solana", post(upload))
        .route(
            "/price/solana/{n}",
            get(|Path(n): Path<u64>| async move { (n * 3 + 1000).to_string() }),
        )
        .route(
            "/poor/tx/solana",
            post(|| async { (StatusCode::PAYMENT_REQUIRED, "Not enough balance") }),
        )
        .route(
            "/small/tx/solana",
            post(|| async { (StatusCode::PAYLOAD_TOO_LARGE, "too big") }),
        )
        .route(
            "/down/tx/solana",
            post(|| async { (StatusCode::BAD_GATEWAY, "upstream") }),
        )
        .route(
            "/liar/tx/solana",
            post(|| async { "{\"id\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}" }),
        )
        .route("/big", get(|| async { vec![0u8; 100_000] }))
        .route("/{id}", get(serve))
        .with_state(items.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), items)
}

fn item(data: &[u8]) -> DataItem {
    let w = Wallet::from_seed(&[1u8; 32]);
    DataItem::sign(
        &w,
        data.to_vec(),
        vec![Tag::new("App-Name", "brainctl")],
        None,
        None,
    )
    .unwrap()
}

#[tokio::test]
async fn bundler_upload_price_and_download() {
    let (url, items) = start().await;
    let b = Bundler::new(&url);
    assert_eq!(b.price(1000).await.unwrap(), 4000);
    let it = item(b"encrypted blob bytes");
    let id = b.put(&it).await.unwrap();
    assert_eq!(id, it.id());
    assert_eq!(
        items.lock().unwrap().get(&id).unwrap(),
        b"encrypted blob bytes",
        "server verified and stored the item"
    );
    let body = download(&url, &id, 1024).await.unwrap();
    assert_eq!(body, b"encrypted blob bytes");
    let good = node::crypto::sha256(b"encrypted blob bytes");
    assert!(download_expecting_sha256(&url, &id, 1024, &good)
        .await
        .is_ok());
    let err = download_expecting_sha256(&url, &id, 1024, &[0u8; 32])
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::HashMismatch { .. }), "{err}");
}

#[tokio::test]
async fn bundler_errors_are_typed() {
    let (url, _) = start().await;
    let it = item(b"x");
    assert!(matches!(
        Bundler::new(&format!("{url}/poor")).put(&it).await,
        Err(StorageError::PaymentRequired(_))
    ));
    assert!(matches!(
        Bundler::new(&format!("{url}/small")).put(&it).await,
        Err(StorageError::TooLarge(_))
    ));
    assert!(
        matches!(Bundler::new(&format!("{url}/down")).put(&it).await, Err(StorageError::Http(m)) if m.contains("502"))
    );
    assert!(matches!(
        Bundler::new(&format!("{url}/liar")).put(&it).await,
        Err(StorageError::IdMismatch { .. })
    ));
    assert!(matches!(
        download(&url, "big", 1000).await,
        Err(StorageError::TooLarge(_))
    ));
    assert!(matches!(
        download(&url, &it.id(), 1000).await,
        Err(StorageError::NotFound(_))
    ));
    assert!(matches!(
        Bundler::new("http://127.0.0.1:1").put(&it).await,
        Err(StorageError::Http(_))
    ));
}

#[test]
fn fs_store_is_content_addressed_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let s = FsStore::new(dir.path().join("items"));
    let a = item(b"a");
    let b = item(b"b");
    let id = s.put(&a).unwrap();
    assert_eq!(s.put(&a).unwrap(), id, "idempotent");
    assert_eq!(s.get(&id).unwrap(), a);
    let idb = s.put(&b).unwrap();
    // swap the files: each now holds the other's item
    std::fs::rename(
        dir.path().join("items").join(&idb),
        dir.path().join("items/tmp"),
    )
    .unwrap();
    std::fs::copy(
        dir.path().join("items").join(&id),
        dir.path().join("items").join(&idb),
    )
    .unwrap();
    assert!(matches!(s.get(&idb), Err(StorageError::IdMismatch { .. })));
    assert!(matches!(
        s.get("../../etc/passwd"),
        Err(StorageError::BadId(_))
    ));
    assert!(matches!(
        s.get(&"A".repeat(43)),
        Err(StorageError::NotFound(_))
    ));
    std::fs::write(dir.path().join("items").join(&id), b"garbage").unwrap();
    assert!(matches!(s.get(&id), Err(StorageError::Item(_))));
}
