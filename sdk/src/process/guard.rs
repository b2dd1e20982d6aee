//! The death-signal guard of the commands the runner starts.
//!
//! Three layers, so that nothing a command starts outlives the worker however it ends:
//!
//! 1. **The command leader dies with the worker.** In the child, between `fork` and `exec`,
//!    [`pre_exec`] sets `PR_SET_PDEATHSIG(SIGKILL)` and then compares `getppid()` with the
//!    worker's pid taken before the fork: a worker that died in between (its child was
//!    re-parented) is caught, and the spawn fails instead of running an orphan.
//! 2. **The worker is a child subreaper** (`PR_SET_CHILD_SUBREAPER`): a background process
//!    whose parent exits (`sh -c 'server &'`) is re-parented to the worker rather than to
//!    init, and the worker reaps it when it exits ([`sweep`]), so no zombie piles up.
//! 3. **A group guard process kills every group when the worker dies**, even by `SIGKILL`.
//!    Grandchildren have no death signal of their own (it is not inherited across `fork`), so
//!    a tiny process forked from the worker at the first spawn holds one end of a socket
//!    pair; each command registers its group on it from `pre_exec` (before `exec`, so before
//!    the command can start anything), and the worker unregisters groups that ended. When the
//!    worker dies, for any reason, the kernel closes its end; the guard sees end of file,
//!    sends `SIGKILL` to every registered group and exits. The guard runs in its own process
//!    group, ignores `SIGTERM`/`SIGINT`/`SIGHUP`, holds no descriptor of the worker but its
//!    socket, and between `fork` and its exit makes only async-signal-safe system calls.
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that forked the command ends. The runner forks
//! from the task that runs it, on a runtime worker thread, which lives as long as the
//! runtime; do not run a command from a short-lived thread (such as `spawn_blocking`'s).

use std::collections::HashSet;
use std::io;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

/// The worker's end of the guard socket (`-1` when there is no guard).
static GUARD_FD: AtomicI32 = AtomicI32::new(-1);

/// Groups started by the runner that may still have members.
static GROUPS: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

static STARTED: OnceLock<()> = OnceLock::new();

/// The most groups the guard tracks at once; more are still ended by layers 1 and 2.
const GUARD_SLOTS: usize = 1 << 16;

/// How often the reaper looks for exited background processes and ended groups.
const SWEEP_EVERY: Duration = Duration::from_millis(500);

fn groups() -> MutexGuard<'static, Option<HashSet<i32>>> {
    GROUPS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Once per process: become a child subreaper, fork the group guard, start the reaper.
pub(crate) fn ensure_started() {
    STARTED.get_or_init(|| {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: prctl(PR_SET_CHILD_SUBREAPER, 1) only sets a process attribute.
            if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
                tracing::warn!(error = %io::Error::last_os_error(), "PR_SET_CHILD_SUBREAPER failed");
            }
            match start_guard() {
                Ok(fd) => GUARD_FD.store(fd, Ordering::SeqCst),
                Err(e) => tracing::warn!(error = %e, "the group guard did not start"),
            }
        }
        let spawned = std::thread::Builder::new()
            .name("paperclip-reaper".into())
            .spawn(|| loop {
                std::thread::sleep(SWEEP_EVERY);
                sweep();
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "the reaper thread did not start");
        }
    });
}

