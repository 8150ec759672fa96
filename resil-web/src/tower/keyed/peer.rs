//! The client's IP address as the key, behind trusted proxies.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use http::header::{HeaderName, FORWARDED};
use http::Request;

use super::extract::{KeyExtractor, MissingKey};

/// A block of addresses in CIDR notation (`10.0.0.0/8`, `fd00::/8`, or a
/// single address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Parses `10.0.0.0/8`, `2001:db8::/32`, or an address alone (`/32`,
    /// `/128`); an error names the text and what is expected.
    pub fn parse(text: &str) -> Result<Self, InvalidCidr> {
        let bad = |why: &'static str| InvalidCidr {
            text: text.to_owned(),
            why,
        };
        let (addr, prefix) = match text.trim().split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text.trim(), None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| bad("expected an IPv4 or IPv6 address before the `/`"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p.parse::<u8>().ok().filter(|&p| p <= max).ok_or_else(|| {
                bad("expected a prefix length of 0 ..= 32 (IPv4) or 0 ..= 128 (IPv6) after the `/`")
            })?,
        };
        Ok(Cidr {
            addr: canonical(addr),
            prefix,
        })
    }

    /// Whether `ip` is in this block (an IPv4-mapped IPv6 address counts as
    /// its IPv4 address).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// Text that is not a CIDR block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidCidr {
    text: String,
    why: &'static str,
}

impl fmt::Display for InvalidCidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid trusted proxy `{}`: {} (e.g. `10.0.0.0/8`, `::1`)",
            self.text.escape_debug(),
            self.why
        )
    }
}

impl std::error::Error for InvalidCidr {}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

/// Which header the trusted proxies write the client's address into. Only
/// that one is read: a proxy that writes `X-Forwarded-For` passes a
/// `Forwarded` header the client made up untouched, so reading both would
/// let a client choose its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForwardedHeader {
    /// `X-Forwarded-For: client, proxy1, proxy2` (the default).
    XForwardedFor,
    /// RFC 7239 `Forwarded: for=client, for="[2001:db8::1]:4711"`.
    Forwarded,
}

/// Keys a request by its client's IP address: the connection's peer, or,
/// when the peer is a trusted proxy ([`ByPeerIp::trust`]), the address the
/// proxies recorded, read **from the right** and skipping only trusted hops.
///
/// Each proxy appends the address it got the request from, so the
/// rightmost entry not written by a trusted proxy is the first address
/// nobody trusted vouches for: the client. What a client writes into the
/// header itself stays to the left of it and is never read, so no client
/// can take another's key.
///
/// The peer is read from the request's extensions: axum's
/// `ConnectInfo<SocketAddr>` (serve with
/// `into_make_service_with_connect_info::<SocketAddr>()`), or a
/// `SocketAddr` or `IpAddr` a server put there. A request with none has no
/// key. A hop a trusted proxy could not name (`for=unknown`, an obfuscated
/// identifier) stops the walk: the request is keyed by that proxy.
///
/// ```
/// use resil_web::tower::keyed::{by_peer_ip, ForwardedHeader};
///
/// let extract = by_peer_ip()
///     .trust(["10.0.0.0/8", "fd00::/8"])?
///     .header(ForwardedHeader::XForwardedFor);
/// # let _ = extract;
/// # Ok::<(), resil_web::tower::keyed::InvalidCidr>(())
/// ```
pub fn by_peer_ip() -> ByPeerIp {
    ByPeerIp {
        trusted: Arc::from(Vec::new()),
        header: ForwardedHeader::XForwardedFor,
    }
}

/// The client's address as the key: [`by_peer_ip`].
#[derive(Debug, Clone)]
pub struct ByPeerIp {
    trusted: Arc<[Cidr]>,
    header: ForwardedHeader,
}

const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// One entry of the forwarding chain.
enum Hop {
    Addr(IpAddr),
    /// Present but not an address (`unknown`, `_hidden`, garbage).
    Unnamed,
}

