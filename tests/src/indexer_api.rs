//! A client of the indexer's HTTP API for tests: JSON posts and gets
//! with an optional session, and sign-in (challenge, sign, verify).

use node::wallet::Wallet;
use serde_json::{json, Value};

/// The API at `base`.
pub struct Api {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The client.
    pub http: reqwest::Client,
}

impl Api {
    /// POST `body` (JSON) to `path`: (status, JSON body or null).
    pub async fn post(&self, path: &str, body: Value, token: Option<&str>) -> (u16, Value) {
        let mut req = self.http.post(format!("{}{path}", self.base)).json(&body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let res = req.send().await.unwrap();
        (
            res.status().as_u16(),
            res.json().await.unwrap_or(Value::Null),
        )
    }

    /// GET `path`: (status, JSON body or null).
    pub async fn get(&self, path: &str, token: Option<&str>) -> (u16, Value) {
        let mut req = self.http.get(format!("{}{path}", self.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let res = req.send().await.unwrap();
        (
            res.status().as_u16(),
            res.json().await.unwrap_or(Value::Null),
        )
    }

    /// A sign-in challenge for `who`: (nonce, message to sign).
    pub async fn challenge(&self, who: &Wallet) -> (String, String) {
        let (code, c) = self
            .post("/auth/challenge", json!({"pubkey": who.address()}), None)
            .await;
        assert_eq!(code, 200, "{c}");
        (
            c["nonce"].as_str().unwrap().to_string(),
            c["message_to_sign"].as_str().unwrap().to_string(),
        )
    }

    /// Answers a challenge.
    pub async fn verify(&self, pubkey: &str, nonce: &str, sig: &[u8; 64]) -> (u16, Value) {
        let body = json!({
            "pubkey": pubkey,
            "nonce": nonce,
            "signature_b58": bs58::encode(sig).into_string(),
        });
        self.post("/auth/verify", body, None).await
    }

    /// Signs `who` in; returns the session token.
    pub async fn sign_in(&self, who: &Wallet) -> String {
        let (nonce, msg) = self.challenge(who).await;
        let (code, v) = self
            .verify(&who.address(), &nonce, &who.sign(msg.as_bytes()))
            .await;
        assert_eq!(code, 200, "{v}");
        v["session_token"].as_str().unwrap().to_string()
    }
}
