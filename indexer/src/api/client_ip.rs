//! Which IP a request comes from, for the per-IP rate limits. By default
//! the socket's peer. Behind reverse proxies every request has a proxy's
//! address, so the operator names the header the proxies write
//! (`--client-ip-header X-Forwarded-For`) and how many of them stand in
//! front of the indexer (`--trusted-proxy-hops N`, default 1). Each proxy
//! appends the address it was reached from, so the client is the N-th
//! entry from the right; entries further left are whatever the client
//! sent and are never trusted. A header that is absent, not text, shorter
//! than N entries or not an IP falls back to the socket's peer.
//!
//! Headers holding a comma-separated list of addresses (`X-Forwarded-For`,
//! `X-Real-IP` with one hop); `ip:port` and `[v6]:port` entries are read
//! as their IP. Owns the choice of key only; never refuses a request.

use axum::http::{HeaderMap, HeaderName};
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroUsize;

/// Why a client-IP rule is refused at start-up.
#[derive(Debug, thiserror::Error)]
pub enum ClientIpError {
    /// Not an HTTP header name.
    #[error("--client-ip-header {0:?} is not an HTTP header name (e.g. X-Forwarded-For)")]
    BadHeader(String),
    /// Zero hops.
    #[error("--trusted-proxy-hops must be at least 1 (the proxies in front of the indexer)")]
    NoHops,
}

/// How the client's IP is found.
#[derive(Debug, Clone, Default)]
pub struct ClientIp {
    /// The proxies' header and how many proxies are trusted; `None`: the
    /// socket's peer.
    header: Option<(HeaderName, NonZeroUsize)>,
}

impl ClientIp {
    /// The socket's peer (the default).
    pub fn socket() -> ClientIp {
        ClientIp::default()
    }

    /// The entry `hops` from the right of header `name`.
    pub fn header(name: &str, hops: usize) -> Result<ClientIp, ClientIpError> {
        let name =
            HeaderName::try_from(name).map_err(|_| ClientIpError::BadHeader(name.to_string()))?;
        let hops = NonZeroUsize::new(hops).ok_or(ClientIpError::NoHops)?;
        Ok(ClientIp {
            header: Some((name, hops)),
        })
    }

    /// The client of a request with `headers` from `socket`.
    pub fn of(&self, headers: &HeaderMap, socket: IpAddr) -> IpAddr {
        self.header
            .as_ref()
            .and_then(|(name, hops)| forwarded(headers, name, hops.get()))
            .unwrap_or(socket)
    }
}

/// The entry `hops` from the right of every `name` line, in order.
fn forwarded(headers: &HeaderMap, name: &HeaderName, hops: usize) -> Option<IpAddr> {
    let mut entries = Vec::new();
    for line in headers.get_all(name) {
        entries.extend(line.to_str().ok()?.split(',').map(str::trim));
    }
    let entry = *entries.get(entries.len().checked_sub(hops)?)?;
    entry
        .parse::<IpAddr>()
        .or_else(|_| entry.parse::<SocketAddr>().map(|s| s.ip()))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(lines: &[&[u8]]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for l in lines {
            h.append("x-forwarded-for", HeaderValue::from_bytes(l).unwrap());
        }
        h
    }

    const SOCKET: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 9));

    #[test]
    fn the_nth_entry_from_the_right_is_the_client() {
        let one = ClientIp::header("X-Forwarded-For", 1).unwrap();
        let two = ClientIp::header("X-Forwarded-For", 2).unwrap();
        // the client forged the first entry; one proxy appended the real one
        let h = headers(&[b"6.6.6.6, 203.0.113.7"]);
        assert_eq!(one.of(&h, SOCKET), IpAddr::from([203, 0, 113, 7]));
        assert_eq!(two.of(&h, SOCKET), IpAddr::from([6, 6, 6, 6]));
        // several lines are one list; ports and IPv6 read as their IP
        let h = headers(&[b"1.1.1.1", b"[2001:db8::1]:4711, 198.51.100.2:80"]);
        assert_eq!(one.of(&h, SOCKET), IpAddr::from([198, 51, 100, 2]));
        assert_eq!(two.of(&h, SOCKET), "2001:db8::1".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn absent_or_malformed_headers_fall_back_to_the_socket() {
        let two = ClientIp::header("X-Forwarded-For", 2).unwrap();
        let one = ClientIp::header("X-Forwarded-For", 1).unwrap();
        for h in [
            HeaderMap::new(),
            headers(&[b""]),
            headers(&[b"not an ip"]),
            headers(&[b"1.2.3.4, "]),
            headers(&[b"\xff\xfe"]),
            headers(&[b",,,,"]),
        ] {
            assert_eq!(one.of(&h, SOCKET), SOCKET, "{h:?}");
        }
        // fewer entries than trusted hops
        assert_eq!(two.of(&headers(&[b"1.2.3.4"]), SOCKET), SOCKET);
        // off by default: the header is ignored
        assert_eq!(
            ClientIp::socket().of(&headers(&[b"1.2.3.4"]), SOCKET),
            SOCKET
        );
        assert!(matches!(
            ClientIp::header("bad header", 1),
            Err(ClientIpError::BadHeader(_))
        ));
        assert!(matches!(
            ClientIp::header("X-Forwarded-For", 0),
            Err(ClientIpError::NoHops)
        ));
    }
}
