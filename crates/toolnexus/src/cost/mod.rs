//! What judgments cost (SPEC §19): caps on a run's spend.

pub mod budget;
