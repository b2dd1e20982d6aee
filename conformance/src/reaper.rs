//! The reaper: one helper process per worker, between the harness and the worker, that makes
//! the worker's whole tree visible and endable.
//!
//! The harness forks the helper; the helper declares itself a child subreaper
//! (`PR_SET_CHILD_SUBREAPER`) and forks the worker, in a process group of its own. Whatever the
//! worker starts stays below the helper: a process that leaves the worker's group or session
//! (`setsid`, a daemon's double fork) is re-parented to the helper when its parent exits, not to
//! init. So every process the worker ever started is in the helper's subtree, and nothing
//! outside it is ever looked at or signalled:
//!
//! - the descendants are listed through `/proc/<pid>/task/<tid>/children`, from the helper down
//!   ([`descendants`]);
//! - the helper ends the tree by killing its own children, round after round, until it has none
//!   (a child's pid cannot be reused before the helper reaps it, and the helper reaps only in the
//!   same loop), when told to or when the harness goes away (its control pipe reaches end of
//!   file, also when the harness is killed).
//!
//! One helper per worker, rather than the harness process as a subreaper, because the harness is
//! also a library: a test process runs many harness instances at once, and an orphan re-parented
//! to that process could not be told apart from another run's, nor from the test's own children.
//!
//! The helper is forked from a multi-threaded process and never calls `exec`, so after the fork it
//! makes only async-signal-safe calls (raw system calls on stack buffers; no allocation, no
//! locks, no panics). Everything it needs (paths, argv, envp) is prepared before the fork.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// Control bytes, harness → helper.
const CTL_TERM: u8 = b'T';
const CTL_KILL: u8 = b'K';
const CTL_END_TREE: u8 = b'X';

/// Record tags, helper → harness (each record is the tag and an `i32`, little-endian).
const REC_PID: u8 = b'P';
const REC_FORK_FAILED: u8 = b'F';
const REC_EXIT: u8 = b'E';
const REC_TREE_ENDED: u8 = b'x';

/// How long the helper tries to end a tree before giving up (processes in uninterruptible
/// sleep may take long to die).
const END_TREE_BUDGET_NS: i64 = 5_000_000_000;

/// Everything the worker's `execve` needs, prepared before the fork.
pub(crate) struct ExecPlan {
    path: CString,
    _argv: Vec<CString>,
    _envp: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    envp_ptrs: Vec<*const libc::c_char>,
    cwd: Option<CString>,
}

impl ExecPlan {
    /// A plan for `path` (already resolved) with `argv` (argv[0] included), `env` and `cwd`.
    pub(crate) fn new(
        path: &std::path::Path,
        argv: &[String],
        env: &[(String, String)],
        cwd: Option<&std::path::Path>,
    ) -> io::Result<ExecPlan> {
        use std::os::unix::ffi::OsStrExt as _;
        let nul = |e| io::Error::new(io::ErrorKind::InvalidInput, e);
        let path = CString::new(path.as_os_str().as_bytes()).map_err(nul)?;
        let argv: Vec<CString> = argv
            .iter()
            .map(|a| CString::new(a.as_bytes()))
            .collect::<Result<_, _>>()
            .map_err(nul)?;
        let envp: Vec<CString> = env
            .iter()
            .map(|(k, v)| CString::new(format!("{k}={v}")))
            .collect::<Result<_, _>>()
            .map_err(nul)?;
        let cwd = cwd.map(|c| CString::new(c.as_os_str().as_bytes())).transpose().map_err(nul)?;
        let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
        argv_ptrs.push(std::ptr::null());
        let mut envp_ptrs: Vec<*const libc::c_char> = envp.iter().map(|e| e.as_ptr()).collect();
        envp_ptrs.push(std::ptr::null());
        Ok(ExecPlan { path, _argv: argv, _envp: envp, argv_ptrs, envp_ptrs, cwd })
    }
}

