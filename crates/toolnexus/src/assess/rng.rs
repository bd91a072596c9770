//! A small seeded generator.
