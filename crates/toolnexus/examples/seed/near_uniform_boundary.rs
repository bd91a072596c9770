// The target for `examples/near_uniform_boundary.rs`, which is kept byte for byte as the
// documentation page shows it. Including it (rather than building it directly)
// keeps `cargo fmt` from rewriting the page's layout.
include!("../near_uniform_boundary.rs");
