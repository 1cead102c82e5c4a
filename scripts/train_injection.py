"""Train the learned injection detector for the packaged MiniLM and ship its weights
(raglab/resources/injection_weights.npz), keyed by a hash of the training files, the model and C.

    python scripts/train_injection.py
"""
from __future__ import annotations

import numpy as np

from raglab.guards.detector import SHIPPED, InjectionDetector, save_weights, training_set


def main() -> None:
    detector = InjectionDetector()
    texts, labels, _ = training_set()
    weights = detector.train()
    save_weights(SHIPPED, weights, detector.fingerprint())
    detector._weights = weights
    p = detector.probabilities(texts)
    print(f"{SHIPPED}: {len(texts)} training sentences ({int(labels.sum())} injected); C = {detector.c}; "
          f"training accuracy at threshold {detector.threshold}: {np.mean((p >= detector.threshold) == labels):.3f}")


if __name__ == "__main__":
    main()
