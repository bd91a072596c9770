//! Simple judgments on top of the classifier: builders, bands, gates, policies and tapes.
