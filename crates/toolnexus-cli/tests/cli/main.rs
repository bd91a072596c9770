//! End-to-end tests of the toolnexus binary.
