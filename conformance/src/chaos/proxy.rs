//! The fault proxy: a relay on std threads between a provider and its backend, listening on a
//! unix socket (a Docker-API engine), on 127.0.0.1 for a rewritten endpoint URL, or as an HTTP
//! forward proxy (`CONNECT` tunnels keep TLS end to end; absolute-form requests are relayed).
//!
//! Faults are armed by request count and act on every connection until healed: latency before
//! each chunk, a hang (nothing forwarded, connections held open), a reset (connections closed),
//! a truncated response, refused connections. A request is counted each time the client sends
//! after the backend last answered (turn taking), which counts HTTP/1.1 requests on kept-alive
//! connections and inside TLS tunnels without reading them.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use crate::stateful::FaultKind;

/// Where the proxy relays to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upstream {
    /// A unix socket.
    Unix(PathBuf),
    /// A TCP `host:port`.
    Tcp(String),
    /// Wherever each request's `CONNECT` or absolute-form target says (forward proxy).
    Forward,
}

/// A byte stream of either kind.
#[derive(Debug)]
enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn try_clone(&self) -> std::io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }
    fn close(&self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
        };
    }
    fn connect(up: &Upstream, target: Option<&str>) -> std::io::Result<Stream> {
        match (up, target) {
            (Upstream::Unix(p), _) => UnixStream::connect(p).map(Stream::Unix),
            (Upstream::Tcp(a), _) => TcpStream::connect(a.as_str()).map(Stream::Tcp),
            (Upstream::Forward, Some(a)) => TcpStream::connect(a).map(Stream::Tcp),
            (Upstream::Forward, None) => Err(std::io::Error::other("no target")),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[derive(Debug, Default)]
struct State {
    fault: Option<FaultKind>,
    /// Requests counted when the fault was armed, plus the requests it lets through.
    start_at: u64,
    requests: u64,
    /// Requests counted while a fault acted.
    faulted: u64,
    /// Bumped by every heal: connections held by a hang close then.
    epoch: u64,
}

impl State {
    fn active(&self) -> Option<FaultKind> {
        self.fault.filter(|_| self.requests > self.start_at)
    }
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    healed: Condvar,
    stop: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Blocks a hung relay until the next heal.
    fn hang(&self) {
        let mut st = self.lock();
        let epoch = st.epoch;
        while st.epoch == epoch && !self.stop.load(Ordering::Relaxed) {
            st = self
                .healed
                .wait_timeout(st, Duration::from_millis(200))
                .map(|r| r.0)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }
}

/// A running fault proxy; stops when dropped.
#[derive(Debug)]
pub struct FaultProxy {
    /// Where providers connect: a socket path, or `127.0.0.1:port`.
    pub address: String,
    shared: Arc<Shared>,
    socket: Option<PathBuf>,
}

impl FaultProxy {
    /// A proxy on a new unix socket at `path` relaying to `upstream`.
    pub fn unix(path: &Path, upstream: Upstream) -> std::io::Result<FaultProxy> {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path)?;
        let shared = Arc::new(Shared::default());
        let s = shared.clone();
        thread::spawn(move || {
            for conn in listener.incoming() {
                if s.stop.load(Ordering::Relaxed) {
                    break;
                }
                if let Ok(c) = conn {
                    let (s, up) = (s.clone(), upstream.clone());
                    thread::spawn(move || serve(Stream::Unix(c), &up, &s));
                }
            }
        });
        Ok(FaultProxy {
            address: path.display().to_string(),
            shared,
            socket: Some(path.to_owned()),
        })
    }

    /// A proxy on 127.0.0.1 (a free port) relaying to `upstream`.
    pub fn tcp(upstream: Upstream) -> std::io::Result<FaultProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let address = listener.local_addr()?.to_string();
        let shared = Arc::new(Shared::default());
        let s = shared.clone();
        thread::spawn(move || {
            for conn in listener.incoming() {
                if s.stop.load(Ordering::Relaxed) {
                    break;
                }
                if let Ok(c) = conn {
                    let _ = c.set_nodelay(true);
                    let (s, up) = (s.clone(), upstream.clone());
                    thread::spawn(move || serve(Stream::Tcp(c), &up, &s));
                }
            }
        });
        Ok(FaultProxy { address, shared, socket: None })
    }

    /// Arms `fault` from the `after`-th request from now (0: the next one).
    pub fn arm(&self, fault: FaultKind, after: u8) {
        let mut st = self.shared.lock();
        st.fault = Some(fault);
        st.start_at = st.requests + u64::from(after);
    }

    /// Ends the fault; connections held by a hang are closed.
    pub fn heal(&self) {
        let mut st = self.shared.lock();
        st.fault = None;
        st.epoch += 1;
        self.shared.healed.notify_all();
    }

    /// Requests relayed (or faulted) so far.
    #[cfg(test)]
    pub fn requests(&self) -> u64 {
        self.shared.lock().requests
    }

    /// Requests that met an active fault.
    pub fn faulted(&self) -> u64 {
        self.shared.lock().faulted
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.heal();
        // Wake the accept loop so it sees the stop flag.
        match &self.socket {
            Some(p) => {
                let _ = UnixStream::connect(p);
                let _ = std::fs::remove_file(p);
            }
            None => {
                let _ = TcpStream::connect(&self.address);
            }
        }
    }
}

/// Reads an HTTP request head (up to the blank line) from a forward-proxy client.
fn read_head(c: &mut Stream) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 64 * 1024 || c.read(&mut byte).ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    Some(head)
}