impl ByPeerIp {
    /// Trusts the proxies in `blocks` (CIDR text), in addition to those
    /// trusted already; an error names the first block that does not parse.
    pub fn trust<I>(self, blocks: I) -> Result<Self, InvalidCidr>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let mut trusted = self.trusted.to_vec();
        for block in blocks {
            trusted.push(Cidr::parse(block.as_ref())?);
        }
        Ok(ByPeerIp {
            trusted: trusted.into(),
            header: self.header,
        })
    }

    /// Reads `header` for the trusted proxies' record (default
    /// `X-Forwarded-For`).
    pub fn header(mut self, header: ForwardedHeader) -> Self {
        self.header = header;
        self
    }

    fn trusted(&self, ip: IpAddr) -> bool {
        self.trusted.iter().any(|c| c.contains(ip))
    }

    /// The client's address for a request from `peer` with `req`'s headers.
    pub fn client_ip<B>(&self, peer: IpAddr, req: &Request<B>) -> IpAddr {
        let mut client = canonical(peer);
        if !self.trusted(client) {
            return client;
        }
        let (name, parse): (HeaderName, fn(&str) -> Option<Hop>) = match self.header {
            ForwardedHeader::XForwardedFor => (X_FORWARDED_FOR, xff_hop),
            ForwardedHeader::Forwarded => (FORWARDED, forwarded_hop),
        };
        // Several header lines form one list, in order; read from the right.
        for line in req.headers().get_all(name).iter().rev() {
            let Ok(line) = line.to_str() else {
                return client;
            };
            for entry in line.rsplit(',') {
                let entry = entry.trim();
                if entry.is_empty() {
                    continue;
                }
                match parse(entry) {
                    Some(Hop::Addr(ip)) => {
                        client = canonical(ip);
                        if !self.trusted(client) {
                            return client;
                        }
                    }
                    // The trusted hop could not name who sent it the
                    // request: that hop is as far as anyone vouches.
                    Some(Hop::Unnamed) | None => return client,
                }
            }
        }
        client
    }
}

/// An `X-Forwarded-For` entry: `1.2.3.4`, `1.2.3.4:80`, `::1`, `[::1]:80`.
fn xff_hop(entry: &str) -> Option<Hop> {
    Some(node(entry))
}

/// A `Forwarded` element's `for=` node (RFC 7239 §4, §6); an element
/// without one is an unnamed hop.
fn forwarded_hop(element: &str) -> Option<Hop> {
    for pair in element.split(';') {
        let Some((name, value)) = pair.trim().split_once('=') else {
            continue;
        };
        if name.trim().eq_ignore_ascii_case("for") {
            let value = value.trim();
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value);
            return Some(node(value));
        }
    }
    Some(Hop::Unnamed)
}

/// An address with an optional port, IPv6 optionally in brackets.
fn node(text: &str) -> Hop {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Hop::Addr(ip);
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Hop::Addr(addr.ip());
    }
    if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        if let Ok(ip) = inner.parse::<IpAddr>() {
            return Hop::Addr(ip);
        }
    }
    Hop::Unnamed
}

/// The connection's peer address from the request's extensions.
fn peer<B>(req: &Request<B>) -> Option<IpAddr> {
    let ext = req.extensions();
    #[cfg(feature = "axum")]
    if let Some(info) = ext.get::<axum::extract::ConnectInfo<SocketAddr>>() {
        return Some(info.0.ip());
    }
    if let Some(addr) = ext.get::<SocketAddr>() {
        return Some(addr.ip());
    }
    ext.get::<IpAddr>().copied()
}

impl<B> KeyExtractor<B> for ByPeerIp {
    type Key = IpAddr;

