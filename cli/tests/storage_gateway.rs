//! `brainctl storage put|get --storage gateway` through the binary against
//! a real arlocal started by the e2e harness.

mod util;

use std::os::unix::fs::PermissionsExt;
use util::Env;

#[test]
fn put_and_get_through_arlocal() {
    let gw = e2e::gateway();
    let e = Env::new();
    e.ok(&["wallet", "new"]);
    let file = e.path("note.txt");
    std::fs::write(&file, "stored on a local Arweave gateway\n").unwrap();
    let put = e
        .ok(&[
            "--json",
            "storage",
            "put",
            file.to_str().unwrap(),
            "--storage",
            "gateway",
            "--gateway-url",
            &gw.url,
            "--tag",
            "Content-Type=text/plain",
        ])
        .json();
    assert_eq!(put["storage"], "gateway");
    let id = put["id"].as_str().unwrap().to_string();
    let wallet = e.path(".brainctl/arweave-wallet.pkcs8");
    assert_eq!(
        std::fs::metadata(&wallet).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let out = e.path("back.txt");
    e.ok(&[
        "storage",
        "get",
        &id,
        "--storage",
        "gateway",
        "--gateway-url",
        &gw.url,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&file).unwrap());
    let small = e.run(&[
        "storage",
        "get",
        &id,
        "--storage",
        "gateway",
        "--gateway-url",
        &gw.url,
        "--max-bytes",
        "4",
    ]);
    assert_eq!(small.code, 1, "{}", small.stderr);
    assert!(small.stderr.contains("too large"), "{}", small.stderr);
}
