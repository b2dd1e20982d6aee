//! The protocol streams of a stdio worker, read and written through the reactor when they can
//! be.
//!
//! A host spawns the worker with pipes (or, as Node does, a socket pair) on fd 0 and fd 1.
//! Those are read and written non-blocking through epoll ([`tokio::net::unix::pipe`] or
//! [`tokio::net::UnixStream`]), without the blocking thread pool: no thread hand-off and no
//! futex per read or write. Anything else (a regular file, a tty) goes through
//! [`tokio::fs::File`] and the blocking pool, as before.
//!
//! Non-blocking mode is a flag of the *open file description*, which is shared with every
//! process holding a descriptor for it. The worker therefore never leaves the protocol input
//! where a child could inherit it: [`take_protocol_stdin`] moves it to a private
//! close-on-exec descriptor and points fd 0 at `/dev/null` (the same move the stdout guard
//! makes for fd 1). Commands a provider spawns with an inherited stdin read an empty
//! `/dev/null`, never the host's frames, and never see the non-blocking flag. The output side
//! is already a private close-on-exec duplicate ([`super::stdout_guard`]).

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::unix::pipe;
use tokio::net::UnixStream;

static TAKEN: AtomicBool = AtomicBool::new(false);

/// Returns the protocol input (a private close-on-exec duplicate of fd 0) and points fd 0 at
/// `/dev/null`.
///
/// Call it once; a second call fails with [`io::ErrorKind::AlreadyExists`].
pub(crate) fn take_protocol_stdin() -> io::Result<OwnedFd> {
    if TAKEN.swap(true, Ordering::SeqCst) {
        return Err(io::Error::new(io::ErrorKind::AlreadyExists, "protocol stdin already taken"));
    }
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) only creates a new descriptor (>= 3) for fd 0; no memory
    // is touched.
    let private = unsafe { libc::fcntl(libc::STDIN_FILENO, libc::F_DUPFD_CLOEXEC, 3) };
    if private < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `private` is a fresh descriptor that nothing else owns; the OwnedFd takes it.
    let fd = unsafe { OwnedFd::from_raw_fd(private) };
    let null = File::open("/dev/null")?;
    // SAFETY: dup2 atomically replaces fd 0 with a copy of a valid descriptor.
    if unsafe { libc::dup2(null.as_raw_fd(), libc::STDIN_FILENO) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// The worker's protocol input.
#[derive(Debug)]
pub(crate) enum ProtocolReader {
    /// A pipe, read through the reactor.
    Pipe(pipe::Receiver),
    /// A socket, read through the reactor.
    Socket(UnixStream),
    /// Anything else, read on the blocking pool.
    File(tokio::fs::File),
}

/// The worker's protocol output.
#[derive(Debug)]
pub(crate) enum ProtocolWriter {
    /// A pipe, written through the reactor.
    Pipe(pipe::Sender),
    /// A socket, written through the reactor.
    Socket(UnixStream),
    /// Anything else, written on the blocking pool.
    File(tokio::fs::File),
}

/// What kind of descriptor the protocol runs over.
enum Kind {
    Pipe,
    Socket,
    Other,
}

fn kind(file: &File) -> Kind {
    match file.metadata().map(|m| m.file_type()) {
        Ok(t) if t.is_fifo() => Kind::Pipe,
        Ok(t) if t.is_socket() => Kind::Socket,
        _ => Kind::Other,
    }
}

fn socket(file: File) -> io::Result<UnixStream> {
    let stream = std::os::unix::net::UnixStream::from(OwnedFd::from(file));
    stream.set_nonblocking(true)?;
    UnixStream::from_std(stream)
}

impl ProtocolReader {
    /// Wraps the protocol input (from [`take_protocol_stdin`]); must run inside a tokio
    /// runtime with I/O enabled. A pipe or socket that cannot be registered with the reactor
    /// falls back to the blocking pool.
    pub(crate) fn new(fd: OwnedFd) -> io::Result<Self> {
        let file = File::from(fd);
        let fallback = file.try_clone()?;
        let fast = match kind(&file) {
            Kind::Pipe => pipe::Receiver::from_file(file).map(ProtocolReader::Pipe),
            Kind::Socket => socket(file).map(ProtocolReader::Socket),
            Kind::Other => Err(io::Error::other("not a pipe or a socket")),
        };
        Ok(fast.unwrap_or_else(|_| ProtocolReader::File(tokio::fs::File::from_std(fallback))))
    }
}

impl ProtocolWriter {
    /// Wraps the protocol output (from
    /// [`take_protocol_stdout`](super::stdout_guard::take_protocol_stdout)); as
    /// [`ProtocolReader::new`]. A pipe is widened to 1 MiB when the kernel allows it, so
    /// megabytes of output go out in fewer, larger writes.
    pub(crate) fn new(file: File) -> io::Result<Self> {
        let fallback = file.try_clone()?;
        let fast = match kind(&file) {
            Kind::Pipe => {
                crate::process::widen_pipe(Some(&file));
                pipe::Sender::from_file(file).map(ProtocolWriter::Pipe)
            }
            Kind::Socket => socket(file).map(ProtocolWriter::Socket),
            Kind::Other => Err(io::Error::other("not a pipe or a socket")),
        };
        Ok(fast.unwrap_or_else(|_| ProtocolWriter::File(tokio::fs::File::from_std(fallback))))
    }
}

/// Resolves once the host has closed its end of the protocol output (`file`, the descriptor
/// [`ProtocolWriter::new`] is given), seen without writing: a pipe's write end reports an
/// error event once no reader is left, a socket a hang-up. Never resolves for anything else
/// (a regular file, a tty), or when the descriptor cannot be watched; a failed write still
/// ends the worker then.
pub(crate) fn output_closed(file: &File) -> impl std::future::Future<Output = ()> + Send {
    let watched = match kind(file) {
        // A duplicate of the descriptor, registered on its own (epoll keys on the number).
        Kind::Pipe | Kind::Socket => file.try_clone().ok().map(OwnedFd::from),
        Kind::Other => None,
    };
    async move {
        let interest = Interest::READABLE | Interest::ERROR;
        // SAFETY: an OwnedFd is a valid open descriptor that stays open, and names the same
        // file description, until the AsyncFd owning it is dropped.
        let registered =
            watched.and_then(|fd| unsafe { AsyncFd::register_with_interest(fd, interest) }.ok());
        let Some(fd) = registered else {
            return std::future::pending().await;
        };
        loop {
            let Ok(mut guard) = fd.ready(interest).await else {
                return std::future::pending().await;
            };
            let ready = guard.ready();
            if ready.is_error() || ready.is_read_closed() || ready.is_write_closed() {
                return;
            }
            // Bytes the host wrote to a socket it reads from: not an ending; wait on.
            guard.clear_ready();
        }
    }
}

impl AsyncRead for ProtocolReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ProtocolReader::Pipe(r) => Pin::new(r).poll_read(cx, buf),
            ProtocolReader::Socket(r) => Pin::new(r).poll_read(cx, buf),
            ProtocolReader::File(r) => Pin::new(r).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ProtocolWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ProtocolWriter::Pipe(w) => Pin::new(w).poll_write(cx, buf),
            ProtocolWriter::Socket(w) => Pin::new(w).poll_write(cx, buf),
            ProtocolWriter::File(w) => Pin::new(w).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ProtocolWriter::Pipe(w) => Pin::new(w).poll_flush(cx),
            ProtocolWriter::Socket(w) => Pin::new(w).poll_flush(cx),
            ProtocolWriter::File(w) => Pin::new(w).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ProtocolWriter::Pipe(w) => Pin::new(w).poll_shutdown(cx),
            // Shutting the socket down would end the host's read side early for nothing; the
            // process exits right after.
            ProtocolWriter::Socket(w) => Pin::new(w).poll_flush(cx),
            ProtocolWriter::File(w) => Pin::new(w).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn pipes_and_sockets_go_through_the_reactor() {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two fresh descriptors into the two-element array.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: both descriptors are fresh and owned by nothing else.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let mut reader = ProtocolReader::new(r).unwrap();
        let mut writer = ProtocolWriter::new(File::from(w)).unwrap();
        assert!(matches!(reader, ProtocolReader::Pipe(_)));
        assert!(matches!(writer, ProtocolWriter::Pipe(_)));
        writer.write_all(b"hi\n").await.unwrap();
        writer.flush().await.unwrap();
        let mut got = [0u8; 3];
        reader.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"hi\n");

        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut reader = ProtocolReader::new(OwnedFd::from(a)).unwrap();
        let mut writer = ProtocolWriter::new(File::from(OwnedFd::from(b))).unwrap();
        assert!(matches!(reader, ProtocolReader::Socket(_)));
        writer.write_all(b"ok").await.unwrap();
        let mut got = [0u8; 2];
        reader.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"ok");
    }

    #[tokio::test]
    async fn a_regular_file_uses_the_blocking_pool() {
        let file = File::open("/dev/null").unwrap();
        let mut reader = ProtocolReader::new(OwnedFd::from(file)).unwrap();
        assert!(matches!(reader, ProtocolReader::File(_)));
        let mut all = Vec::new();
        assert_eq!(reader.read_to_end(&mut all).await.unwrap(), 0);
    }
}