    #[inline]
    fn with_key<R, F: FnOnce(&IpAddr) -> R>(
        &self,
        req: &Request<B>,
        f: F,
    ) -> Result<R, (MissingKey, F)> {
        match peer(req) {
            Some(ip) => Ok(f(&self.client_ip(ip, req))),
            None => Err((
                MissingKey::new(
                    "no peer address on the request (serve with `into_make_service_with_connect_info::<SocketAddr>()`)",
                ),
                f,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(name: &str, lines: &[&str]) -> Request<()> {
        let mut b = Request::builder();
        for l in lines {
            b = b.header(name, *l);
        }
        b.body(()).unwrap()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn cidr_blocks_parse_and_contain_what_they_should() {
        let c = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(c.contains(ip("10.1.2.3")));
        assert!(!c.contains(ip("11.0.0.1")));
        assert!(c.contains(ip("::ffff:10.9.9.9")));
        assert!(Cidr::parse("::1").unwrap().contains(ip("::1")));
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains(ip("8.8.8.8")));
        assert!(Cidr::parse("fd00::/8").unwrap().contains(ip("fd12::1")));
        let e = Cidr::parse("10.0.0.0/33").unwrap_err().to_string();
        assert!(e.contains("`10.0.0.0/33`") && e.contains("0 ..= 32"), "{e}");
        let e = Cidr::parse("ten/8").unwrap_err().to_string();
        assert!(e.contains("`ten/8`") && e.contains("IPv4 or IPv6"), "{e}");
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_writes() {
        let x = by_peer_ip().trust(["10.0.0.0/8"]).unwrap();
        let r = req("x-forwarded-for", &["10.0.0.5, 1.1.1.1"]);
        assert_eq!(x.client_ip(ip("203.0.113.9"), &r), ip("203.0.113.9"));
    }

    #[test]
    fn the_rightmost_untrusted_hop_is_the_client_and_spoofed_entries_are_never_read() {
        let x = by_peer_ip().trust(["10.0.0.0/8"]).unwrap();
        // The client wrote "198.51.100.7" (another client's address) and a
        // trusted proxy's; the proxies appended the real one.
        let r = req(
            "x-forwarded-for",
            &["198.51.100.7, 10.0.0.9", "203.0.113.9, 10.0.0.2"],
        );
        assert_eq!(x.client_ip(ip("10.0.0.1"), &r), ip("203.0.113.9"));
        // With ports and brackets.
        let r = req("x-forwarded-for", &["[2001:db8::1]:4711, 10.0.0.2:80"]);
        assert_eq!(x.client_ip(ip("10.0.0.1"), &r), ip("2001:db8::1"));
        // Every hop trusted: the leftmost.
        let r = req("x-forwarded-for", &["10.0.0.3"]);
        assert_eq!(x.client_ip(ip("10.0.0.1"), &r), ip("10.0.0.3"));
        // Garbage a trusted hop wrote stops the walk at that hop.
        let r = req("x-forwarded-for", &["1.2.3.4, unknown, 10.0.0.2"]);
        assert_eq!(x.client_ip(ip("10.0.0.1"), &r), ip("10.0.0.2"));
    }

    #[test]
    fn forwarded_is_read_only_when_chosen_and_by_its_for_parameter() {
        let x = by_peer_ip().trust(["10.0.0.0/8"]).unwrap();
        let r = req(
            "forwarded",
            &["for=198.51.100.7;proto=http, for=\"[2001:db8:cafe::17]:4711\";by=10.0.0.1"],
        );
        // Reading X-Forwarded-For (the default), a Forwarded header is ignored.
        assert_eq!(x.client_ip(ip("10.0.0.1"), &r), ip("10.0.0.1"));
        let x = x.header(ForwardedHeader::Forwarded);
        assert_eq!(x.client_ip(ip("10.0.0.1"), &r), ip("2001:db8:cafe::17"));
        let r = req("forwarded", &["for=\"203.0.113.4:80\", for=10.0.0.7"]);
        assert_eq!(x.client_ip(ip("10.0.0.1"), &r), ip("203.0.113.4"));
        let r = req("forwarded", &["for=203.0.113.4, for=_hidden"]);
        assert_eq!(x.client_ip(ip("10.0.0.1"), &r), ip("10.0.0.1"));
    }
}
