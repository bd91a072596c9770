//! Printing that never panics: `say!`, `put!` and `tell!`, the only way the
//! commands write to the standard streams (a closed stream drops the line).

/// `println!` that never panics: a closed stdout drops the line, nothing else.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `print!` that never panics.
macro_rules! put {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `eprintln!` that never panics: a closed stderr drops the line, nothing else.
macro_rules! tell {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}