/// A worker started below its own reaper, and the harness's ends of its pipes.
#[derive(Debug)]
pub(crate) struct Reaped {
    /// The helper's pid (a direct child of the harness, reaped by [`Reaped::finish`]).
    helper: libc::pid_t,
    /// The worker's pid, which is also its process-group id.
    pub(crate) worker: i32,
    /// The worker's stdin (write end).
    pub(crate) stdin: Option<OwnedFd>,
    /// The worker's stdout (read end).
    pub(crate) stdout: Option<OwnedFd>,
    /// The worker's stderr (read end).
    pub(crate) stderr: Option<OwnedFd>,
    control: Option<OwnedFd>,
    status: OwnedFd,
    pending: Vec<u8>,
    exit: Option<i32>,
    tree_ended: bool,
    helper_gone: bool,
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Waits until `fd` is readable (or hung up) or `timeout` passes; true when it is.
pub(crate) fn wait_readable(fd: RawFd, timeout: Duration) -> bool {
    let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: poll reads and writes the one pollfd it is given.
    let n = unsafe { libc::poll(&mut pfd, 1, ms) };
    n > 0
}

/// Sets `O_NONBLOCK` on `fd`.
pub(crate) fn set_nonblocking(fd: RawFd) {
    // SAFETY: fcntl on a descriptor the caller owns.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
}

/// Starts `plan` below a new reaper. The worker gets fresh pipes on fds 0–2, a process group of
/// its own, default signal dispositions and an empty signal mask (as the host gives its
/// workers), and `PR_SET_PDEATHSIG(SIGKILL)` against its reaper.
pub(crate) fn spawn(plan: &ExecPlan) -> io::Result<Reaped> {
    let (stdin_r, stdin_w) = pipe()?;
    let (stdout_r, stdout_w) = pipe()?;
    let (stderr_r, stderr_w) = pipe()?;
    let (control_r, control_w) = pipe()?;
    let (status_r, status_w) = pipe()?;
    let (exec_err_r, exec_err_w) = pipe()?;
    let child_fds = [
        stdin_r.as_raw_fd(),
        stdout_w.as_raw_fd(),
        stderr_w.as_raw_fd(),
        control_r.as_raw_fd(),
        status_w.as_raw_fd(),
        exec_err_w.as_raw_fd(),
    ];
    // SAFETY: after the fork the child runs only `helper_main`, which makes async-signal-safe
    // calls only and never returns.
    let helper = unsafe { libc::fork() };
    if helper < 0 {
        return Err(io::Error::last_os_error());
    }
    if helper == 0 {
        // SAFETY: see above; the plan's pointers stay valid (the parent's memory is copied).
        unsafe { helper_main(child_fds, plan) }
    }
    drop((stdin_r, stdout_w, stderr_w, control_r, status_w, exec_err_w));
    live_reapers().push(helper);
    let mut reaped = Reaped {
        helper,
        worker: 0,
        stdin: Some(stdin_w),
        stdout: Some(stdout_r),
        stderr: Some(stderr_r),
        control: Some(control_w),
        status: status_r,
        pending: vec![],
        exit: None,
        tree_ended: false,
        helper_gone: false,
    };
    set_nonblocking(reaped.status.as_raw_fd());
    // The helper reports the worker's pid (or a failed fork) at once.
    let deadline = Instant::now() + Duration::from_secs(10);
    while reaped.worker == 0 {
        if reaped.helper_gone || Instant::now() >= deadline {
            reaped.finish();
            return Err(io::Error::other("the reaper process did not start the worker"));
        }
        reaped.poll_records(deadline.saturating_duration_since(Instant::now()));
        if let Some(errno) = reaped.fork_failed() {
            reaped.finish();
            return Err(io::Error::from_raw_os_error(errno));
        }
    }
    // The exec-error pipe reaches end of file when the worker execs (close-on-exec), or carries
    // the errno of a failed exec.
    let mut errno = [0u8; 4];
    let mut got = 0;
    while got < 4 && wait_readable(exec_err_r.as_raw_fd(), Duration::from_secs(10)) {
        // SAFETY: read into the unfilled tail of a local array.
        let n = unsafe {
            libc::read(exec_err_r.as_raw_fd(), errno[got..].as_mut_ptr().cast(), 4 - got)
        };
        if n <= 0 {
            break;
        }
        got += n as usize;
    }
    if got == 4 {
        reaped.finish();
        return Err(io::Error::from_raw_os_error(i32::from_le_bytes(errno)));
    }
    Ok(reaped)
}

impl Reaped {
    fn fork_failed(&self) -> Option<i32> {
        (self.worker < 0).then_some(-self.worker)
    }