/// The target of a forward-proxy request head, whether it is a tunnel, and the head to send
/// on (origin-form) for a plain request.
fn forward_target(head: &[u8]) -> Option<(String, bool, Vec<u8>)> {
    let text = String::from_utf8_lossy(head);
    let line = text.lines().next()?;
    let mut parts = line.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if method == "CONNECT" {
        return Some((target.to_owned(), true, vec![]));
    }
    let rest = target.strip_prefix("http://")?;
    let (host, path) =
        rest.split_once('/').map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let host = if host.contains(':') { host.to_owned() } else { format!("{host}:80") };
    let head = format!("{method} {path} {version}{}", &text[line.len()..]).into_bytes();
    Some((host, false, head))
}

/// Serves one client connection.
fn serve(mut client: Stream, up: &Upstream, shared: &Arc<Shared>) {
    {
        let mut st = shared.lock();
        if let Some(fault) = st.fault.filter(|_| st.requests >= st.start_at) {
            match fault {
                FaultKind::Refuse | FaultKind::Reset => {
                    st.requests += 1;
                    st.faulted += 1;
                    client.close();
                    return;
                }
                FaultKind::Hang => {
                    st.requests += 1;
                    st.faulted += 1;
                    drop(st);
                    shared.hang();
                    client.close();
                    return;
                }
                _ => {}
            }
        }
    }
    let (target, prelude) = if *up == Upstream::Forward {
        let Some(head) = read_head(&mut client) else { return };
        let Some((target, tunnel, head)) = forward_target(&head) else { return };
        if tunnel {
            if client.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").is_err() {
                return;
            }
            (Some(target), vec![])
        } else {
            (Some(target), head)
        }
    } else {
        (None, vec![])
    };
    let Ok(mut server) = Stream::connect(up, target.as_deref()) else {
        client.close();
        return;
    };
    let turn = Arc::new(AtomicBool::new(true));
    if !prelude.is_empty() {
        shared.lock().requests += 1;
        turn.store(false, Ordering::Relaxed);
        if server.write_all(&prelude).is_err() {
            return;
        }
    }
    let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else { return };
    let (sh, t) = (shared.clone(), turn.clone());
    let upward = thread::spawn(move || relay(client, server, &sh, &t, true));
    relay(s2, c2, shared, &turn, false);
    let _ = upward.join();
}

