"""Guards the assistant is given: injection rules and the learned detector, calibration."""