    /// Reads the helper's records that have arrived, waiting up to `timeout` for the first.
    fn poll_records(&mut self, timeout: Duration) {
        if self.helper_gone {
            return;
        }
        if !timeout.is_zero() && !wait_readable(self.status.as_raw_fd(), timeout) {
            return;
        }
        let mut buf = [0u8; 256];
        loop {
            // SAFETY: read into a local array.
            let n =
                unsafe { libc::read(self.status.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n == 0 {
                self.helper_gone = true;
                break;
            }
            if n < 0 {
                break;
            }
            self.pending.extend_from_slice(&buf[..n as usize]);
        }
        while self.pending.len() >= 5 {
            let tag = self.pending[0];
            let value = i32::from_le_bytes(self.pending[1..5].try_into().expect("4 bytes"));
            self.pending.drain(..5);
            match tag {
                REC_PID => self.worker = value,
                REC_FORK_FAILED => self.worker = -value.max(1),
                REC_EXIT => self.exit = Some(value),
                REC_TREE_ENDED => self.tree_ended = true,
                _ => {}
            }
        }
    }

    /// The worker's raw wait status once it has exited, waiting up to `timeout` for it.
    pub(crate) fn exit_status(&mut self, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        loop {
            self.poll_records(Duration::ZERO);
            if self.exit.is_some() || self.helper_gone {
                return self.exit;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            self.poll_records(left);
        }
    }

    fn control(&mut self, byte: u8) -> bool {
        let Some(control) = &self.control else { return false };
        // SAFETY: write one byte from a local.
        unsafe { libc::write(control.as_raw_fd(), (&byte as *const u8).cast(), 1) == 1 }
    }

    /// Asks the reaper to signal the worker's process group (`SIGTERM` or `SIGKILL`; the reaper
    /// signals only while the group is alive).
    pub(crate) fn signal_group(&mut self, signal: i32) {
        let _ = self.control(if signal == libc::SIGKILL { CTL_KILL } else { CTL_TERM });
    }

    /// Ends every process of the worker's tree (the worker included), waiting up to `timeout`.
    /// True when the reaper confirmed that no descendant is left.
    pub(crate) fn end_tree(&mut self, timeout: Duration) -> bool {
        self.tree_ended = false;
        if !self.control(CTL_END_TREE) {
            return false;
        }
        let deadline = Instant::now() + timeout;
        while !self.tree_ended && !self.helper_gone {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            self.poll_records(left);
        }
        self.tree_ended
    }

    /// Every live descendant of the worker's reaper (the worker included while it runs), as
    /// `(pid, command name)`; only the reaper's own subtree is read.
    pub(crate) fn descendants(&self) -> Vec<(i32, String)> {
        if self.helper_gone {
            return vec![];
        }
        descendants(self.helper)
    }

    /// Ends the tree, closes the control pipe and reaps the reaper (bounded waits; a reaper that
    /// does not leave is killed, which it cannot outlive unreaped).
    pub(crate) fn finish(&mut self) {
        self.stdin = None;
        self.control = None;
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.helper_gone && Instant::now() < deadline {
            self.poll_records(deadline.saturating_duration_since(Instant::now()));
        }
        live_reapers().retain(|&r| r != self.helper);
        // SAFETY: the helper is this process's own child and not yet reaped: its pid is still
        // ours to signal and wait for.
        unsafe {
            let mut status = 0;
            if libc::waitpid(self.helper, &mut status, libc::WNOHANG) == 0 {
                libc::kill(self.helper, libc::SIGKILL);
                libc::waitpid(self.helper, &mut status, 0);
            }
        }
        self.helper_gone = true;
    }
}

/// The reapers of the workers this process runs now, for [`end_every_worker_tree`]. A pid is
/// removed before its reaper is reaped, so a listed pid is never another process's.
static LIVE_REAPERS: std::sync::Mutex<Vec<libc::pid_t>> = std::sync::Mutex::new(Vec::new());

fn live_reapers() -> std::sync::MutexGuard<'static, Vec<libc::pid_t>> {
    LIVE_REAPERS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Ends (SIGKILL) every process of every worker tree this process runs: an interrupted run's
/// workers and the commands they still run, which would otherwise keep writing into a lease
/// while it is destroyed through a fresh worker. Only the reapers' own subtrees are read and
/// signalled (the reapers themselves stay, to reap them); a few rounds, for processes started
/// meanwhile. The list stays locked throughout, so no reaper is reaped under it.
pub(crate) fn end_every_worker_tree() {
    let reapers = live_reapers();
    for _ in 0..3 {
        let live: Vec<i32> =
            reapers.iter().flat_map(|&r| descendants(r)).map(|(pid, _)| pid).collect();
        if live.is_empty() {
            return;
        }
        for pid in live {
            // SAFETY: kill(2) on a pid below one of this process's unreaped reapers; a pid that
            // has exited meanwhile stays a zombie of that subtree until reaped there.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every live process below `root` (not `root` itself), found through the `children` files of
/// each process's threads, as `(pid, command name)`.
pub(crate) fn descendants(root: i32) -> Vec<(i32, String)> {
    let mut out = Vec::new();
    let mut queue = vec![root];
    while let Some(pid) = queue.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { continue };
        for task in tasks.flatten() {
            let Ok(text) = std::fs::read_to_string(task.path().join("children")) else { continue };
            for child in text.split_whitespace().filter_map(|c| c.parse::<i32>().ok()) {
                if out.iter().any(|(p, _)| *p == child) || out.len() >= 100_000 {
                    continue;
                }
                let name = std::fs::read_to_string(format!("/proc/{child}/comm"))
                    .map(|n| n.trim().to_owned())
                    .unwrap_or_default();
                // A zombie waiting for its reaper is not alive.
                let zombie = std::fs::read_to_string(format!("/proc/{child}/stat"))
                    .ok()
                    .and_then(|s| s.rsplit(')').next().map(|r| r.trim_start().starts_with('Z')))
                    .unwrap_or(false);
                if !zombie {
                    out.push((child, name));
                }
                queue.push(child);
            }
        }
    }
    out
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if !self.helper_gone {
            self.finish();
        }
        live_reapers().retain(|&r| r != self.helper);
    }
}

// ---------------------------------------------------------------------------------------------
// After the fork: the helper and the worker. Async-signal-safe calls only.

extern "C" fn on_sigchld(_: libc::c_int) {}

unsafe fn write_record(fd: RawFd, tag: u8, value: i32) {
    // SAFETY: runs after fork in the helper or worker; only async-signal-safe calls on
    // stack buffers and the plan prepared before the fork.
    unsafe {
        let v = value.to_le_bytes();
        let rec = [tag, v[0], v[1], v[2], v[3]];
        libc::write(fd, rec.as_ptr().cast(), rec.len());
    }
}

unsafe fn monotonic_ns() -> i64 {
    // SAFETY: runs after fork in the helper or worker; only async-signal-safe calls on
    // stack buffers and the plan prepared before the fork.
    unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
        ts.tv_sec * 1_000_000_000 + ts.tv_nsec
    }
}

/// Reaps every exited child; reports the worker's status once.
unsafe fn reap(worker: i32, worker_alive: &mut bool, status_fd: RawFd) {
    // SAFETY: runs after fork in the helper or worker; only async-signal-safe calls on
    // stack buffers and the plan prepared before the fork.
    unsafe {
        loop {
            let mut status = 0;
            let pid = libc::waitpid(-1, &mut status, libc::WNOHANG);
            if pid <= 0 {
                return;
            }
            if pid == worker {
                *worker_alive = false;
                write_record(status_fd, REC_EXIT, status);
            }
        }
    }
}

/// Calls `f` with each pid in this (single-threaded) process's `children` file; false when the
/// file cannot be read.
unsafe fn for_each_child(mut f: impl FnMut(i32)) -> bool {
    // SAFETY: runs after fork in the helper or worker; only async-signal-safe calls on
    // stack buffers and the plan prepared before the fork.
    unsafe {
        let path = b"/proc/thread-self/children\0";
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let mut buf = [0u8; 4096];
        let mut current: i64 = -1;
        loop {
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            if n <= 0 {
                break;
            }
            for &b in &buf[..n as usize] {
                if b.is_ascii_digit() {
                    current = if current < 0 { 0 } else { current } * 10 + i64::from(b - b'0');
                } else if current >= 0 {
                    f(current as i32);
                    current = -1;
                }
            }
        }
        if current >= 0 {
            f(current as i32);
        }
        libc::close(fd);
        true
    }
}

/// Kills the helper's children round after round (orphans of killed processes are re-parented
/// to the helper) until it has none, or the budget is spent.
unsafe fn end_tree(worker: i32, worker_alive: &mut bool, status_fd: RawFd) {
    // SAFETY: runs after fork in the helper or worker; only async-signal-safe calls on
    // stack buffers and the plan prepared before the fork.
    unsafe {
        let deadline = monotonic_ns() + END_TREE_BUDGET_NS;
        let mut group_hint = true;
        loop {
            reap(worker, worker_alive, status_fd);
            let mut any = false;
            let readable = for_each_child(|pid| {
                any = true;
                libc::kill(pid, libc::SIGKILL);
            });
            if !readable && group_hint {
                // No /proc: the worker's group is all that can be reached.
                libc::kill(-worker, libc::SIGKILL);
                group_hint = false;
            }
            if !any {
                // A last reap: a child that died between the reap and the listing.
                reap(worker, worker_alive, status_fd);
                let mut status = 0;
                if libc::waitpid(-1, &mut status, libc::WNOHANG) < 0 || !readable {
                    return;
                }
            }
            if monotonic_ns() >= deadline {
                return;
            }
            let nap = libc::timespec { tv_sec: 0, tv_nsec: 2_000_000 };
            libc::nanosleep(&nap, std::ptr::null_mut());
        }
    }
}

/// The helper: becomes a subreaper, forks the worker, then serves the control pipe.
unsafe fn helper_main(fds: [RawFd; 6], plan: &ExecPlan) -> ! {
    // SAFETY: runs after fork in the helper or worker; only async-signal-safe calls on
    // stack buffers and the plan prepared before the fork.
    unsafe {
        // The helper ends with the harness's control pipe, not with terminal signals (the worker
        // tree would otherwise be left behind on Ctrl-C).
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGPIPE] {
            libc::signal(sig, libc::SIG_IGN);
        }
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigchld as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGCHLD, &sa, std::ptr::null_mut());
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &chld, std::ptr::null_mut());
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        // Our six descriptors to 0..=5, every other descriptor closed (another worker's pipe ends
        // must not be held open here).
        let mut high = [0; 6];
        for (i, fd) in fds.iter().enumerate() {
            high[i] = libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, 10);
        }
        for (i, fd) in high.iter().enumerate() {
            libc::dup2(*fd, i as RawFd);
        }
        if libc::syscall(libc::SYS_close_range, 6u32, u32::MAX, 0u32) != 0 {
            for fd in 6..65_536 {
                libc::close(fd);
            }
        }
        let (control, status) = (3, 4);
        let worker = libc::fork();
        if worker == 0 {
            worker_exec(plan);
        }
        for fd in [0, 1, 2, 5] {
            libc::close(fd);
        }
        if worker < 0 {
            write_record(status, REC_FORK_FAILED, *libc::__errno_location());
            libc::_exit(1);
        }
        write_record(status, REC_PID, worker);
        let mut worker_alive = true;
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        loop {
            reap(worker, &mut worker_alive, status);
            let mut pfd = libc::pollfd { fd: control, events: libc::POLLIN, revents: 0 };
            // SIGCHLD is unblocked only inside ppoll, so a child's exit always interrupts it.
            let n = libc::ppoll(&mut pfd, 1, std::ptr::null(), &empty);
            if n <= 0 {
                continue;
            }
            let mut byte = 0u8;
            let got = libc::read(control, (&mut byte as *mut u8).cast(), 1);
            if got < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            if got <= 0 {
                end_tree(worker, &mut worker_alive, status);
                libc::_exit(0);
            }
            match byte {
                CTL_TERM | CTL_KILL => {
                    let sig = if byte == CTL_KILL { libc::SIGKILL } else { libc::SIGTERM };
                    // The group's id is the worker's pid: not reused while the worker is unreaped
                    // or a member of its group lives.
                    if worker_alive || libc::kill(-worker, 0) == 0 {
                        libc::kill(-worker, sig);
                    }
                }
                CTL_END_TREE => {
                    end_tree(worker, &mut worker_alive, status);
                    write_record(status, REC_TREE_ENDED, 0);
                }
                _ => {}
            }
        }
    }
}

/// The worker, between fork and exec.
unsafe fn worker_exec(plan: &ExecPlan) -> ! {
    // SAFETY: runs after fork in the helper or worker; only async-signal-safe calls on
    // stack buffers and the plan prepared before the fork.
    unsafe {
        libc::close(3);
        libc::close(4);
        libc::fcntl(5, libc::F_SETFD, libc::FD_CLOEXEC);
        libc::setpgid(0, 0);
        // What Node (libuv) does for every child, and so the host for its workers: all signals back
        // to their default disposition and none blocked.
        for sig in 1..=31 {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        let fail = |errno: i32| -> ! {
            let e = errno.to_le_bytes();
            libc::write(5, e.as_ptr().cast(), 4);
            libc::_exit(127)
        };
        if let Some(cwd) = &plan.cwd {
            if libc::chdir(cwd.as_ptr()) != 0 {
                fail(*libc::__errno_location());
            }
        }
        libc::execve(plan.path.as_ptr(), plan.argv_ptrs.as_ptr(), plan.envp_ptrs.as_ptr());
        fail(*libc::__errno_location())
    }
}
