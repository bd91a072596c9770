//! The process's standard streams: never a panic over them.

/// A standard stream that was closed when we started (`>&-`) is opened on
/// `/dev/null`, so the first file the command opens cannot take its number
/// and receive what was meant for the terminal.
pub fn reopen_closed() {
    for fd in 0..=2 {
        // SAFETY: fcntl(F_GETFD) only asks whether the descriptor is open.
        let closed = unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1;
        if closed {
            let flags = if fd == 0 {
                libc::O_RDONLY
            } else {
                libc::O_WRONLY
            };
            // SAFETY: a NUL-terminated path; open returns the lowest free
            // descriptor, which is `fd` since the ones below it are open.
            let _ = unsafe { libc::open(c"/dev/null".as_ptr(), flags) };
        }
    }
}

/// SIGPIPE back to its default: a write to a closed pipe ends the process
/// quietly (status 141 in a shell) instead of returning EPIPE to a
/// `println!` that would panic. Sockets are unaffected (Rust sends with
/// MSG_NOSIGNAL), so HTTP clients still see their errors as errors.
pub fn default_sigpipe() {
    // SAFETY: setting a signal's disposition to SIG_DFL has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// What a panic said (its message, or `a panic`).
pub fn panic_text(info: &std::panic::PanicHookInfo<'_>) -> String {
    info.payload()
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| info.payload().downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_string())
}

/// A panic prints one line naming it as an internal error (exit 1), never
/// a backtrace banner, and never panics itself on a closed stderr.
pub fn panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let what = panic_text(info);
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        tell!("toolnexus: internal error: {what}{at} (a bug: please report it)");
    }));
}
