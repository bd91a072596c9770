//! Calibration maps.