/// Relays `from` → `to`, applying the active fault. `request` says this is the client side.
fn relay(mut from: Stream, mut to: Stream, shared: &Shared, turn: &AtomicBool, request: bool) {
    let mut buf = vec![0u8; 16 * 1024];
    // Bytes of the current response let through, and the request it answers.
    let mut passed: u64 = 0;
    let mut answering = 0;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let fault = {
            let mut st = shared.lock();
            if request && turn.swap(false, Ordering::Relaxed) {
                st.requests += 1;
                if st.active().is_some() {
                    st.faulted += 1;
                }
            }
            if !request {
                turn.store(true, Ordering::Relaxed);
                if answering != st.requests {
                    answering = st.requests;
                    passed = 0;
                }
            }
            st.active()
        };
        let mut chunk = &buf[..n];
        match fault {
            None => {}
            Some(FaultKind::Latency { ms }) => thread::sleep(Duration::from_millis(u64::from(ms))),
            Some(FaultKind::Hang) => {
                shared.hang();
                break;
            }
            Some(FaultKind::Reset) | Some(FaultKind::Refuse) => break,
            Some(FaultKind::Truncate { bytes }) if !request => {
                let left = u64::from(bytes).saturating_sub(passed) as usize;
                if left < chunk.len() {
                    chunk = &chunk[..left];
                    let _ = to.write_all(chunk);
                    break;
                }
            }
            Some(FaultKind::Truncate { .. }) => {}
        }
        passed += chunk.len() as u64;
        if to.write_all(chunk).is_err() {
            break;
        }
    }
    from.close();
    to.close();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;

    /// An echo server that answers each line with `ok <line>`.
    fn echo() -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap().to_string();
        thread::spawn(move || {
            for c in l.incoming().flatten() {
                thread::spawn(move || {
                    let mut w = c.try_clone().unwrap();
                    for line in std::io::BufReader::new(c).lines().map_while(Result::ok) {
                        if w.write_all(format!("ok {line}\n").as_bytes()).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        a
    }

    fn ask(s: &mut TcpStream, line: &str) -> String {
        // A connection the proxy already closed (a refusal, a heal) answers nothing; the write
        // itself may then fail with a broken pipe, depending on timing.
        if s.write_all(format!("{line}\n").as_bytes()).is_err() {
            return String::new();
        }
        let mut out = String::new();
        let mut b = [0u8; 1];
        while !out.ends_with('\n') {
            match s.read(&mut b) {
                Ok(1) => out.push(b[0] as char),
                _ => break,
            }
        }
        out
    }

    #[test]
    fn faults_start_by_request_count_and_heal() {
        let p = FaultProxy::tcp(Upstream::Tcp(echo())).unwrap();
        let mut c = TcpStream::connect(&p.address).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        assert_eq!(ask(&mut c, "a"), "ok a\n");
        p.arm(FaultKind::Truncate { bytes: 2 }, 1);
        assert_eq!(ask(&mut c, "b"), "ok b\n", "one request let through");
        assert_eq!(ask(&mut c, "c"), "ok", "the next one is cut");
        p.heal();
        let mut c = TcpStream::connect(&p.address).unwrap();
        assert_eq!(ask(&mut c, "d"), "ok d\n");
        p.arm(FaultKind::Hang, 0);
        let mut h = TcpStream::connect(&p.address).unwrap();
        h.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
        assert_eq!(ask(&mut h, "e"), "", "a hang answers nothing");
        p.heal();
        assert_eq!(ask(&mut h, "f"), "", "a hung connection is closed at heal");
        p.arm(FaultKind::Refuse, 0);
        let mut r = TcpStream::connect(&p.address).unwrap();
        assert_eq!(ask(&mut r, "g"), "");
        p.heal();
        let mut c = TcpStream::connect(&p.address).unwrap();
        assert_eq!(ask(&mut c, "h"), "ok h\n");
        assert!(p.requests() >= 6 && p.faulted() >= 2, "{} {}", p.requests(), p.faulted());
    }

    #[test]
    fn the_forward_proxy_tunnels_connect() {
        let up = echo();
        let p = FaultProxy::tcp(Upstream::Forward).unwrap();
        let mut c = TcpStream::connect(&p.address).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        c.write_all(format!("CONNECT {up} HTTP/1.1\r\nHost: {up}\r\n\r\n").as_bytes()).unwrap();
        let mut head = vec![0u8; 39];
        c.read_exact(&mut head).unwrap();
        assert_eq!(&head, b"HTTP/1.1 200 Connection Established\r\n\r\n");
        assert_eq!(ask(&mut c, "x"), "ok x\n");
        assert_eq!(
            forward_target(b"GET http://h:81/a/b HTTP/1.1\r\nHost: h\r\n\r\n").unwrap().2,
            b"GET /a/b HTTP/1.1\r\nHost: h\r\n\r\n"
        );
    }
}
