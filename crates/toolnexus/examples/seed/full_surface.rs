// The target for `examples/full_surface.rs`, which is kept byte for byte as the
// documentation page shows it. Including it (rather than building it directly)
// keeps `cargo fmt` from rewriting the page's layout.
include!("../full_surface.rs");