/// What runs in the command's child between `fork` and `exec`: async-signal-safe calls only.
///
/// `worker` is the worker's pid, read before the fork.
pub(crate) fn pre_exec(worker: libc::pid_t) -> io::Result<()> {
    // SAFETY: signal (sigaction), sigemptyset and sigprocmask are async-signal-safe.
    unsafe {
        // Every signal back to its default and none blocked, as Node (libuv) starts every child:
        // what the worker inherited (a shell's background job ignores SIGINT and SIGQUIT) is
        // not the commands' business.
        for sig in 1..=31 {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    }
    #[cfg(target_os = "linux")]
    // SAFETY: setpgid, prctl, getppid, getpid and send are async-signal-safe system calls on
    // plain integers and a stack buffer.
    unsafe {
        // A new group led by the command (the builder asks for it too).
        libc::setpgid(0, 0);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
        if libc::getppid() != worker {
            // The worker died between fork and prctl: do not run an orphan.
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        let fd = GUARD_FD.load(Ordering::Relaxed);
        if fd >= 0 {
            let msg = libc::getpid().to_le_bytes();
            libc::send(fd, msg.as_ptr().cast(), msg.len(), libc::MSG_NOSIGNAL);
        }
    }
    let _ = worker;
    Ok(())
}

/// Records a group the runner started (the guard learnt it from `pre_exec` already).
pub(crate) fn register(pgid: i32) {
    groups().get_or_insert_with(HashSet::new).insert(pgid);
}

fn tell_guard(message: i32) {
    let fd = GUARD_FD.load(Ordering::Relaxed);
    if fd >= 0 {
        let msg = message.to_le_bytes();
        // SAFETY: send on a socket descriptor this process owns, from a stack buffer.
        unsafe { libc::send(fd, msg.as_ptr().cast(), msg.len(), libc::MSG_NOSIGNAL) };
    }
}

/// True while the group `pgid` has a member (zombies included).
pub(crate) fn group_exists(pgid: i32) -> bool {
    // SAFETY: kill(2) with signal 0 only checks for existence.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

/// The groups started by the runner that still have members.
pub(crate) fn live() -> Vec<i32> {
    groups().iter().flatten().copied().filter(|&g| group_exists(g)).collect()
}

/// Reaps exited members of every registered group (background processes re-parented to the
/// worker) except each group's leader (the runner waits for it), then forgets groups that
/// ended.
pub(crate) fn sweep() {
    let registered: Vec<i32> = groups().iter().flatten().copied().collect();
    let mut ended = Vec::new();
    for pgid in registered {
        reap_group(pgid);
        if !group_exists(pgid) {
            ended.push(pgid);
        }
    }
    if ended.is_empty() {
        return;
    }
    let mut table = groups();
    for pgid in ended {
        if table.as_mut().is_some_and(|t| t.remove(&pgid)) {
            tell_guard(-pgid);
        }
    }
}

#[cfg(target_os = "linux")]
fn reap_group(pgid: i32) {
    loop {
        // SAFETY: a zeroed siginfo_t is a valid out-parameter for waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid with WNOWAIT only reports a zombie of the group, leaving it in place.
        let rc = unsafe {
            libc::waitid(
                libc::P_PGID,
                pgid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: si_pid is valid for a waitid result (0 when nothing is waiting).
        let pid = unsafe { info.si_pid() };
        if rc != 0 || pid == 0 || pid == pgid {
            // Nothing to reap, or the leader, which the runner's wait reaps.
            return;
        }
        let mut status = 0;
        // SAFETY: reaps exactly this zombie, which is not a child the runner waits for.
        unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    }
}

#[cfg(not(target_os = "linux"))]
fn reap_group(_pgid: i32) {}

/// `SIGKILL`s every registered group; returns how many were signalled.
pub(crate) fn kill_all() -> usize {
    let registered: Vec<i32> = groups().iter().flatten().copied().collect();
    let killed = registered.iter().filter(|&&g| super::signal_group(g, libc::SIGKILL)).count();
    sweep();
    killed
}

/// Forks the group guard; returns the worker's end of its socket.
#[cfg(target_os = "linux")]
fn start_guard() -> io::Result<i32> {
    let mut fds = [0; 2];
    // SAFETY: socketpair writes two fresh descriptors into the array.
    let rc = unsafe {
        libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr())
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let (worker_end, guard_end) = (fds[0], fds[1]);
    // Everything the guard needs is allocated before the fork: it must not allocate.
    let mut table = vec![0i32; GUARD_SLOTS];
    let dev_null = c"/dev/null";
    // SAFETY: fork has no preconditions; the child runs only `guard_main`.
    match unsafe { libc::fork() } {
        -1 => {
            let e = io::Error::last_os_error();
            // SAFETY: both descriptors are ours.
            unsafe {
                libc::close(worker_end);
                libc::close(guard_end);
            }
            Err(e)
        }
        0 => {
            // SAFETY: in the forked child; guard_main never returns.
            unsafe { guard_main(guard_end, &mut table, dev_null.as_ptr()) }
        }
        _ => {
            // SAFETY: the guard's end belongs to the guard now.
            unsafe { libc::close(guard_end) };
            drop(table);
            Ok(worker_end)
        }
    }
}

/// The guard process: reads group registrations until end of file, then kills every group.
///
/// # Safety
///
/// Only in the child of `fork`: it makes only async-signal-safe system calls, allocates
/// nothing and never returns.
#[cfg(target_os = "linux")]
unsafe fn guard_main(socket: i32, table: &mut [i32], dev_null: *const libc::c_char) -> ! {
    // SAFETY: async-signal-safe system calls on integers, the given buffers and a stack
    // buffer; the process ends with _exit.
    unsafe {
        libc::setpgid(0, 0);
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGPIPE, libc::SIGQUIT] {
            libc::signal(sig, libc::SIG_IGN);
        }
        // Hold nothing of the worker's: stdio to /dev/null, every other descriptor closed.
        let null = libc::open(dev_null, libc::O_RDWR);
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
        }
        if socket != 3 {
            libc::dup2(socket, 3);
        }
        if libc::syscall(libc::SYS_close_range, 4u32, u32::MAX, 0u32) != 0 {
            for fd in 4..65_536 {
                libc::close(fd);
            }
        }
        let socket = 3;
        let mut used = 0usize;
        let mut buf = [0u8; 4096];
        let mut have = 0usize;
        loop {
            let n = libc::read(socket, buf.as_mut_ptr().add(have).cast(), buf.len() - have);
            if n < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            if n <= 0 {
                break;
            }
            have += n as usize;
            let whole = have - have % 4;
            let mut i = 0;
            while i < whole {
                let g = i32::from_le_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
                if g > 1 {
                    if used < table.len() {
                        table[used] = g;
                        used += 1;
                    }
                } else if g < -1 {
                    let mut j = 0;
                    while j < used {
                        if table[j] == -g {
                            used -= 1;
                            table[j] = table[used];
                        } else {
                            j += 1;
                        }
                    }
                }
                i += 4;
            }
            buf.copy_within(whole..have, 0);
            have -= whole;
        }
        let mut j = 0;
        while j < used {
            libc::kill(-table[j], libc::SIGKILL);
            j += 1;
        }
        libc::_exit(0)
    }
}
