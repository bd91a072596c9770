// The target for `examples/smallest_call.rs`, which is kept byte for byte as the
// documentation page shows it. Including it (rather than building it directly)
// keeps `cargo fmt` from rewriting the page's layout.
include!("../smallest_call.rs");
